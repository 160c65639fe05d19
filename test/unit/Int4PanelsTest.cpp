//===- Int4PanelsTest.cpp - int4 weights in the kernels' panels -*- C++ -*-===//
//
// packInt4Panels (tfm/abi/Panels.h) against its definition, read back
// byte by byte: which nibble holds which k of which feature, the groups'
// scales after each panel, the corrections after all panels, a short last
// group, the padding past N and K (integers 0, scale 1), and the
// quantization's error bound (half a step of the group's scale).
//
//===----------------------------------------------------------------------===//

#include "tfm/abi/Panels.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <vector>

using namespace tfm_runtime;

namespace {

constexpr int64_t kPanel = 4;

/// A matrix of floats whose groups differ in scale: row r, column c.
float weight(int64_t row, int64_t col) {
  return std::sin(0.37f * float(row * 131 + col)) *
         float(1 + col / kInt4Group) *
         (row == 2 ? 0.0f : 1.0f); // row 2 all zero
}

/// The packed bytes of an [n, k] matrix of weight().
std::vector<uint8_t> pack(int64_t n, int64_t k) {
  std::vector<uint8_t> bytes(int4PanelsBytes(n, k, kPanel));
  packInt4Panels(n, k, kPanel, weight, bytes.data());
  return bytes;
}

/// The integer the panels hold for feature `row`, column `col`, decoded
/// from the layout's definition.
int integerAt(const std::vector<uint8_t> &bytes, int64_t k, int64_t row,
              int64_t col) {
  int64_t p = row / kPanel, j = row % kPanel, r = col / 8, h = col % 4;
  const uint8_t *panel = bytes.data() + p * int4PanelBytes(k, kPanel);
  uint8_t byte = panel[(r * kPanel + j) * 4 + h];
  int nibble = col % 8 < 4 ? byte & 0xf : byte >> 4;
  return nibble - 8;
}

float scaleAt(const std::vector<uint8_t> &bytes, int64_t k, int64_t row,
              int64_t group) {
  int64_t p = row / kPanel, j = row % kPanel;
  const uint8_t *panel = bytes.data() + p * int4PanelBytes(k, kPanel);
  float scale;
  std::memcpy(&scale,
              panel + int4PanelRows(k) * 4 * kPanel + (group * kPanel + j) * 4,
              4);
  return scale;
}

float correctionAt(const std::vector<uint8_t> &bytes, int64_t n, int64_t k,
                   int64_t row) {
  int64_t panels = (n + kPanel - 1) / kPanel;
  float c;
  std::memcpy(&c, bytes.data() + panels * int4PanelBytes(k, kPanel) + 4 * row,
              4);
  return c;
}

} // namespace

TEST(Int4Panels, Sizes) {
  EXPECT_EQ(int4Groups(64), 1);
  EXPECT_EQ(int4Groups(65), 2);
  EXPECT_EQ(int4PanelRows(72), 16); // two whole groups of 8 rows
  // 16 rows of words and 2 rows of scales, P words each; then P
  // corrections per panel.
  EXPECT_EQ(int4PanelBytes(72, kPanel), (16 + 2) * 4 * kPanel);
  EXPECT_EQ(int4PanelsBytes(5, 72, kPanel),
            2 * ((16 + 2) * 4 * kPanel + 4 * kPanel));
}

TEST(Int4Panels, EveryIntegerAndScaleWhereTheLayoutSays) {
  const int64_t n = 5, k = 72; // a short last group, a padded panel
  std::vector<uint8_t> bytes = pack(n, k);
  for (int64_t row = 0; row < 8; ++row) {
    float correction = 0;
    for (int64_t g = 0; g < int4Groups(k); ++g) {
      int64_t first = g * kInt4Group, last = std::min(k, first + kInt4Group);
      float amax = 0;
      for (int64_t col = first; row < n && col < last; ++col)
        amax = std::max(amax, std::fabs(weight(row, col)));
      float scale = scaleAt(bytes, k, row, g);
      EXPECT_EQ(scale, amax > 0 ? amax / 7 : 1.0f) << row << " " << g;
      int sum = 0;
      for (int64_t col = first; col < first + kInt4Group; ++col) {
        int q = integerAt(bytes, k, row, col);
        sum += q;
        if (row >= n || col >= k) {
          EXPECT_EQ(q, 0) << "padding at " << row << ", " << col;
          continue;
        }
        EXPECT_GE(q, -7);
        EXPECT_LE(q, 7);
        // Round to nearest: within half a step (and a rounding of f32).
        EXPECT_LE(std::fabs(q * scale - weight(row, col)),
                  0.5f * scale * (1 + 1e-5f))
            << row << ", " << col;
      }
      float term = scale * float(sum);
      correction = correction + term;
    }
    EXPECT_EQ(correctionAt(bytes, n, k, row), correction) << row;
  }
}

TEST(Int4Panels, LowNibblesAreAQuadHighNibblesTheNext) {
  // One feature whose integers count up: column c holds c - 7 (all in
  // [-7, 7] with a group maximum of 7, so the scale is 1).
  auto ramp = [](int64_t, int64_t col) { return float(col % 15) - 7; };
  std::vector<uint8_t> bytes(int4PanelsBytes(1, 64, kPanel));
  packInt4Panels(1, 64, kPanel, ramp, bytes.data());
  // Row 0, feature 0: bytes 0..3 hold k 0..3 (low) and 4..7 (high).
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(bytes[h] & 0xf, h - 7 + 8);
    EXPECT_EQ(bytes[h] >> 4, h + 4 - 7 + 8);
  }
  // Row 1 starts after the P words of row 0.
  EXPECT_EQ(bytes[4 * kPanel] & 0xf, 8 - 7 + 8);
}
