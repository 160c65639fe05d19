//===- KvCaches.cpp - The decoder's keys and values, and their moves ------===//
//
// A row of a self-attention cache is `heads` runs of `capacity` positions;
// after `length` steps each run's first `length` positions are in use.
// Beams change their histories in the table of rows; keys and values move
// only when finished sentences leave, and then only those in use.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/KvCaches.h"

#include <algorithm>
#include <cassert>
#include <cstring>

using namespace tfm_runtime;

float *KvCaches::addCross(int64_t sentences, int64_t length) {
  sourceLength = length;
  cross.push_back(
      std::make_unique<Buffer>(sentences * heads * sourceLength * headDim));
  return cross.back()->data;
}

void KvCaches::allocateSelf(int64_t layers, int64_t rows, int64_t positions) {
  capacity = positions;
  self.clear();
  for (int64_t l = 0; l < 2 * layers; ++l)
    self.push_back(std::make_unique<Buffer>(rows * heads * capacity * headDim));
  cacheRowTable.resize(rows * capacity);
  for (int64_t r = 0; r < rows; ++r)
    std::fill_n(&cacheRowTable[r * capacity], capacity, int32_t(r));
}

/// Copies the first `chunk` floats of each head of one cache row: head h
/// starts at to + h * toStride and from + h * fromStride.
void KvCaches::copyHeads(float *to, int64_t toStride, const float *from,
                         int64_t fromStride, int64_t chunk) const {
  for (int64_t h = 0; h < heads; ++h)
    std::memcpy(to + h * toStride, from + h * fromStride,
                chunk * sizeof(float));
}

void KvCaches::reorder(const std::vector<int64_t> &parents, int64_t length) {
  // The parents' histories as they were, then each row takes its parent's.
  // Positions from `length` on stay the row's own: the next step writes
  // position `length` of row r into row r.
  int64_t rows = int64_t(parents.size());
  bool moved = false;
  for (int64_t r = 0; r < rows; ++r)
    moved |= parents[r] != r;
  if (!moved)
    return;
  std::vector<int32_t> before(rows * length);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(&cacheRowTable[r * capacity], length, &before[r * length]);
  for (int64_t r = 0; r < rows; ++r)
    if (parents[r] != r)
      std::copy_n(&before[parents[r] * length], length,
                  &cacheRowTable[r * capacity]);
}

void KvCaches::compact(const std::vector<int64_t> &keptRows,
                       const std::vector<int64_t> &keptSentences,
                       int64_t length) {
  // Row i is written after rows < i and read from row kept[i] >= i, so no
  // row is overwritten before it is read. A history names rows of its own
  // sentence, which move by the same shift.
  for (size_t i = 0; i < keptRows.size(); ++i) {
    int32_t shift = int32_t(keptRows[i] - int64_t(i));
    const int32_t *from = &cacheRowTable[keptRows[i] * capacity];
    int32_t *to = &cacheRowTable[i * capacity];
    for (int64_t p = 0; p < capacity; ++p) {
      to[p] = from[p] - shift;
      assert(to[p] >= 0 && to[p] < int32_t(keptRows.size()) &&
             "a history names only rows of its own sentence");
    }
  }
  int64_t chunk = length * headDim, headStride = capacity * headDim;
  int64_t crossRow = heads * sourceLength * headDim;
  size_t buffers = self.size() + cross.size();
#pragma omp parallel for schedule(static)
  for (size_t c = 0; c < buffers; ++c) {
    bool cache = c < self.size();
    const std::vector<int64_t> &kept = cache ? keptRows : keptSentences;
    float *base = cache ? self[c]->data : cross[c - self.size()]->data;
    for (size_t i = 0; i < kept.size(); ++i) {
      int64_t from = kept[i];
      if (from == int64_t(i))
        continue;
      if (!cache) {
        std::memcpy(base + i * crossRow, base + from * crossRow,
                    crossRow * sizeof(float));
        continue;
      }
      copyHeads(base + i * heads * headStride, headStride,
                base + from * heads * headStride, headStride, chunk);
    }
  }
}
