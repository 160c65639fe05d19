//===- KvCaches.h - The decoder's keys and values ---------------*- C++ -*-===//
//
// What decode_step reads besides its tokens: per decoder layer, the
// cross-attention keys and values of the sources (once per sentence: its
// beams share them) and the self-attention caches of the tokens so far
// (once per row). A row's history is where its positions were written: a
// beam takes its parent's history as a table of rows, not as copies of its
// keys and values; a finished sentence leaves the batch.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_KVCACHES_H
#define TFM_RUNTIME_KVCACHES_H

#include "runtime/src/Buffer.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tfm_runtime {

class KvCaches {
public:
  KvCaches(int64_t heads, int64_t headDim) : heads(heads), headDim(headDim) {}

  /// Adds the next cross-attention buffer (a layer's keys, then its
  /// values) for `sentences` sources of `sourceLength`
  /// ([sentences, heads, sourceLength, headDim]) and returns it.
  float *addCross(int64_t sentences, int64_t sourceLength);
  /// Drops the cross-attention buffers.
  void clearCross() { cross.clear(); }
  /// Allocates `layers` layers' self-attention keys and values for `rows`
  /// rows of `capacity` positions ([rows, heads, capacity, headDim]), each
  /// row's history its own.
  void allocateSelf(int64_t layers, int64_t rows, int64_t capacity);

  /// Buffer i of the cross-attention (layer i / 2, keys if i is even,
  /// else values) and of the self-attention.
  float *crossData(int64_t i) const { return cross[i]->data; }
  float *selfData(int64_t i) const { return self[i]->data; }
  /// [rows, capacity] (decode_step's cache_rows): position p of row r's
  /// history is in row cacheRows()[r * capacity + p] of the caches.
  const int32_t *cacheRows() const { return cacheRowTable.data(); }

  /// Row r's history becomes row parents[r]'s first `length` positions
  /// (parents within the row's sentence); the caches do not move.
  void reorder(const std::vector<int64_t> &parents, int64_t length);
  /// Row i of the self-attention caches (first `length` positions) and of
  /// the history takes row keptRows[i], sentence i of the cross-attention
  /// keys/values takes sentence keptSentences[i] (both increasing, each
  /// kept[i] >= i, a sentence's rows kept together): the rows of finished
  /// sentences leave the batch.
  void compact(const std::vector<int64_t> &keptRows,
               const std::vector<int64_t> &keptSentences, int64_t length);

private:
  void copyHeads(float *to, int64_t toStride, const float *from,
                 int64_t fromStride, int64_t chunk) const;

  int64_t heads, headDim;
  int64_t sourceLength = 0, capacity = 0;
  std::vector<std::unique_ptr<Buffer>> cross, self;
  std::vector<int32_t> cacheRowTable;
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_KVCACHES_H
