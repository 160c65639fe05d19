//===- Panels.h - A linear's weight as the panels its kernel reads -*- C++ -*-===//
//
// tfm-layout-weights stores the weight W [N, K] of a linear that our code
// runs as panels of P output features with K contiguous (P = 4 vectors):
//   panels[p, k, j] = W[p·P + j, k],  0 where p·P + j >= N.
// With --precision bf16 the panels hold bfloat16 (toBFloat16) and pair K:
// each row of a panel holds two k for every feature (packBf16Panels), the
// operand layout of AVX512-BF16's dot product.
// Whoever writes a weights file (tfmc, tfm-bench) packs with this.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_PANELS_H
#define TFM_COMPILER_PANELS_H

#include <cstdint>
#include <cstring>

namespace mlir::tfm {

/// Elements the panels of an [n, k] matrix take: f32 panels hold every k,
/// bf16 ones k rounded up to even (a zero pads an odd k's last pair).
inline int64_t panelsSize(int64_t n, int64_t k, int64_t panel,
                          bool pairK = false) {
  if (pairK)
    k += k % 2;
  return (n + panel - 1) / panel * panel * k;
}

/// Writes the panels of the [n, k] matrix whose element (row, col) is
/// `element(row, col)` to `dst` (panelsSize elements of type T).
template <typename T, typename ElementFn>
void packPanels(int64_t n, int64_t k, int64_t panel, ElementFn element,
                T *dst) {
  int64_t panels = (n + panel - 1) / panel;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t col = 0; col < k; ++col)
      for (int64_t j = 0; j < panel; ++j) {
        int64_t row = p * panel + j;
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

/// The bf16 panels of an [n, k] matrix of floats `element(row, col)`,
/// rounded to nearest even, with k in pairs: row q of panel p holds, for
/// each of its P features j, the 32-bit word (low half first)
///   panels[p, q, 2j + h] = bf16(W[p·P + j, 2q + h]),  h = 0, 1
/// (0 past n or k). A vector of L such words is what `vdpbf16ps` takes
/// (L features, two k each); without AVX512-BF16 the kernel widens it by a
/// shift (h = 0) and a mask (h = 1).
template <typename ElementFn>
void packBf16Panels(int64_t n, int64_t k, int64_t panel, ElementFn element,
                    uint16_t *dst) {
  int64_t panels = (n + panel - 1) / panel;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t col = 0; col < k; col += 2)
      for (int64_t j = 0; j < panel; ++j)
        for (int64_t h = 0; h < 2; ++h) {
          int64_t row = p * panel + j;
          *dst++ = row < n && col + h < k ? toBFloat16(element(row, col + h))
                                          : uint16_t(0);
        }
}

} // namespace mlir::tfm

#endif // TFM_COMPILER_PANELS_H
