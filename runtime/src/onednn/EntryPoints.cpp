//===- EntryPoints.cpp - The oneDNN calls of compiled models ----*- C++ -*-===//
//
// What convert-tfm-to-onednn's calls run (the contract: OneDnnAbi.h). Each
// primitive is created once per shape and layout and kept
// (PrimitiveCache.h); each weight matrix is reordered once, on first use,
// into the layout oneDNN's matmul prefers, and kept (Weights.h). oneDNN's
// C++ API throws: errors are caught here, at the boundary with compiled
// code, and end the process with a message (the compiled code has no way to
// unwind).
//
//===----------------------------------------------------------------------===//

#include "tfm/abi/OneDnnAbi.h"

#include "runtime/src/onednn/Kernels.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

using namespace tfm_runtime::onednn;

namespace {

[[noreturn]] void fail(const char *kernel, const std::string &message) {
  fmt::print(stderr, "tfm runtime: {} (oneDNN) failed: {}\n", kernel, message);
  std::abort();
}

template <typename Fn> void guarded(const char *kernel, Fn fn) {
  try {
    fn();
    cpuStream().wait();
  } catch (const dnnl::error &e) {
    fail(kernel, e.what());
  } catch (const std::exception &e) {
    fail(kernel, e.what());
  }
}

} // namespace

extern "C" {

void _mlir_ciface_tfm_onednn_linear(Memref *x, Memref *w, Memref *bias,
                                    Memref *residual, Memref *out,
                                    int64_t code) {
  guarded("linear", [&] { linear(x, w, bias, residual, out, code); });
}

void _mlir_ciface_tfm_onednn_matmul(Memref *a, Memref *b, Memref *out,
                                    float alpha, int64_t code) {
  guarded("matmul", [&] { matmul(a, b, out, alpha, code); });
}

void _mlir_ciface_tfm_onednn_layer_norm(Memref *x, Memref *residual,
                                        Memref *scale, Memref *shift,
                                        Memref *out, float epsilon,
                                        int64_t code) {
  guarded("layer_norm",
          [&] { layerNorm(x, residual, scale, shift, out, epsilon, code); });
}

void _mlir_ciface_tfm_onednn_softmax(Memref *x, Memref *out) {
  guarded("softmax", [&] { softmax(x, out); });
}

void _mlir_ciface_tfm_onednn_binary(Memref *a, Memref *b, Memref *out,
                                    int64_t kind) {
  guarded("binary", [&] { binary(View(a), View(b), View(out), kind); });
}

void _mlir_ciface_tfm_onednn_eltwise(Memref *x, Memref *out, int64_t kind,
                                     float alpha) {
  guarded("eltwise", [&] { eltwise(x, out, kind, alpha); });
}

} // extern "C"
