//===- Panels.h - A linear's weight as its kernel's panels ------*- C++ -*-===//
//
// tfm-layout-weights stores the weight W [N, K] of a linear that our code
// runs as panels of P output features with K contiguous (P = 4 vectors):
//   panels[p, k, j] = W[p·P + j, k],  0 where p·P + j >= N.
// With --precision bf16 the panels hold bfloat16 (toBFloat16) and pair K:
// each row of a panel holds two k for every feature (packBf16Panels), the
// operand layout of AVX512-BF16's dot product. With --precision int8 they
// hold integers with k in quads, the operand of AVX512-VNNI's, followed by
// each feature's scale and sum (packInt8Panels).
// Whoever writes a weights file (tfmc, tfm-bench) packs with this.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_PANELS_H
#define TFM_RUNTIME_PANELS_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tfm_runtime {

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

/// What --precision int8 makes of a row of a weight (an output channel):
/// integers q in [-127, 127] and a scale s with row ≈ q · s,
///   a = max |row| (127 for an all-zero row, which stays zero)
///   q = round_even(row · ((1 / a) · 127)),  s = a / 127
/// in f32 arithmetic, the reciprocal first as PyTorch's `127.0 / a` does
/// (test/reference/reference.py, quantize_rows). A linear's inputs are
/// quantized when it runs, unsigned with a zero point (Linear.cpp).
inline float int8RowScale(float amax) {
  return (amax > 0 ? amax : 127.0f) / 127.0f;
}
inline float int8RowInverse(float amax) {
  return (1.0f / (amax > 0 ? amax : 127.0f)) * 127.0f;
}
inline int8_t toInt8(float value, float inverse) {
  return int8_t(std::nearbyint(value * inverse));
}

/// A row of k values `element(col)` quantized as above: store(col, q) for
/// each of its integers; returns its scale and the sum of its integers.
struct Int8Row {
  float scale;
  int32_t sum;
};
template <typename ElementFn, typename StoreFn>
Int8Row quantizeInt8Row(int64_t k, ElementFn element, StoreFn store) {
  float amax = 0;
  for (int64_t col = 0; col < k; ++col)
    amax = std::max(amax, std::fabs(element(col)));
  float inverse = int8RowInverse(amax);
  int32_t sum = 0;
  for (int64_t col = 0; col < k; ++col) {
    int8_t value = toInt8(element(col), inverse);
    store(col, value);
    sum += value;
  }
  return {int8RowScale(amax), sum};
}

/// Bytes the int8 panels of an [n, k] matrix take: the integers with k in
/// quads (a zero pads k to a multiple of 4), then per padded output
/// feature its f32 scale and the i32 sum of its integers (packInt8Panels).
inline int64_t int8PanelsBytes(int64_t n, int64_t k, int64_t panel) {
  int64_t features = (n + panel - 1) / panel * panel;
  return features * ((k + 3) / 4 * 4 + 8);
}

/// The int8 panels of an [n, k] matrix of floats `element(row, col)`, each
/// row quantized as above, with k in quads: row q of panel p holds, for
/// each of its P features j, the 32-bit word (lowest byte first)
///   panels[p, q, 4j + h] = q_W[p·P + j, 4q + h],  h = 0..3
/// (0 past n or k), the signed operand of AVX512-VNNI's `vpdpbusd` for L
/// features and four k each. After the panels, for each of the
/// ceil(n / P)·P features j (0 past n):
///   scales[j] = s_W[j] (f32),  sums[j] = Σ_k q_W[j, k] (i32)
/// The kernel multiplies inputs u = q_x + z (unsigned, as `vpdpbusd` reads
/// its other operand; z the zero point of their row) and subtracts
/// z · sums[j]: Σ q_x·q_W exactly.
template <typename ElementFn>
void packInt8Panels(int64_t n, int64_t k, int64_t panel, ElementFn element,
                    uint8_t *dst) {
  int64_t panels = (n + panel - 1) / panel, quads = (k + 3) / 4;
  int64_t features = panels * panel;
  auto *q = reinterpret_cast<int8_t *>(dst);
  float *scales = reinterpret_cast<float *>(dst + features * quads * 4);
  int32_t *sums = reinterpret_cast<int32_t *>(scales + features);
  for (int64_t row = 0; row < features; ++row) {
    int64_t p = row / panel, j = row % panel;
    auto at = [&](int64_t col) -> int8_t & {
      return q[((p * quads + col / 4) * panel + j) * 4 + col % 4];
    };
    for (int64_t col = 0; col < quads * 4; ++col)
      at(col) = 0; // past k, and the rows past n
    Int8Row quantized = {0.0f, 0};
    if (row < n)
      quantized = quantizeInt8Row(
          k, [&](int64_t col) { return element(row, col); },
          [&](int64_t col, int8_t value) { at(col) = value; });
    scales[row] = quantized.scale;
    sums[row] = quantized.sum;
  }
}

/// --precision int4: a weight's rows quantized in groups of kInt4Group
/// consecutive k, each group with a scale and a zero point of its own (the
/// last group of a K that is not a multiple is short), over the group's
/// range extended to 0:
///   lo = min(group, 0), hi = max(group, 0), r = hi − lo (15 if 0)
///   inverse = (1 / r) · 15,  z = round_even(−lo · inverse)  in [0, 15]
///   q = clamp(round_even(w · inverse) + z, 0, 15) − z  in [−15, 15]
///   s = bf16(r / 15)
/// in f32 arithmetic (test/reference/reference.py, int4_levels). All 16
/// levels cover the range, and 0 stays exact (so does the padding); the
/// scale is kept as a bfloat16 so that it and z share one 32-bit word.
constexpr int64_t kInt4Group = 64;

inline int64_t int4Groups(int64_t k) {
  return (k + kInt4Group - 1) / kInt4Group;
}

/// Rows of an int4 panel: eight k a 32-bit word per feature, K padded to
/// whole groups.
inline int64_t int4PanelRows(int64_t k) {
  return int4Groups(k) * kInt4Group / 8;
}

/// Bytes one int4 panel of P features takes: its words, then its groups'
/// words of scale and zero point (packInt4Panels).
inline int64_t int4PanelBytes(int64_t k, int64_t panel) {
  return (int4PanelRows(k) + int4Groups(k)) * 4 * panel;
}

/// Bytes the int4 panels of an [n, k] matrix take: the panels, then a
/// correction per padded output feature (packInt4Panels).
inline int64_t int4PanelsBytes(int64_t n, int64_t k, int64_t panel) {
  int64_t panels = (n + panel - 1) / panel;
  return panels * (int4PanelBytes(k, panel) + 4 * panel);
}

/// A group's scale and zero point as the kernel reads them: the scale's
/// bfloat16 in the high half, z in each of the two low bytes (so that
///   zeros = (word & 0xffff) | (word << 16)
/// is z in every byte, and word & 0xffff0000 the scale as an f32).
struct Int4Group {
  float scale;       // a bfloat16's value
  int32_t zero, sum; // z, and the sum of the group's integers q
  uint32_t word() const {
    uint32_t bits;
    std::memcpy(&bits, &scale, 4);
    return (bits & 0xffff0000u) | uint32_t(zero) << 8 | uint32_t(zero);
  }
};

/// One group of `count` values `element(i)` quantized as above:
/// store(i, q + z) for each (the stored nibble).
template <typename ElementFn, typename StoreFn>
Int4Group quantizeInt4Group(int64_t count, ElementFn element, StoreFn store) {
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < count; ++i) {
    float value = element(i);
    lo = std::min(lo, value);
    hi = std::max(hi, value);
  }
  float range = hi - lo;
  if (!(range > 0))
    range = 15.0f;
  float inverse = (1.0f / range) * 15.0f;
  auto zero = int32_t(std::nearbyint(-lo * inverse));
  int32_t sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    float level = std::nearbyint(element(i) * inverse) + float(zero);
    auto nibble = int32_t(std::min(15.0f, std::max(0.0f, level)));
    store(i, uint8_t(nibble));
    sum += nibble - zero;
  }
  return {fromBFloat16(toBFloat16(range / 15.0f)), zero, sum};
}

/// The int4 panels of an [n, k] matrix of floats `element(row, col)`. Row
/// r of panel p holds, for each of its P features j, the 32-bit word whose
/// byte h (lowest first) is
///   (q[p·P + j, 8r + h] + z) | (q[p·P + j, 8r + 4 + h] + z) << 4
/// (z: the group's zero point; q = 0 past n or k): its low nibbles less z
/// are the int8 quad of k 8r .. 8r + 3 that AVX512-VNNI's `vpdpbusd`
/// takes, its high nibbles the quad after. After a panel's rows, its
/// groups' words of scale and zero point [groups][P] (Int4Group::word).
/// After all panels, per padded feature j the correction
///   c[j] = Σ_g s[j, g] · Σ_{k in g} q[j, k]   (f32, g in order)
/// with which the kernel takes out the inputs' zero point z_x:
///   y = (Σ_g f32(Σ_{k in g} u·q) · s[j, g] − z_x · c[j]) · s_x.
template <typename ElementFn>
void packInt4Panels(int64_t n, int64_t k, int64_t panel, ElementFn element,
                    uint8_t *dst) {
  int64_t panels = (n + panel - 1) / panel, rows = int4PanelRows(k);
  int64_t groups = int4Groups(k), panelBytes = int4PanelBytes(k, panel);
  auto *corrections = reinterpret_cast<float *>(dst + panels * panelBytes);
  for (int64_t row = 0; row < panels * panel; ++row) {
    int64_t p = row / panel, j = row % panel;
    uint8_t *words = dst + p * panelBytes;
    auto *groupWords = reinterpret_cast<uint32_t *>(words + rows * 4 * panel);
    auto store = [&](int64_t col, uint8_t nibble) {
      uint8_t &byte = words[((col / 8) * panel + j) * 4 + col % 4];
      int shift = col % 8 < 4 ? 0 : 4;
      byte = uint8_t((byte & ~(0xf << shift)) | nibble << shift);
    };
    float correction = 0;
    for (int64_t g = 0; g < groups; ++g) {
      int64_t first = g * kInt4Group;
      int64_t count = row < n ? std::min(kInt4Group, k - first) : 0;
      Int4Group group = quantizeInt4Group(
          count, [&](int64_t i) { return element(row, first + i); },
          [&](int64_t i, uint8_t nibble) { store(first + i, nibble); });
      for (int64_t i = count; i < kInt4Group; ++i) // padding: q = 0
        store(first + i, uint8_t(group.zero));
      groupWords[g * panel + j] = group.word();
      // Two statements: not contracted into an fma, as the reference's
      // separate rounding of the product and of the sum.
      float term = group.scale * float(group.sum);
      correction = correction + term;
    }
    corrections[row] = correction;
  }
}

/// What a panel's 32-bit words hold per feature: one f32, a bf16 pair, an
/// int8 quad, or eight int4 (packPanels, packBf16Panels, packInt8Panels,
/// packInt4Panels).
enum class PanelElements { F32, Bf16Pairs, Int8Quads, Int4Octets };

/// A panel as rows of P 32-bit words, one per feature (an int4 panel's
/// groups' scales are rows too), and the arrays of one 32-bit value per
/// feature that follow all panels (int8: scales and sums; int4: the
/// corrections).
struct PanelWords {
  int64_t rows, tails;
};
inline PanelWords panelWords(int64_t k, PanelElements elements) {
  switch (elements) {
  case PanelElements::F32:
    return {k, 0};
  case PanelElements::Bf16Pairs:
    return {(k + 1) / 2, 0};
  case PanelElements::Int8Quads:
    return {(k + 3) / 4, 2};
  case PanelElements::Int4Octets:
    return {int4PanelRows(k) + int4Groups(k), 1};
  }
  return {0, 0};
}

/// Bytes one panel of P features takes, with its share of the arrays
/// after the panels.
inline int64_t bytesPerPanel(int64_t k, int64_t panel, PanelElements elements) {
  PanelWords words = panelWords(k, elements);
  return (words.rows + words.tails) * panel * 4;
}

/// Copies the features `ids[0..count)` of the panels `src` (`srcPanels`
/// of them, holding `elements`) into ceil(count / P) panels at `dst` in
/// that order, the features past `count` zero: each feature's words move
/// from its lane of its panel to lane c % P of panel c / P, and its values
/// in the arrays after the panels alike. A linear over them computes for
/// column c what it computes over `src` for feature ids[c], bit for bit.
inline void selectPanelFeatures(const uint8_t *src, int64_t srcPanels,
                                int64_t k, int64_t panel,
                                PanelElements elements, const int32_t *ids,
                                int64_t count, uint8_t *dst) {
  PanelWords words = panelWords(k, elements);
  int64_t rows = words.rows;
  int64_t dstPanels = (count + panel - 1) / panel;
  const auto *from = reinterpret_cast<const uint32_t *>(src);
  auto *to = reinterpret_cast<uint32_t *>(dst);
  for (int64_t p = 0; p < dstPanels; ++p) {
    uint32_t *out = to + p * rows * panel;
    for (int64_t j = 0; j < panel; ++j) {
      int64_t c = p * panel + j;
      const uint32_t *in =
          c < count ? from + (ids[c] / panel) * rows * panel + ids[c] % panel
                    : nullptr;
      for (int64_t r = 0; r < rows; ++r)
        out[r * panel + j] = in ? in[r * panel] : 0;
    }
  }
  // After the panels: each array of one value per feature.
  int64_t srcFeatures = srcPanels * panel, dstFeatures = dstPanels * panel;
  const uint32_t *srcTails = from + srcPanels * rows * panel;
  uint32_t *dstTails = to + dstPanels * rows * panel;
  for (int64_t t = 0; t < words.tails; ++t)
    for (int64_t c = 0; c < dstFeatures; ++c)
      dstTails[t * dstFeatures + c] =
          c < count ? srcTails[t * srcFeatures + ids[c]] : 0;
}

} // namespace tfm_runtime

#endif // TFM_RUNTIME_PANELS_H
