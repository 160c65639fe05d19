//===- KvCachesTest.cpp - Cache rows follow the beams -----------*- C++ -*-===//
//
// The runtime's key/value caches on real buffers against what each row
// must read: after a reorder row r's history is row parents[r]'s and no
// value moved; after a compaction the kept rows, their histories and the
// kept sentences have moved up, and the positions past `length` are never
// touched. Sentences that join a running batch: their cross-attention
// keys placed beside the others' (of another source length), the steps
// before every row's start dropped, the caches grown.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/KvCaches.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <random>
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
    kv.allocateCross(2 * kLayers, sentences, kSourceLength);
    for (int64_t b = 0; b < 2 * kLayers; ++b) {
      float *data = kv.crossData(b);
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

/// What a row's attention reads at `position`: the value of buffer b, head
/// h, lane l in the cache row that its history names.
float readThroughHistory(const Caches &c, int64_t b, int64_t row, int64_t head,
                         int64_t position, int64_t lane) {
  int64_t from = c.kv.cacheRows()[row * kCapacity + position];
  return c.kv.selfData(
      b)[((from * kHeads + head) * kCapacity + position) * kHeadDim + lane];
}

TEST(KvCaches, EachRowsHistoryIsItsOwnAtFirst) {
  Caches c(4, 2);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t p = 0; p < kCapacity; ++p)
      ASSERT_EQ(readThroughHistory(c, 1, r, 2, p, 3), tag(1, r, 2, p, 3));
}

TEST(KvCaches, ReorderGivesEachRowItsParentsHistoryWithoutMovingValues) {
  // Two sentences of beam 4: a swap (rows 0, 1), a row taken twice (0 by
  // rows 1 and 2; 4 by rows 5 and 6), rows that keep their own (3) and a
  // chain (7 <- 5 <- 4, 4 <- 6).
  std::vector<int64_t> parents = {1, 0, 0, 3, 6, 4, 4, 5};
  Caches c(8, 2);
  const int64_t length = 4;
  c.kv.reorder(parents, length);
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    Caches::forEach(
        8, kCapacity,
        [&](int64_t r, int64_t h, int64_t p, int64_t l, int64_t at) {
          ASSERT_EQ(c.kv.selfData(b)[at], tag(b, r, h, p, l));
          int64_t from = p < length ? parents[r] : r;
          ASSERT_EQ(readThroughHistory(c, b, r, h, p, l), tag(b, from, h, p, l))
              << "buffer " << b << " row " << r << " head " << h << " position "
              << p << " lane " << l;
        });
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    Caches::forEach(
        2, kSourceLength,
        [&](int64_t s, int64_t h, int64_t p, int64_t l, int64_t at) {
          ASSERT_EQ(c.kv.crossData(b)[at], tag(b, s, h, p, l));
        });
}

/// Steps of a beam search against histories kept as lists: each step every
/// row writes its position, picks a parent in its sentence (at random),
/// and now and then a sentence finishes and leaves the batch. Every row
/// reads, through its history, exactly what its list says it wrote.
TEST(KvCaches, HistoriesFollowTheBeamsAcrossStepsAndCompactions) {
  const int64_t beam = 3, sentences = 4;
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    Caches c(sentences * beam, sentences);
    int64_t live = sentences;
    // expected[r][p]: the token (a number unique to its step and row) that
    // row r's hypothesis holds at position p.
    std::vector<std::vector<float>> expected(sentences * beam);
    for (int64_t step = 0; step < kCapacity && live > 0; ++step) {
      int64_t rows = live * beam;
      for (int64_t r = 0; r < rows; ++r) {
        float token = float(1000 + step * 100 + r);
        expected[r].push_back(token);
        for (int64_t b = 0; b < 2 * kLayers; ++b)
          for (int64_t h = 0; h < kHeads; ++h)
            c.kv.selfData(b)[((r * kHeads + h) * kCapacity + step) * kHeadDim +
                             h % kHeadDim] = token + float(b * 10 + h);
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t p = 0; p <= step; ++p)
          for (int64_t b = 0; b < 2 * kLayers; ++b)
            for (int64_t h = 0; h < kHeads; ++h)
              ASSERT_EQ(readThroughHistory(c, b, r, h, p, h % kHeadDim),
                        expected[r][p] + float(b * 10 + h))
                  << "trial " << trial << " step " << step << " row " << r
                  << " position " << p;
      std::vector<int64_t> parents(rows);
      for (int64_t r = 0; r < rows; ++r)
        parents[r] = r / beam * beam +
                     std::uniform_int_distribution<int64_t>(0, beam - 1)(rng);
      std::vector<std::vector<float>> before = expected;
      for (int64_t r = 0; r < rows; ++r)
        expected[r] = before[parents[r]];
      c.kv.reorder(parents, step + 1);
      if (live > 1 && rng() % 2) { // a sentence is done
        // As the translator does: the last sentence takes its slot.
        int64_t done = int64_t(rng() % uint64_t(live));
        std::vector<int64_t> keptRows, keptSentences;
        for (int64_t s = 0; s < live - 1; ++s) {
          keptSentences.push_back(s == done ? live - 1 : s);
          for (int64_t j = 0; j < beam; ++j)
            keptRows.push_back(keptSentences.back() * beam + j);
        }
        c.kv.compact(keptRows, keptSentences, step + 1);
        for (size_t i = 0; i < keptRows.size(); ++i)
          expected[i] = expected[keptRows[i]];
        --live;
      }
    }
  }
}

/// Compacts caches of `sentences` sentences of beam 2 so; checks every
/// kept value and that the positions past `length` are not touched.
void expectCompacted(int64_t sentences, std::vector<int64_t> keptSentences) {
  std::vector<int64_t> keptRows;
  for (int64_t s : keptSentences)
    keptRows.insert(keptRows.end(), {2 * s, 2 * s + 1});
  Caches c(2 * sentences, sentences);
  const int64_t length = 3;
  c.kv.compact(keptRows, keptSentences, length);
  for (int64_t b = 0; b < 2 * kLayers; ++b) {
    Caches::forEach(
        int64_t(keptRows.size()), kCapacity,
        [&](int64_t r, int64_t h, int64_t p, int64_t l, int64_t at) {
          int64_t from = p < length ? keptRows[r] : r;
          ASSERT_EQ(c.kv.selfData(b)[at], tag(b, from, h, p, l))
              << "buffer " << b << " row " << r << " head " << h << " position "
              << p << " lane " << l;
          ASSERT_EQ(readThroughHistory(c, b, r, h, p, l), tag(b, from, h, p, l))
              << "buffer " << b << " row " << r << " head " << h << " position "
              << p << " lane " << l;
        });
    Caches::forEach(
        int64_t(keptSentences.size()), kSourceLength,
        [&](int64_t s, int64_t h, int64_t p, int64_t l, int64_t at) {
          ASSERT_EQ(c.kv.crossData(b)[at], tag(b, keptSentences[s], h, p, l))
              << "buffer " << b << " sentence " << s;
        });
  }
}

TEST(KvCaches, CompactMovesTheKeptRowsAndSentencesUp) {
  expectCompacted(3, {0, 2}); // the middle one of three is done
  expectCompacted(3, {0, 1}); // the last is done: nothing moves
}

TEST(KvCaches, CompactFillsTheSlotsOfTheDoneWithTheLast) {
  expectCompacted(4, {3, 1, 2}); // the first of four is done
  expectCompacted(5, {4, 1, 3}); // the first and the third of five
}

// Joiners with a longer source: the sentences there move to rows of the
// longer length, keeping their values; the joiners' go in after them.
// Then joiners with a shorter source fill the first of their slot's.
TEST(KvCaches, JoinersCrossKeysArePlacedBesideTheOthers) {
  Caches c(2, 4);
  const int64_t longer = kSourceLength + 2, shorter = 2;
  tfm_runtime::Buffers joiners;
  for (int64_t b = 0; b < 2 * kLayers; ++b) {
    joiners.push_back(
        std::make_unique<tfm_runtime::Buffer>(kHeads * longer * kHeadDim));
    Caches::forEach(1, longer,
                    [&](int64_t, int64_t h, int64_t p, int64_t l, int64_t at) {
                      joiners.back()->data[at] = tag(b, 9, h, p, l);
                    });
  }
  c.kv.placeCross(joiners, 2, 1, longer);
  ASSERT_EQ(c.kv.crossLength(), longer);
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    Caches::forEach(
        3, longer, [&](int64_t s, int64_t h, int64_t p, int64_t l, int64_t at) {
          if (s < 2 && p >= kSourceLength)
            return; // past the sentence's source: never read
          ASSERT_EQ(c.kv.crossData(b)[at], tag(b, s < 2 ? s : 9, h, p, l))
              << "buffer " << b << " sentence " << s << " position " << p;
        });
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    Caches::forEach(1, shorter,
                    [&](int64_t, int64_t h, int64_t p, int64_t l, int64_t at) {
                      joiners[b]->data[at] = tag(b, 7, h, p, l);
                    });
  c.kv.placeCross(joiners, 3, 1, shorter);
  ASSERT_EQ(c.kv.crossLength(), longer);
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t p = 0; p < shorter; ++p)
        ASSERT_EQ(
            c.kv.crossData(b)[((3 * kHeads + h) * longer + p) * kHeadDim + 1],
            tag(b, 7, h, p, 1));
}

// Rows that joined late: dropping the steps before the earliest start
// moves every row's steps and history back by that much; growing keeps
// them where they are, with room after.
TEST(KvCaches, RebaseAndGrowKeepWhatEachRowReads) {
  Caches c(4, 2);
  std::vector<int64_t> parents = {1, 1, 2, 2};
  c.kv.reorder(parents, 4);
  const int64_t shift = 2, length = 5;
  c.kv.rebase(4, shift, length);
  auto readAt = [&](int64_t capacity, int64_t b, int64_t r, int64_t h,
                    int64_t p, int64_t l) {
    int64_t from = c.kv.cacheRows()[r * capacity + p];
    return c.kv.selfData(
        b)[((from * kHeads + h) * capacity + p) * kHeadDim + l];
  };
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t p = 0; p < length - shift; ++p) {
        int64_t step = p + shift, from = step < 4 ? parents[r] : r;
        ASSERT_EQ(readAt(kCapacity, b, r, 1, p, 2), tag(b, from, 1, step, 2))
            << "buffer " << b << " row " << r << " position " << p;
      }
  const int64_t grown = 3 * kCapacity;
  c.kv.growSelf(4, grown, length - shift);
  ASSERT_EQ(c.kv.steps(), grown);
  for (int64_t b = 0; b < 2 * kLayers; ++b)
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t p = 0; p < length - shift; ++p) {
        int64_t step = p + shift, from = step < 4 ? parents[r] : r;
        ASSERT_EQ(readAt(grown, b, r, 1, p, 2), tag(b, from, 1, step, 2));
      }
      for (int64_t p = length - shift; p < grown; ++p)
        ASSERT_EQ(c.kv.cacheRows()[r * grown + p], r); // its own from here
    }
}

} // namespace
