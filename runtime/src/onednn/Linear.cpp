//===- Linear.cpp - Linear layers: f32, bf16 and int8 -----------*- C++ -*-===//
//
// out = act(x·Wᵀ + b) + r. At f32 and bf16 one oneDNN matmul with post-ops
// over the weights in its layout (Weights.h); at int8 oneDNN's integer
// product between our quantization of the rows and our epilogue
// (Int8Rows.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/Kernels.h"

#include "runtime/src/onednn/Int8Rows.h"
#include "runtime/src/onednn/PrimitiveCache.h"
#include "runtime/src/onednn/Weights.h"
#include "tfm/abi/OneDnnAbi.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

namespace tfm_runtime {
namespace onednn {
namespace {

algorithm activationAlgorithm(int64_t activation) {
  switch (activation) {
  case kRelu:
    return algorithm::eltwise_relu;
  case kGelu:
    return algorithm::eltwise_gelu_erf;
  case kSilu:
    return algorithm::eltwise_swish; // x · sigmoid(alpha · x), alpha = 1
  case kGeluTanh:
    return algorithm::eltwise_gelu_tanh;
  default:
    return algorithm::undef;
  }
}

/// A buffer kept between calls (the calls come one at a time from the
/// compiled code's thread), grown when too small and never cleared; `slot`
/// picks one of the buffers of type T.
template <typename T> T *scratch(int slot, int64_t count) {
  struct Buffer {
    std::unique_ptr<T[]> data;
    int64_t size = 0;
  };
  thread_local Buffer buffers[2];
  Buffer &b = buffers[slot];
  if (b.size < count) {
    b.data.reset(new T[count]);
    b.size = count;
  }
  return b.data.get();
}

/// y = act(y) in place over a row, as the reference computes it.
void activateRow(float *y, int64_t n, int64_t activation) {
  switch (activation) {
  case kRelu:
    for (int64_t j = 0; j < n; ++j)
      y[j] = y[j] > 0 ? y[j] : 0.f;
    break;
  case kGelu: // y · Φ(y)
    for (int64_t j = 0; j < n; ++j)
      y[j] = 0.5f * y[j] * (1.f + std::erf(y[j] * 0.70710678118654752f));
    break;
  case kSilu: // y · sigmoid(y)
    for (int64_t j = 0; j < n; ++j)
      y[j] = y[j] / (1.f + std::exp(-y[j]));
    break;
  case kGeluTanh: // y/2 · (1 + tanh(sqrt(2/π) · (y + 0.044715 y³)))
    for (int64_t j = 0; j < n; ++j)
      y[j] = 0.5f * y[j] *
             (1.f + std::tanh(0.7978845608028654f *
                              (y[j] + 0.044715f * y[j] * y[j] * y[j])));
    break;
  default:
    break;
  }
}

/// out = act(x·Wᵀ + b) + r in --precision int8's arithmetic (reference.py,
/// the same as our panel kernel's): each row of x quantized over its range
/// extended to 0,
///   lo = min(x[m, :], 0), hi = max(x[m, :], 0), r = hi − lo (255 if 0)
///   inverse = (1 / r) · 255, s_x[m] = r / 255
///   z[m] = round_even(−lo · inverse)
///   u[m, k] = clamp(round_even(x[m, k] · inverse) + z[m], 0, 255)
/// oneDNN's u8 x s8 matmul sums u · q_W exactly in s32 (acc), and here
///   y[m, n] = (f32(acc[m, n] − z[m] · Σ_k q_W[n, k]) · s_x[m]) · s_W[n] + b[n]
/// then act and the residual. oneDNN 2.6 takes one zero point per tensor
/// and scales per output column only, so the epilogue is ours; f32
/// operations are not contracted into FMAs in this library (CMakeLists.txt),
/// which would round differently from the reference. Both loops run on
/// this thread: oneDNN's threads are GNU OpenMP's, the compiled code's
/// LLVM's, and a third pool would spin against them.
void int8Linear(const View &rows, const View &w, const Memref *biasm,
                const Memref *residualm, const View &out, int64_t code) {
  int64_t m = rows.dims[0], k = rows.dims[1], n = w.dims[0];
  const QuantizedWeights &weights = quantizedWeights(w);
  uint8_t *u = scratch<uint8_t>(0, m * k);
  int32_t *acc = scratch<int32_t>(0, m * n);
  int32_t *zeros = scratch<int32_t>(1, m);
  float *rowScales = scratch<float>(0, m);
  quantizeRows(rows.data, m, k, u, zeros, rowScales);

  memory::desc src({m, k}, memory::data_type::u8, memory::format_tag::ab);
  memory::desc sums({m, n}, memory::data_type::s32, memory::format_tag::ab);
  primitive &matmul =
      cachedPrimitive(keyOf(PrimitiveKind::Int8Product, {{m, k, n}}), [&] {
        return dnnl::matmul(dnnl::matmul::primitive_desc(
            dnnl::matmul::desc(src, weights.integers.desc, sums), cpuEngine()));
      });
  matmul.execute(cpuStream(), {{DNNL_ARG_SRC, memory(src, cpuEngine(), u)},
                               {DNNL_ARG_WEIGHTS, weights.integers.packed},
                               {DNNL_ARG_DST, memory(sums, cpuEngine(), acc)}});

  std::vector<float> biasScratch, residualScratch;
  const float *bias =
      code & kHasBias ? dense(View(biasm), biasScratch).data : nullptr;
  const float *residual = nullptr;
  if (code & kHasResidual) {
    View r(residualm);
    r.dims = out.dims;
    residual = dense(r, residualScratch).data;
  }
  for (int64_t i = 0; i < m; ++i) {
    float *y = out.data + i * n;
    scaleBack(y, acc + i * n, n, zeros[i], rowScales[i], weights.scales.data(),
              weights.sums.data(), bias);
    activateRow(y, n, code & kActivationMask);
    if (residual)
      addRow(y, residual + i * n, n);
  }
}

} // namespace

void linear(const Memref *xm, const Memref *wm, const Memref *biasm,
            const Memref *residualm, const Memref *outm, int64_t code) {
  View x(xm), w(wm), out(outm);
  std::vector<float> scratch;
  View rows = denseRows(x, scratch);
  if (code & kInt8Products)
    return int8Linear(rows, w, biasm, residualm, out, code);
  int64_t m = rows.dims[0], k = rows.dims[1], n = w.dims[0];
  // bf16: the products of x and w rounded to bf16 are exact in f32, only
  // their sums round (as in our bf16 kernel and the reference).
  memory::data_type productType =
      code & kBf16Products ? memory::data_type::bf16 : memory::data_type::f32;
  memory::desc src({m, k}, productType, memory::format_tag::ab);
  memory::desc dst({m, n}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc bias({1, n}, memory::data_type::f32, memory::format_tag::ab);
  const PackedWeights &weights = packedWeights(w, productType);
  bool hasBias = code & kHasBias, hasResidual = code & kHasResidual;

  // dst = act(x·W + b) + dst, with the residual copied into dst first.
  primitive &matmul = cachedPrimitive(
      keyOf(PrimitiveKind::Linear, {{m, k, n}},
            code & (kActivationMask | kHasBias | kHasResidual | kBf16Products)),
      [&] {
        dnnl::post_ops postOps;
        algorithm act = activationAlgorithm(code & kActivationMask);
        if (act != algorithm::undef)
          postOps.append_eltwise(
              1.f, act, act == algorithm::eltwise_swish ? 1.f : 0.f, 0.f);
        if (hasResidual)
          postOps.append_sum(1.f);
        dnnl::primitive_attr attr;
        attr.set_post_ops(postOps);
        auto desc = hasBias ? dnnl::matmul::desc(src, weights.desc, bias, dst)
                            : dnnl::matmul::desc(src, weights.desc, dst);
        return dnnl::matmul(
            dnnl::matmul::primitive_desc(desc, attr, cpuEngine()));
      });
  if (hasResidual) {
    View residual(residualm);
    residual.dims = out.dims;
    if (isDense(residual))
      std::memcpy(out.data, residual.data, sizeof(float) * m * n);
    else
      copyDense(residual, out.data);
  }
  memory source = rows.mem(
      memory::desc({m, k}, memory::data_type::f32, memory::format_tag::ab));
  if (productType == memory::data_type::bf16) {
    // x rounded to bf16 once per call, by a reorder (nearest even).
    memory rounded(src, cpuEngine());
    primitive &round =
        cachedPrimitive(keyOf(PrimitiveKind::RoundBf16, {{m, k}}),
                        [&] { return dnnl::reorder(source, rounded); });
    round.execute(cpuStream(),
                  {{DNNL_ARG_FROM, source}, {DNNL_ARG_TO, rounded}});
    source = rounded;
  }
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, source},
                                          {DNNL_ARG_WEIGHTS, weights.packed},
                                          {DNNL_ARG_DST, out.mem(dst)}};
  std::vector<float> biasScratch;
  if (hasBias)
    args.emplace(DNNL_ARG_BIAS, dense(View(biasm), biasScratch).mem(bias));
  matmul.execute(cpuStream(), args);
}

} // namespace onednn
} // namespace tfm_runtime
