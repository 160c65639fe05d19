//===- Panels.h - A linear's weight as the panels its kernel reads -*- C++ -*-===//
//
// tfm-layout-weights stores the weight W [N, K] of a linear that our code
// runs as panels of P output features with K contiguous (P = 4 vectors):
//   panels[p, k, j] = W[p·P + j, k],  0 where p·P + j >= N.
// Whoever writes a weights file (tfmc, tfm-bench) packs with this.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_PANELS_H
#define TFM_COMPILER_PANELS_H

#include <cstdint>

namespace mlir::tfm {

/// Floats the panels of an [n, k] matrix take.
inline int64_t panelsSize(int64_t n, int64_t k, int64_t panel) {
  return (n + panel - 1) / panel * panel * k;
}

/// Writes the panels of the [n, k] matrix whose element (row, col) is
/// `element(row, col)` to `dst` (panelsSize floats).
template <typename ElementFn>
void packPanels(int64_t n, int64_t k, int64_t panel, ElementFn element,
                float *dst) {
  int64_t panels = (n + panel - 1) / panel;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t col = 0; col < k; ++col)
      for (int64_t j = 0; j < panel; ++j) {
        int64_t row = p * panel + j;
        *dst++ = row < n ? element(row, col) : 0.0f;
      }
}

} // namespace mlir::tfm

#endif // TFM_COMPILER_PANELS_H
