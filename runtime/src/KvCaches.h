//===- KvCaches.h - The decoder's keys and values ---------------*- C++ -*-===//
//
// What decode_step reads besides its tokens: per decoder layer, the
// cross-attention keys and values of the sources (once per sentence: its
// beams share them) and the self-attention caches of the tokens so far
// (once per row). A row's history is where its steps were written: a beam
// takes its parent's history as a table of rows, not as copies of its
// keys and values; a finished sentence leaves the batch, and a sentence
// that joins a running batch takes the next free slot and rows.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_KVCACHES_H
#define TFM_RUNTIME_KVCACHES_H

#include "runtime/src/Buffer.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tfm_runtime {

using Buffers = std::vector<std::unique_ptr<Buffer>>;

class KvCaches {
public:
  KvCaches(int64_t heads, int64_t headDim) : heads(heads), headDim(headDim) {}

  /// `count` cross-attention buffers (per layer its keys, then its values)
  /// for `slots` sentences of `sourceLength` source positions
  /// ([slots, heads, sourceLength, headDim]), contents undefined: what
  /// encode writes into, from slot 0.
  void allocateCross(int64_t count, int64_t slots, int64_t sourceLength);
  /// Sentences [first, first + count) of the cross-attention take those
  /// of `from` ([count, heads, length, headDim] per buffer), the first
  /// `first` kept; the source length grows to `length` if shorter.
  void placeCross(const Buffers &from, int64_t first, int64_t count,
                  int64_t length);
  int64_t crossLength() const { return sourceLength; }
  /// Allocates `layers` layers' self-attention keys and values for `rows`
  /// rows of `capacity` steps ([rows, heads, capacity, headDim]), each
  /// row's history its own.
  void allocateSelf(int64_t layers, int64_t rows, int64_t capacity);
  int64_t steps() const { return capacity; }
  /// Room for `positions` steps, the first `length` of each of the first
  /// `rows` rows kept. Out of memory (std::bad_alloc), the caches are left
  /// unusable: one buffer grows at a time, so that growing holds one of
  /// them twice instead of all.
  void growSelf(int64_t rows, int64_t positions, int64_t length);
  /// Rows [first, first + count) begin their histories: each its own.
  void startRows(int64_t first, int64_t count);
  /// Steps [shift, length) of the first `rows` rows become steps
  /// [0, length - shift): the steps before `shift` are no row's history
  /// any more.
  void rebase(int64_t rows, int64_t shift, int64_t length);

  /// Buffer i of the cross-attention (layer i / 2, keys if i is even,
  /// else values) and of the self-attention.
  float *crossData(int64_t i) const { return cross[i]->data; }
  float *selfData(int64_t i) const { return self[i]->data; }
  /// [rows, capacity] (decode_step's cache_rows): step p of row r's
  /// history is in row cacheRows()[r * capacity + p] of the caches.
  const int32_t *cacheRows() const { return cacheRowTable.data(); }

  /// Row r's history becomes row parents[r]'s first `length` steps
  /// (parents within the row's sentence); the caches do not move.
  void reorder(const std::vector<int64_t> &parents, int64_t length);
  /// Row i of the self-attention caches (first `length` steps) and of
  /// the history takes row keptRows[i], sentence i of the cross-attention
  /// keys/values takes sentence keptSentences[i] (each kept[i] either i or
  /// at least kept.size(), so that no row is written before it is read; a
  /// sentence's rows kept together): the rows of finished sentences leave
  /// the batch.
  void compact(const std::vector<int64_t> &keptRows,
               const std::vector<int64_t> &keptSentences, int64_t length);

private:
  void copyHeads(float *to, int64_t toStride, const float *from,
                 int64_t fromStride, int64_t chunk) const;

  int64_t heads, headDim;
  int64_t sourceLength = 0, crossSlots = 0, selfRows = 0, capacity = 0;
  Buffers cross, self;
  std::vector<int32_t> cacheRowTable;
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_KVCACHES_H
