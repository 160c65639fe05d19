//===- Elementwise.cpp - Elementwise kernels --------------------*- C++ -*-===//
//
// a op b with NumPy broadcasting, and f(x) for the activations, square
// roots and scalings convert-tfm-to-onednn sends here.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/Kernels.h"

#include "runtime/src/onednn/PrimitiveCache.h"
#include "tfm/abi/OneDnnAbi.h"

#include <cstring>

namespace tfm_runtime {
namespace onednn {
namespace {

algorithm binaryAlgorithm(int64_t kind) {
  switch (kind) {
  case kAdd:
    return algorithm::binary_add;
  case kSub:
    return algorithm::binary_sub;
  case kMul:
    return algorithm::binary_mul;
  default:
    return algorithm::binary_div;
  }
}

} // namespace

void binary(const View &a, View b, const View &out, int64_t kind) {
  while (b.rank() < a.rank()) {
    b.dims.insert(b.dims.begin(), 1);
    b.strides.insert(b.strides.begin(), 0);
  }
  // oneDNN reads a broadcast axis as size 1 with any stride.
  for (int64_t d = 0; d < b.rank(); ++d)
    if (b.dims[d] == 1)
      b.strides[d] = d + 1 < b.rank() ? b.strides[d + 1] * b.dims[d + 1] : 1;
  primitive &op = cachedPrimitive(
      keyOf(PrimitiveKind::Binary,
            {a.dims, a.strides, b.dims, b.strides, out.strides}, kind),
      [&] {
        return dnnl::binary(dnnl::binary::primitive_desc(
            dnnl::binary::desc(binaryAlgorithm(kind), a.desc(), b.desc(),
                               out.desc()),
            cpuEngine()));
      });
  op.execute(cpuStream(), {{DNNL_ARG_SRC_0, a.mem(a.desc())},
                           {DNNL_ARG_SRC_1, b.mem(b.desc())},
                           {DNNL_ARG_DST, out.mem(out.desc())}});
}

std::pair<View, View> rowsOf(const View &x, const Memref *residualm,
                             bool hasResidual, const View &out) {
  View rows = out;
  rows.dims = {elementsOf(out) / out.last(), out.last()};
  rows.strides = {out.last(), 1};
  View src = rows;
  if (hasResidual)
    binary(x, View(residualm), out, kAdd);
  else if (isDense(x))
    src.data = x.data;
  else
    copyDense(x, out.data);
  return {src, rows};
}

void eltwise(const Memref *xm, const Memref *outm, int64_t kind, float alpha) {
  View x(xm), out(outm);
  std::pair<View, View> io = rowsOf(x, nullptr, false, out);
  const View &src = io.first, &rows = io.second;
  algorithm alg;
  float a = 0.f, b = 0.f;
  switch (kind) {
  case kEltRelu:
    alg = algorithm::eltwise_relu;
    break;
  case kEltGelu:
    alg = algorithm::eltwise_gelu_erf;
    break;
  case kEltGeluTanh:
    alg = algorithm::eltwise_gelu_tanh;
    break;
  case kEltSilu:
    alg = algorithm::eltwise_swish, a = 1.f;
    break;
  case kEltSqrt:
    alg = algorithm::eltwise_sqrt;
    break;
  case kEltRsqrt: // alpha · x^beta
    alg = algorithm::eltwise_pow, a = 1.f, b = -0.5f;
    break;
  default: // alpha · x + beta
    alg = algorithm::eltwise_linear, a = alpha;
    break;
  }
  int32_t alphaBits;
  std::memcpy(&alphaBits, &a, sizeof alphaBits);
  primitive &op = cachedPrimitive(
      keyOf(PrimitiveKind::Eltwise, {rows.dims},
            kind | (int64_t(alphaBits) << 8)),
      [&] {
        return dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(
            dnnl::eltwise_forward::desc(prop_kind::forward_inference, alg,
                                        rows.desc(), a, b),
            cpuEngine()));
      });
  op.execute(cpuStream(), {{DNNL_ARG_SRC, src.mem(rows.desc())},
                           {DNNL_ARG_DST, rows.mem(rows.desc())}});
}

} // namespace onednn
} // namespace tfm_runtime
