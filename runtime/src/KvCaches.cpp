//===- KvCaches.cpp - The decoder's keys and values, and their moves ------===//
//
// A row of a self-attention cache is `heads` runs of `capacity` steps;
// after `length` steps each run's first `length` are in use (from the
// step its sentence joined at). Beams change their histories in the table
// of rows; keys and values move only when finished sentences leave, when
// the steps before every live sentence's start are dropped, and when the
// caches grow, and then only those in use.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/KvCaches.h"

#include <algorithm>
#include <cassert>
#include <cstring>

using namespace tfm_runtime;

void KvCaches::allocateCross(int64_t count, int64_t slots, int64_t length) {
  sourceLength = length;
  crossSlots = slots;
  cross.clear();
  for (int64_t i = 0; i < count; ++i)
    cross.push_back(
        std::make_unique<Buffer>(slots * heads * sourceLength * headDim));
}

void KvCaches::placeCross(const Buffers &from, int64_t first, int64_t count,
                          int64_t length) {
  assert(first + count <= crossSlots && "the batch's slots are full");
  if (length > sourceLength) {
    // The sentences there move to rows of the longer length.
    Buffers kept = std::move(cross);
    int64_t keptLength = sourceLength;
    allocateCross(int64_t(kept.size()), crossSlots, length);
    for (size_t i = 0; i < kept.size(); ++i)
      for (int64_t s = 0; s < first; ++s)
        copyHeads(cross[i]->data + s * heads * length * headDim,
                  length * headDim,
                  kept[i]->data + s * heads * keptLength * headDim,
                  keptLength * headDim, keptLength * headDim);
  }
  for (size_t i = 0; i < cross.size(); ++i)
    for (int64_t s = 0; s < count; ++s)
      copyHeads(cross[i]->data + (first + s) * heads * sourceLength * headDim,
                sourceLength * headDim,
                from[i]->data + s * heads * length * headDim, length * headDim,
                length * headDim);
}

void KvCaches::allocateSelf(int64_t layers, int64_t rows, int64_t positions) {
  capacity = positions;
  selfRows = rows;
  self.clear();
  for (int64_t l = 0; l < 2 * layers; ++l)
    self.push_back(std::make_unique<Buffer>(rows * heads * capacity * headDim));
  cacheRowTable.resize(rows * capacity);
  startRows(0, rows);
}

void KvCaches::startRows(int64_t first, int64_t count) {
  for (int64_t r = first; r < first + count; ++r)
    std::fill_n(cacheRowTable.data() + r * capacity, capacity, int32_t(r));
}

void KvCaches::growSelf(int64_t rows, int64_t positions, int64_t length) {
  int64_t before = capacity;
  std::vector<int32_t> keptTable = std::move(cacheRowTable);
  capacity = positions;
  cacheRowTable.resize(selfRows * capacity);
  startRows(0, selfRows);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(keptTable.data() + r * before, length,
                cacheRowTable.data() + r * capacity);
  // One buffer at a time: growing holds one of them twice, not all.
  for (std::unique_ptr<Buffer> &buffer : self) {
    auto grown =
        std::make_unique<Buffer>(selfRows * heads * capacity * headDim);
    for (int64_t r = 0; r < rows; ++r)
      copyHeads(grown->data + r * heads * capacity * headDim,
                capacity * headDim, buffer->data + r * heads * before * headDim,
                before * headDim, length * headDim);
    buffer = std::move(grown);
  }
}

void KvCaches::rebase(int64_t rows, int64_t shift, int64_t length) {
  if (shift == 0)
    return;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t *table = &cacheRowTable[r * capacity];
    std::copy(table + shift, table + length, table);
    std::fill(table + length - shift, table + capacity, int32_t(r));
  }
  int64_t headStride = capacity * headDim;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < self.size(); ++i)
    for (int64_t r = 0; r < rows * heads; ++r) {
      float *head = self[i]->data + r * headStride;
      std::memmove(head, head + shift * headDim,
                   (length - shift) * headDim * sizeof(float));
    }
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
  // Row i is read from itself or from a row past the kept ones, which no
  // row is written to. A history names rows of its own sentence, which
  // move by the same shift.
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
  // Buffers dealt out in turn: the self-attention ones, which come first,
  // hold the most to move.
#pragma omp parallel for schedule(static, 1)
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
