//===- Normalization.cpp - Layer normalization and softmax ------*- C++ -*-===//
//
// Both over the last axis, in place in `out` (rowsOf).
//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/Kernels.h"

#include "runtime/src/onednn/PrimitiveCache.h"
#include "tfm/abi/OneDnnAbi.h"

#include <cstring>
#include <unordered_map>
#include <vector>

namespace tfm_runtime {
namespace onednn {

void layerNorm(const Memref *xm, const Memref *residualm, const Memref *scalem,
               const Memref *shiftm, const Memref *outm, float epsilon,
               int64_t code) {
  View x(xm), out(outm);
  std::pair<View, View> io = rowsOf(x, residualm, code & kHasResidual, out);
  const View &src = io.first, &rows = io.second;
  bool hasScale = code & kHasScale, hasShift = code & kHasBias;
  auto flags = dnnl::normalization_flags::none;
  if (hasScale)
    flags |= dnnl::normalization_flags::use_scale;
  if (hasShift)
    flags |= dnnl::normalization_flags::use_shift;
  int32_t epsilonBits;
  std::memcpy(&epsilonBits, &epsilon, sizeof epsilonBits);
  primitive &norm = cachedPrimitive(
      keyOf(PrimitiveKind::LayerNorm, {rows.dims},
            (code & (kHasScale | kHasBias)) | (int64_t(epsilonBits) << 16)),
      [&] {
        return dnnl::layer_normalization_forward(
            dnnl::layer_normalization_forward::primitive_desc(
                dnnl::layer_normalization_forward::desc(
                    prop_kind::forward_inference, rows.desc(), epsilon, flags),
                cpuEngine()));
      });
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src.mem(rows.desc())},
      {DNNL_ARG_DST, rows.mem(rows.desc())}};
  memory::desc channels({rows.last()}, memory::data_type::f32,
                        memory::format_tag::a);
  std::vector<float> scaleScratch, shiftScratch;
  if (hasScale)
    args.emplace(DNNL_ARG_SCALE,
                 dense(View(scalem), scaleScratch).mem(channels));
  if (hasShift)
    args.emplace(DNNL_ARG_SHIFT,
                 dense(View(shiftm), shiftScratch).mem(channels));
  norm.execute(cpuStream(), args);
}

void softmax(const Memref *xm, const Memref *outm) {
  View x(xm), out(outm);
  std::pair<View, View> io = rowsOf(x, nullptr, false, out);
  const View &src = io.first, &rows = io.second;
  primitive &op =
      cachedPrimitive(keyOf(PrimitiveKind::Softmax, {rows.dims}), [&] {
        return dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
            dnnl::softmax_forward::desc(prop_kind::forward_inference,
                                        rows.desc(), 1),
            cpuEngine()));
      });
  op.execute(cpuStream(), {{DNNL_ARG_SRC, src.mem(rows.desc())},
                           {DNNL_ARG_DST, rows.mem(rows.desc())}});
}

} // namespace onednn
} // namespace tfm_runtime
