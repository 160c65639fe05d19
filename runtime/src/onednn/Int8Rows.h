//===- Int8Rows.h - The int8 linear's row loops -----------------*- C++ -*-===//
//
// The int8 linear's own arithmetic around oneDNN's integer product
// (Linear.cpp's int8Linear says how): its rows quantized, and the product
// scaled back. Built for any x86-64, with copies for AVX-512 and AVX2, the
// host's chosen when the library loads.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_ONEDNN_INT8ROWS_H
#define TFM_RUNTIME_ONEDNN_INT8ROWS_H

#include <cstdint>

namespace tfm_runtime {
namespace onednn {

// The int8 linear's loops over rows, also compiled for AVX-512 and AVX2
// (the host's version chosen when the library loads; it is built for any
// x86-64).
#define TFM_HOST_CLONES                                                        \
  [[gnu::target_clones("arch=x86-64-v4", "avx2", "default")]]

/// u, z and s_x of x's m rows of k (int8Linear says how).
TFM_HOST_CLONES void quantizeRows(const float *rows, int64_t m, int64_t k,
                                  uint8_t *u, int32_t *zeros, float *rowScales);

/// y = (f32(acc − z · sums) · s_x) · scales (+ bias) over a row of n.
TFM_HOST_CLONES void scaleBack(float *y, const int32_t *acc, int64_t n,
                               int32_t zero, float rowScale,
                               const float *scales, const int32_t *sums,
                               const float *bias);

/// y += r over a row of n.
TFM_HOST_CLONES void addRow(float *y, const float *r, int64_t n);

} // namespace onednn
} // namespace tfm_runtime

#endif // TFM_RUNTIME_ONEDNN_INT8ROWS_H
