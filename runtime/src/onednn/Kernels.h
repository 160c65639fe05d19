//===- Kernels.h - The oneDNN kernels of compiled models --------*- C++ -*-===//
//
// One function per call of tfm/abi/OneDnnAbi.h (which says what each
// computes); EntryPoints.cpp wraps them for the compiled code. Each throws
// oneDNN's errors.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_ONEDNN_KERNELS_H
#define TFM_RUNTIME_ONEDNN_KERNELS_H

#include "runtime/src/onednn/Tensors.h"

#include <cstdint>
#include <utility>

namespace tfm_runtime {
namespace onednn {

// Linear.cpp
void linear(const Memref *xm, const Memref *wm, const Memref *biasm,
            const Memref *residualm, const Memref *outm, int64_t code);
// Matmul.cpp
void matmul(const Memref *am, const Memref *bm, const Memref *outm, float alpha,
            int64_t code);
// Elementwise.cpp
/// out = a op b, b broadcast to a's shape (leading axes of size 1 added).
void binary(const View &a, View b, const View &out, int64_t kind);
void eltwise(const Memref *xm, const Memref *outm, int64_t kind, float alpha);
/// The [rows, last] source and destination of a row-wise primitive whose
/// source and destination share one layout: `x` itself if it is dense,
/// else (or with a residual to add first) `out` filled with x (+ residual),
/// for the primitive to run in place.
std::pair<View, View> rowsOf(const View &x, const Memref *residualm,
                             bool hasResidual, const View &out);
// Normalization.cpp
void layerNorm(const Memref *xm, const Memref *residualm, const Memref *scalem,
               const Memref *shiftm, const Memref *outm, float epsilon,
               int64_t code);
void softmax(const Memref *xm, const Memref *outm);

} // namespace onednn
} // namespace tfm_runtime

#endif // TFM_RUNTIME_ONEDNN_KERNELS_H
