//===- OneDnnAbi.h - Calls from compiled code into oneDNN -------*- C++ -*-===//
//
// The contract between convert-tfm-to-onednn (which emits the calls) and
// runtime/src/onednn/ (EntryPoints.cpp implements them). Every tensor
// crosses as an unranked memref descriptor (`memref<*xf32>`, MLIR's C
// interface: `_mlir_ciface_<name>(UnrankedMemRefType<float> *, ...)`);
// scalars by value.
//
//   tfm_onednn_linear(x[.., K], w[N, K], bias[N], residual[.., N],
//                     out[.., N], i64 code)
//       out = act(x · wᵀ + bias) + residual; `code` = activation | flags.
//       oneDNN matmul; act and residual are post-ops (eltwise, sum). With
//       kBf16Products, x and w are rounded to bf16 (nearest even) and
//       their products summed in f32 (tfmc compile --precision bf16).
//       With kInt8Products, w quantized per output feature and x per row
//       (with a zero point) as tfm/abi/Panels.h and our panel kernel do,
//       integer products summed exactly, then scaled back
//       (tfmc compile --precision int8).
//   tfm_onednn_matmul(a, b, out, f32 alpha, i64 code)
//       out[b.., i, j] = alpha · sum_k A[b.., i, k] · B[b.., k, j], A/B
//       transposed in their two innermost dimensions by kTransposeLhs/Rhs;
//       alpha is an eltwise post-op.
//   tfm_onednn_layer_norm(x, residual, scale, shift, out, f32 eps, i64 code)
//       out = LN(x (+ residual)) (· scale) (+ shift) over the last axis.
//   tfm_onednn_softmax(x, out)              over the last axis
//   tfm_onednn_binary(a, b, out, i64 kind)  b broadcasts to a (NumPy rules)
//   tfm_onednn_eltwise(x, out, i64 kind, f32 alpha)
//
// An absent optional operand is passed as any memref; `code` says it is
// absent.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_ONEDNNABI_H
#define TFM_RUNTIME_ONEDNNABI_H

#include <cstdint>

namespace tfm_runtime {
namespace onednn {

// The low byte of a linear's code: its activation (tfm::Activation order).
enum Activation : int64_t {
  kNone = 0,
  kRelu = 1,
  kGelu = 2,
  kSilu = 3,
  kGeluTanh = 4
};
constexpr int64_t kActivationMask = 0xff;

// Which optional operands are present.
constexpr int64_t kHasBias = 1 << 8;
constexpr int64_t kHasResidual = 1 << 9;
constexpr int64_t kHasScale = 1 << 10;
constexpr int64_t kTransposeLhs = 1 << 11;
constexpr int64_t kTransposeRhs = 1 << 12;
constexpr int64_t kBf16Products = 1 << 13;
constexpr int64_t kInt8Products = 1 << 14;

enum Binary : int64_t { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3 };

// alpha is used by kLinear only (x · alpha).
enum Eltwise : int64_t {
  kEltRelu = 0,
  kEltGelu = 1,
  kEltSilu = 2,
  kEltSqrt = 3,
  kEltRsqrt = 4,
  kEltLinear = 5,
  kEltGeluTanh = 6
};

} // namespace onednn
} // namespace tfm_runtime

template <typename T> struct UnrankedMemRefType;

extern "C" {
void _mlir_ciface_tfm_onednn_linear(UnrankedMemRefType<float> *x,
                                    UnrankedMemRefType<float> *w,
                                    UnrankedMemRefType<float> *bias,
                                    UnrankedMemRefType<float> *residual,
                                    UnrankedMemRefType<float> *out,
                                    int64_t code);
void _mlir_ciface_tfm_onednn_matmul(UnrankedMemRefType<float> *a,
                                    UnrankedMemRefType<float> *b,
                                    UnrankedMemRefType<float> *out, float alpha,
                                    int64_t code);
void _mlir_ciface_tfm_onednn_layer_norm(UnrankedMemRefType<float> *x,
                                        UnrankedMemRefType<float> *residual,
                                        UnrankedMemRefType<float> *scale,
                                        UnrankedMemRefType<float> *shift,
                                        UnrankedMemRefType<float> *out,
                                        float epsilon, int64_t code);
void _mlir_ciface_tfm_onednn_softmax(UnrankedMemRefType<float> *x,
                                     UnrankedMemRefType<float> *out);
void _mlir_ciface_tfm_onednn_binary(UnrankedMemRefType<float> *a,
                                    UnrankedMemRefType<float> *b,
                                    UnrankedMemRefType<float> *out,
                                    int64_t kind);
void _mlir_ciface_tfm_onednn_eltwise(UnrankedMemRefType<float> *x,
                                     UnrankedMemRefType<float> *out,
                                     int64_t kind, float alpha);
}

namespace tfm_runtime {
namespace onednn {
/// Calls fn(symbol name, function) for each kernel: how a JIT (tfm-run,
/// tfm-bench) resolves the calls of code compiled with the oneDNN backend.
template <typename Fn> void forEachKernel(Fn fn) {
  fn("_mlir_ciface_tfm_onednn_linear", &_mlir_ciface_tfm_onednn_linear);
  fn("_mlir_ciface_tfm_onednn_matmul", &_mlir_ciface_tfm_onednn_matmul);
  fn("_mlir_ciface_tfm_onednn_layer_norm", &_mlir_ciface_tfm_onednn_layer_norm);
  fn("_mlir_ciface_tfm_onednn_softmax", &_mlir_ciface_tfm_onednn_softmax);
  fn("_mlir_ciface_tfm_onednn_binary", &_mlir_ciface_tfm_onednn_binary);
  fn("_mlir_ciface_tfm_onednn_eltwise", &_mlir_ciface_tfm_onednn_eltwise);
}
} // namespace onednn
} // namespace tfm_runtime

#endif // TFM_RUNTIME_ONEDNNABI_H
