//===- KvCachesTest.cpp - Cache rows follow the beams -----------*- C++ -*-===//
//
// The runtime's key/value cache moves on real buffers against where each
// value must end up: after a reorder row r holds what row parents[r] held,
// after a compaction the kept rows and sentences have moved up, and the
// positions past `length` are never touched.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/KvCaches.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <vector>

using tfm_runtime::KvCaches;

namespace {

constexpr int64_t kHeads = 3, kHeadDim = 4, kLayers = 2, kCapacity = 6,
                  kSourceLength = 5;

/// A value that says where it was written: buffer, row (or sentence),
/// head, position, lane. Small integers, exact in float.
float tag(int64_t buffer, int64_t row, int64_t head, int64_t position,
          int64_t lane) {
  return float((((buffer * 16 + row) * 4 + head) * 8 + position) * 4 + lane);
}

/// Caches of `rows` rows and `sentences` sentences, every value its tag.
class Caches {
public:
  Caches(int64_t rows, int64_t sentences) : rows(rows), sentences(sentences) {
    for (int64_t b = 0; b < 2 * kLayers; ++b) {
      float *data = kv.addCross(sentences, kSourceLength);
      forEach(sentences, kSourceLength,
              [&](int64_t s, int64_t h, int64_t p, int64_t l, int64_t at) {
                data[at] = tag(b, s, h, p, l);
              });
    }
    kv.allocateSelf(kLayers, rows, kCapacity);
    for (int64_t b = 0; b < 2 * kLayers; ++b)
      forEach(rows, kCapacity,
              [&](int64_t r, int64_t h, int64_t p, int64_t l, int64_t at) {
                kv.selfData(b)[at] = tag(b, r, h, p, l);
              });
  }

  /// Calls f(row, head, position, lane, index) over [count, heads,
  /// positions, headDim].
  template <typename F>
  static void forEach(int64_t count, int64_t positions, F f) {
    for (int64_t r = 0; r < count; ++r)
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t p = 0; p < positions; ++p)
          for (int64_t l = 0; l < kHeadDim; ++l)
            f(r, h, p, l, ((r * kHeads + h) * positions + p) * kHeadDim + l);
  }

  KvCaches kv{kHeads, kHeadDim};
  int64_t rows, sentences;
};

TEST(KvCaches, ReorderMovesEachRowsFirstPositionsFromItsParent) {
  // Two sentences of beam 4: a swap (rows 0, 1), a row taken twice (0 by
  // rows 1 and 2; 4 by rows 5 and 6), rows that keep their own (3) and a
  // chain (7 <- 5 <- 4, 4 <- 6).
  std::vector<int64_t> parents = {1, 0, 0, 3, 6, 4, 4, 5};
  Caches c(8, 2);
  const int64_t length = 4;
  c.kv.reorder(parents, length);
  for (int64_t b = 0; b < 2 * kLayers; ++b) {
    Caches::forEach(
        8, kCapacity,
        [&](int64_t r, int64_t h, int64_t p, int64_t l, int64_t at) {
          int64_t from = p < length ? parents[r] : r;
          ASSERT_EQ(c.kv.selfData(b)[at], tag(b, from, h, p, l))
              << "buffer " << b << " row " << r << " head " << h << " position "
              << p << " lane " << l;
        });
    Caches::forEach(
        2, kSourceLength,
        [&](int64_t s, int64_t h, int64_t p, int64_t l, int64_t at) {
          ASSERT_EQ(c.kv.crossData(b)[at], tag(b, s, h, p, l));
        });
  }
}

TEST(KvCaches, ReorderWithoutMovesTouchesNothing) {
  Caches c(4, 2);
  c.kv.reorder({0, 1, 2, 3}, kCapacity);
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    Caches::forEach(
        4, kCapacity,
        [&](int64_t r, int64_t h, int64_t p, int64_t l, int64_t at) {
          ASSERT_EQ(c.kv.selfData(b)[at], tag(b, r, h, p, l));
        });
}

TEST(KvCaches, CompactMovesTheKeptRowsAndSentencesUp) {
  // Three sentences of beam 2; the middle one is done.
  std::vector<int64_t> keptRows = {0, 1, 4, 5}, keptSentences = {0, 2};
  Caches c(6, 3);
  const int64_t length = 3;
  c.kv.compact(keptRows, keptSentences, length);
  for (int64_t b = 0; b < 2 * kLayers; ++b) {
    Caches::forEach(
        4, kCapacity,
        [&](int64_t r, int64_t h, int64_t p, int64_t l, int64_t at) {
          int64_t from = p < length ? keptRows[r] : r;
          ASSERT_EQ(c.kv.selfData(b)[at], tag(b, from, h, p, l))
              << "buffer " << b << " row " << r << " head " << h << " position "
              << p << " lane " << l;
        });
    Caches::forEach(
        2, kSourceLength,
        [&](int64_t s, int64_t h, int64_t p, int64_t l, int64_t at) {
          ASSERT_EQ(c.kv.crossData(b)[at], tag(b, keptSentences[s], h, p, l))
              << "buffer " << b << " sentence " << s;
        });
  }
}

} // namespace
