//===- Int4PanelsTest.cpp - int4 weights in the kernels' panels -*- C++ -*-===//
//
// packInt4Panels (tfm/abi/Panels.h) against its definition, read back
// byte by byte: which nibble holds which k of which feature, the groups'
// words of scale and zero point after each panel, the corrections after
// all panels, a short last group, the padding past N and K (integers 0,
// scale 1), and the quantization's error bound (half a step of the
// group's f32 scale, and the rounding of the scale to a bfloat16).
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

/// The word of scale and zero point of feature `row`'s group `group`.
uint32_t groupWordAt(const std::vector<uint8_t> &bytes, int64_t k, int64_t row,
                     int64_t group) {
  int64_t p = row / kPanel, j = row % kPanel;
  const uint8_t *panel = bytes.data() + p * int4PanelBytes(k, kPanel);
  uint32_t word;
  std::memcpy(&word,
              panel + int4PanelRows(k) * 4 * kPanel + (group * kPanel + j) * 4,
              4);
  return word;
}

/// The scale: the word's high half, a bfloat16.
float scaleAt(const std::vector<uint8_t> &bytes, int64_t k, int64_t row,
              int64_t group) {
  uint32_t bits = groupWordAt(bytes, k, row, group) & 0xffff0000u;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return scale;
}

/// The zero point: each of the word's two low bytes.
int zeroAt(const std::vector<uint8_t> &bytes, int64_t k, int64_t row,
           int64_t group) {
  uint32_t word = groupWordAt(bytes, k, row, group);
  EXPECT_EQ(word & 0xff, (word >> 8) & 0xff) << row << " " << group;
  return int(word & 0xff);
}

/// The integer the panels hold for feature `row`, column `col`, decoded
/// from the layout's definition: its nibble less its group's zero point.
int integerAt(const std::vector<uint8_t> &bytes, int64_t k, int64_t row,
              int64_t col) {
  int64_t p = row / kPanel, j = row % kPanel, r = col / 8, h = col % 4;
  const uint8_t *panel = bytes.data() + p * int4PanelBytes(k, kPanel);
  uint8_t byte = panel[(r * kPanel + j) * 4 + h];
  int nibble = col % 8 < 4 ? byte & 0xf : byte >> 4;
  return nibble - zeroAt(bytes, k, row, col / kInt4Group);
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
  // 16 rows of words and 2 rows of group words, P words each; then P
  // corrections per panel.
  EXPECT_EQ(int4PanelBytes(72, kPanel), (16 + 2) * 4 * kPanel);
  EXPECT_EQ(int4PanelsBytes(5, 72, kPanel),
            2 * ((16 + 2) * 4 * kPanel + 4 * kPanel));
}

/// The bfloat16 nearest to a positive float (ties to even), by its bits.
float bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&value, &bits, 4);
  return value;
}

TEST(Int4Panels, EveryIntegerScaleAndZeroPointWhereTheLayoutSays) {
  const int64_t n = 5, k = 72; // a short last group, a padded panel
  std::vector<uint8_t> bytes = pack(n, k);
  for (int64_t row = 0; row < 8; ++row) {
    float correction = 0;
    for (int64_t g = 0; g < int4Groups(k); ++g) {
      int64_t first = g * kInt4Group, last = std::min(k, first + kInt4Group);
      float lo = 0, hi = 0;
      for (int64_t col = first; row < n && col < last; ++col) {
        lo = std::min(lo, weight(row, col));
        hi = std::max(hi, weight(row, col));
      }
      float range = hi > lo ? hi - lo : 15.0f;
      float scale = scaleAt(bytes, k, row, g);
      EXPECT_EQ(scale, bf16(range / 15)) << row << " " << g;
      EXPECT_EQ(zeroAt(bytes, k, row, g),
                int(std::nearbyint(-lo * ((1.0f / range) * 15.0f))))
          << row << " " << g;
      int sum = 0, least = 0, most = 0;
      for (int64_t col = first; col < first + kInt4Group; ++col) {
        int q = integerAt(bytes, k, row, col);
        sum += q;
        least = std::min(least, q);
        most = std::max(most, q);
        if (row >= n || col >= k) {
          EXPECT_EQ(q, 0) << "padding at " << row << ", " << col;
          continue;
        }
        // Round to nearest: within half a step of the f32 scale, and |q|
        // times the bf16 rounding of the scale (2^-8 of it at most).
        EXPECT_LE(std::fabs(q * scale - weight(row, col)),
                  (0.5f + 15.0f / 256) * scale * (1 + 1e-5f))
            << row << ", " << col;
      }
      EXPECT_LE(most - least, 15) << row << " " << g; // 16 levels
      float term = scale * float(sum);
      correction = correction + term;
    }
    EXPECT_EQ(correctionAt(bytes, n, k, row), correction) << row;
  }
}

TEST(Int4Panels, LowNibblesAreAQuadHighNibblesTheNext) {
  // One feature whose values count up from -8 to 7 (a range of 15: scale
  // 1, zero point 8), so that column c's nibble is c % 16.
  auto ramp = [](int64_t, int64_t col) { return float(col % 16) - 8; };
  std::vector<uint8_t> bytes(int4PanelsBytes(1, 64, kPanel));
  packInt4Panels(1, 64, kPanel, ramp, bytes.data());
  EXPECT_EQ(scaleAt(bytes, 64, 0, 0), 1.0f);
  EXPECT_EQ(zeroAt(bytes, 64, 0, 0), 8);
  // Row 0, feature 0: bytes 0..3 hold k 0..3 (low) and 4..7 (high).
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(bytes[h] & 0xf, h);
    EXPECT_EQ(bytes[h] >> 4, h + 4);
  }
  // Row 1 starts after the P words of row 0.
  EXPECT_EQ(bytes[4 * kPanel] & 0xf, 8);
}
