//===- KvCaches.cpp - The decoder's keys and values, and their moves ------===//
//
// A row of a self-attention cache is `heads` runs of `capacity` positions;
// after `length` steps each run's first `length` positions are in use, and
// only those move.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/KvCaches.h"

#include "runtime/src/Search.h"

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
  CacheMoves moves = cacheMoves(parents);
  const std::vector<int64_t> &staged = moves.staged;
  if (moves.copies.empty())
    return;
  // Per row and head, positions [0, length) are contiguous.
  int64_t chunk = length * headDim, headStride = capacity * headDim;
  int64_t rowChunk = heads * chunk;
  // The caches in parallel, each thread with its staging area.
#pragma omp parallel
  {
    std::unique_ptr<float[]> stage(new float[staged.size() * rowChunk]);
#pragma omp for schedule(static)
    for (size_t c = 0; c < self.size(); ++c) {
      float *base = self[c]->data;
      for (size_t i = 0; i < staged.size(); ++i)
        copyHeads(&stage[i * rowChunk], chunk,
                  base + staged[i] * heads * headStride, headStride, chunk);
      for (const RowCopy &copy : moves.copies)
        if (copy.staged)
          copyHeads(base + copy.to * heads * headStride, headStride,
                    &stage[copy.from * rowChunk], chunk, chunk);
        else
          copyHeads(base + copy.to * heads * headStride, headStride,
                    base + copy.from * heads * headStride, headStride, chunk);
    }
  }
}

void KvCaches::compact(const std::vector<int64_t> &keptRows,
                       const std::vector<int64_t> &keptSentences,
                       int64_t length) {
  // Row i is written after rows < i and read from row kept[i] >= i, so no
  // row is overwritten before it is read.
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
