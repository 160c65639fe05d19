//===- Int8Rows.cpp - The int8 linear's row loops ---------------*- C++ -*-===//
//
// f32 operations are not contracted into FMAs in this library
// (runtime/CMakeLists.txt), which would round differently from the
// reference.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/Int8Rows.h"

#include <algorithm>

namespace tfm_runtime {
namespace onednn {
namespace {

/// round_even(v) for |v| < 2^22 under the default rounding mode: adding
/// 1.5 · 2^23 leaves no fraction bits, so the sum is rounded to an integer
/// (ties to even) and the subtraction is exact. Plain f32 arithmetic, which
/// vectorizes on any x86-64, where nearbyintf is a library call without
/// SSE4.1.
inline float roundEven(float v) {
  constexpr float kMagic = 12582912.f;
  return (v + kMagic) - kMagic;
}

} // namespace

TFM_HOST_CLONES void quantizeRows(const float *rows, int64_t m, int64_t k,
                                  uint8_t *u, int32_t *zeros,
                                  float *rowScales) {
  for (int64_t i = 0; i < m; ++i) {
    const float *x = rows + i * k;
    // lo and hi in 16 lanes (vectorized), then across them.
    float lanesLo[16] = {}, lanesHi[16] = {};
    int64_t j = 0;
    for (; j + 16 <= k; j += 16)
      for (int l = 0; l < 16; ++l) {
        lanesLo[l] = x[j + l] < lanesLo[l] ? x[j + l] : lanesLo[l];
        lanesHi[l] = x[j + l] > lanesHi[l] ? x[j + l] : lanesHi[l];
      }
    for (; j < k; ++j) {
      lanesLo[0] = std::min(lanesLo[0], x[j]);
      lanesHi[0] = std::max(lanesHi[0], x[j]);
    }
    float lo = *std::min_element(lanesLo, lanesLo + 16);
    float hi = *std::max_element(lanesHi, lanesHi + 16);
    float range = hi - lo > 0 ? hi - lo : 255.f;
    float inverse = (1.f / range) * 255.f;
    float zero = roundEven(-lo * inverse);
    for (j = 0; j < k; ++j) {
      float q = roundEven(x[j] * inverse) + zero;
      q = q < 0.f ? 0.f : q > 255.f ? 255.f : q;
      u[i * k + j] = static_cast<uint8_t>(static_cast<int32_t>(q));
    }
    zeros[i] = static_cast<int32_t>(zero);
    rowScales[i] = range / 255.f;
  }
}

TFM_HOST_CLONES void scaleBack(float *y, const int32_t *acc, int64_t n,
                               int32_t zero, float rowScale,
                               const float *scales, const int32_t *sums,
                               const float *bias) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = static_cast<float>(acc[j] - zero * sums[j]) * rowScale * scales[j];
  if (bias)
    for (int64_t j = 0; j < n; ++j)
      y[j] += bias[j];
}

TFM_HOST_CLONES void addRow(float *y, const float *r, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    y[j] += r[j];
}

} // namespace onednn
} // namespace tfm_runtime
