//===- VectorAttention.h - The vector attention kernels ---------*- C++ -*-===//
//
// What the two vector kernels of tfm.attention share (a block of queries,
// its sizes and constants) and their entry points, which
// AttentionKernelBuilder (Attention.cpp) calls for each block of queries:
//   oneQueryAttention  vectors along D, one query at a time (decoder steps;
//                      OneQueryKernel.cpp)
//   tiledAttention     queries along the lanes, Sᵀ = K·Qᵀ in register tiles
//                      (TiledKernel.cpp)
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CONVERSION_TFMTOLINALG_VECTORATTENTION_H
#define TFM_PASSES_CONVERSION_TFMTOLINALG_VECTORATTENTION_H

#include "passes/Conversion/TfmToLinalg/Common.h"

namespace mlir {
namespace tfm {
namespace lowering {

/// One block of queries q0 .. q0 + qs of the batch row whose leading
/// indices (batch, head, ..) are `lead`, as the vector kernels take it, D
/// and Dv static. Q, K and V keep their leading dimensions: collapsing
/// those of a KV cache's valid prefix (a strided view) would copy the cache
/// every step.
struct QueryBlock {
  /// [.., Sq, D], [.., Sk, D] and [.., Sk, Dv].
  Value q, k, v;
  SmallVector<Value> lead;
  /// The block's first query and its number of queries.
  Value q0, qs;
  /// len, the keys not padding (min(Sk, lengths[b])), and Sk - Sq.
  Value keyEnd, shift;
  bool causal;
  double scale;
  /// [qs, Dv]: the block's rows of the output, written in place.
  Value tile;
  /// A finite bias of the scores ([.., Sq, Sk], its leading dimensions
  /// 1 or the queries'), or null.
  Value bias = {};
  /// [B, P]: the row of K and V that holds key j of batch row b
  /// (tfm.cache_rows), or null for row b itself.
  Value keyRows = {};
  /// The first key the block's batch row sees (its key start), or null
  /// for 0.
  Value keyStart = {};
};

/// The end of the keys query `query` sees: end = min(len, query + Sk - Sq
/// + 1) with causality (shift = Sk - Sq), else len (`keyEnd`).
Value visibleEnd(OpBuilder &b, Location loc, Value query, Value keyEnd,
                 Value shift, bool causal);

/// What both vector kernels build on: the block, its sizes, vectors of L =
/// `lanes` floats, and constants.
class VectorKernel {
protected:
  VectorKernel(OpBuilder &b, Location loc, const QueryBlock &block,
               int64_t lanes);

  /// <0, .., L - 1>, and splats of the scale, -inf and 0.
  void createLaneConstants();

  /// end_i of the query at position `query` (visibleEnd).
  Value endOf(OpBuilder &eb, Location el, Value query) const {
    return visibleEnd(eb, el, query, block.keyEnd, block.shift, block.causal);
  }

  OpBuilder &b;
  Location loc;
  QueryBlock block;
  int64_t lanes, rank, d, dv;
  /// Vectors of D and of Dv (the last one masked where L does not divide).
  int64_t chunks, outChunks;
  Type elt;
  VectorType vecType, i32Vec;
  Value fzero, zero, one;
  Value laneIndex, scaleVec, ninfVec, zeroVec;
};

/// The block's rows of the output, block.tile written, by OneQueryKernel:
/// for blocks of few queries (a decoder step's one), and any block with a
/// bias or key rows.
Value oneQueryAttention(OpBuilder &b, Location loc, const QueryBlock &block,
                        const KernelConfig &config);

/// The block's rows of the output, block.tile written, by TiledKernel:
/// for blocks of at least config.attention.tiledMinQueries and at most
/// config.attention.queryBlock queries, without a bias or key rows.
Value tiledAttention(OpBuilder &b, Location loc, const QueryBlock &block,
                     const KernelConfig &config);

} // namespace lowering
} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_CONVERSION_TFMTOLINALG_VECTORATTENTION_H
