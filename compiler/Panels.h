//===- Panels.h - A linear's weight as the panels its kernel reads -*- C++ -*-===//
//
// tfm-layout-weights stores the weight W [N, K] of a linear that our code
// runs as panels of P output features with K contiguous (P = 4 vectors):
//   panels[p, k, j] = W[p·P + j, k],  0 where p·P + j >= N.
// Whoever writes a weights file (tfmc, tfm-bench) packs with this; with
// --precision bf16 the panels hold bfloat16 (toBFloat16), pairs of vectors
// interleaved (featureOfInterleavedSlot).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_PANELS_H
#define TFM_COMPILER_PANELS_H

#include <cstdint>
#include <cstring>

namespace mlir::tfm {

/// Floats the panels of an [n, k] matrix take.
inline int64_t panelsSize(int64_t n, int64_t k, int64_t panel) {
  return (n + panel - 1) / panel * panel * k;
}

/// bf16 panels interleave each pair of vectors lane by lane, so that one
/// 32-bit lane holds feature i of vector 2g (low half) and of vector 2g + 1
/// (high half), and the kernel widens a pair with a shift and a mask: the
/// feature at slot s of a panel row of `panel` (4 vectors of L):
///   s = 2g·L + 2i + h  ->  feature (2g + h)·L + i.
inline int64_t featureOfInterleavedSlot(int64_t slot, int64_t panel) {
  int64_t lanes = panel / 4, pair = slot / (2 * lanes), r = slot % (2 * lanes);
  return (2 * pair + r % 2) * lanes + r / 2;
}

/// Writes the panels of the [n, k] matrix whose element (row, col) is
/// `element(row, col)` to `dst` (panelsSize elements of type T: float, or
/// uint16_t holding bf16 from toBFloat16, then with `interleavePairs`).
template <typename T, typename ElementFn>
void packPanels(int64_t n, int64_t k, int64_t panel, ElementFn element,
                T *dst, bool interleavePairs = false) {
  int64_t panels = (n + panel - 1) / panel;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t col = 0; col < k; ++col)
      for (int64_t j = 0; j < panel; ++j) {
        int64_t row =
            p * panel + (interleavePairs ? featureOfInterleavedSlot(j, panel) : j);
        *dst++ = row < n ? element(row, col) : T(0);
      }
}

/// The bfloat16 nearest to a finite `value` (ties to even): its top 16
/// bits after adding 0x7fff plus the lowest kept bit. The result is an
/// infinity only for |value| within half a bf16 step of FLT_MAX.
inline uint16_t toBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

/// The float a bfloat16 stands for (exact).
inline float fromBFloat16(uint16_t value) {
  uint32_t bits = uint32_t(value) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// The bf16 panels of an [n, k] matrix of floats `element(row, col)`:
/// rounded to nearest even, pairs of vectors interleaved.
template <typename ElementFn>
void packBf16Panels(int64_t n, int64_t k, int64_t panel, ElementFn element,
                    uint16_t *dst) {
  packPanels(
      n, k, panel,
      [&](int64_t row, int64_t col) { return toBFloat16(element(row, col)); },
      dst, /*interleavePairs=*/true);
}

} // namespace mlir::tfm

#endif // TFM_COMPILER_PANELS_H
