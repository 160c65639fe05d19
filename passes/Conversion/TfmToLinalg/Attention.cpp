//===- Attention.cpp - Lower tfm.attention ----------------------*- C++ -*-===//
//
// tfm.attention as a FlashAttention loop nest: the scores are never
// materialized whole, masks come from loop indices and lengths.
// AttentionKernelBuilder builds the nest over batch rows and blocks of
// queries, and picks a kernel for each block; the kernels are builders
// whose methods build the steps of the online softmax:
//   OneQueryKernel  vectors along D, one query at a time (decoder steps)
//   TiledKernel     queries along the lanes, Sᵀ = K·Qᵀ in register tiles
//   the linalg ops of AttentionKernelBuilder::linalgBlock, for head sizes
//   that are not static or elements that are not f32.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"
#include "passes/Conversion/TfmToLinalg/VectorMath.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// What the kernels share
//===----------------------------------------------------------------------===//

/// source[row, offset : offset + size, 0 : width] as a 2-D tensor.
static Value rowTile(OpBuilder &b, Location loc, Value source, Value row,
                     Value offset, Value size, OpFoldResult width) {
  auto sourceType = tensorTypeOf(source);
  std::optional<int64_t> staticWidth = getConstantIntValue(width);
  auto type = RankedTensorType::get(
      {ShapedType::kDynamic, staticWidth ? *staticWidth : ShapedType::kDynamic},
      sourceType.getElementType());
  return b.create<tensor::ExtractSliceOp>(
      loc, type, source, ArrayRef<OpFoldResult>{row, offset, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), size, width},
      unitStrides(b, 3));
}

/// The end of the keys query `query` sees: end = min(len, query + Sk - Sq
/// + 1) with causality (shift = Sk - Sq), else len (`keyEnd`).
static Value visibleEnd(OpBuilder &b, Location loc, Value query, Value keyEnd,
                        Value shift, bool causal) {
  if (!causal)
    return keyEnd;
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  Value visible = b.create<arith::AddIOp>(
      loc, b.create<arith::AddIOp>(loc, query, shift), one);
  visible = b.create<arith::MaxSIOp>(loc, visible, zero);
  return b.create<arith::MinSIOp>(loc, keyEnd, visible);
}

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
};

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

VectorKernel::VectorKernel(OpBuilder &b, Location loc, const QueryBlock &block,
                           int64_t lanes)
    : b(b), loc(loc), block(block), lanes(lanes) {
  rank = tensorTypeOf(block.q).getRank();
  d = tensorTypeOf(block.q).getDimSize(rank - 1);
  dv = tensorTypeOf(block.v).getDimSize(rank - 1);
  elt = tensorTypeOf(block.q).getElementType();
  vecType = VectorType::get({lanes}, elt);
  i32Vec = VectorType::get({lanes}, b.getI32Type());
  chunks = llvm::divideCeil(d, lanes);
  outChunks = llvm::divideCeil(dv, lanes);
  fzero = floatConstant(b, loc, elt, 0.0);
  zero = indexConstant(b, loc, 0);
  one = indexConstant(b, loc, 1);
}

void VectorKernel::createLaneConstants() {
  laneIndex = laneIndices(b, loc, lanes);
  scaleVec = floatConstant(b, loc, vecType, block.scale);
  ninfVec = floatConstant(b, loc, vecType, -INFINITY);
  zeroVec = floatConstant(b, loc, vecType, 0.0);
}

//===----------------------------------------------------------------------===//
// One query at a time
//===----------------------------------------------------------------------===//

/// Keys per block of the vector kernel: a block of K and V rows of 64
/// floats is 16 KiB, which stays in L1 while the block's queries visit it,
/// and its 32 scores give the exp, the max and the products enough
/// independent work to hide their latencies.
constexpr int64_t kVectorKeyBlock = 32;

/// The vector form of one block of queries, for blocks of few queries (a
/// decoder step's one). Keys go in blocks of B = kVectorKeyBlock, each
/// visited by every query of the block in turn; between key blocks a
/// query's running state lives in the output tile (O), `rowMax` (m) and
/// `rowSum` (l, one vector per query). For query i and key block k0:
///   s[j] = scale · Σ_c q_i[c]·K[k0 + j][c]      (scores: dot products of D
///          in vectors; L of them summed at once by transposeSum, L = the
///          vector width, so s is B / L vectors)
///   s[j] = -inf where k0 + j >= end_i           (padding and causality: end_i
///          = min(len, i + Sk - Sq + 1); blocks past it are skipped)
///   m' = max(m, max_j s);  p = exp(s - m');  c = exp(m - m')
///   l' = l·c + Σ p  (onlineSoftmax; vectors: their lanes are summed once,
///          at the end)
///   O' = O·c + Σ_j p[j]·V[k0 + j]                (accumulateValues: Dv/L
///          vector accumulators)
/// and finally O / Σ l (normalize). Reads past a query's last key are
/// clamped to it; their weights are 0.
class OneQueryKernel : VectorKernel {
public:
  OneQueryKernel(OpBuilder &b, Location loc, const QueryBlock &block,
                 int64_t lanes)
      : VectorKernel(b, loc, block, lanes),
        groups(std::max<int64_t>(1, kVectorKeyBlock / lanes)),
        keyBlock(groups * lanes) {
    createLaneConstants();
  }

  /// The block's rows of the output: block.tile, written.
  Value build();

private:
  /// The step of the online softmax from one key block's scores.
  struct SoftmaxStep {
    Value m, l, corr;
    SmallVector<Value> p;
  };

  /// {lead.., pos}: the row at position pos of Q, K or V.
  SmallVector<Value> at(Value pos) const;
  /// The row of K and V that holds key `key`: at(key), its batch index
  /// read from the key rows if there are.
  SmallVector<Value> keyAt(OpBuilder &kb, Location kl, Value key) const;
  Value readAt(OpBuilder &rb, Location rl, Value t, ValueRange rowIndex,
               int64_t c, int64_t width) const;
  Value writeAt(OpBuilder &rb, Location rl, Value value, Value t,
                ValueRange rowIndex, int64_t c, int64_t width) const;
  Value toI32(OpBuilder &ib, Location il, Value index) const {
    return ib.create<arith::IndexCastOp>(il, ib.getI32Type(), index);
  }

  ValueRange visitQuery(OpBuilder &rb, Location rl, Value k0, Value i,
                        ValueRange rowIter);
  void updateQuery(OpBuilder &vb, Location vl, Value k0, Value i, Value query,
                   Value end, ValueRange rowIter);
  SmallVector<Value> visitBlock(OpBuilder &kb, Location kl, Value k0,
                                Value query, Value end, ValueRange state);
  Value scoreGroup(OpBuilder &kb, Location kl, Value k0, int64_t g, Value query,
                   Value lastKey, Value endVec, ArrayRef<Value> qv,
                   SmallVectorImpl<SmallVector<Value>> &keys,
                   SmallVectorImpl<Value> &seen);
  Value biasAt(OpBuilder &kb, Location kl, Value query, Value key) const;
  SoftmaxStep onlineSoftmax(OpBuilder &kb, Location kl, ArrayRef<Value> s,
                            ArrayRef<Value> seen, Value m, Value l);
  SmallVector<Value> accumulateValues(OpBuilder &kb, Location kl,
                                      ArrayRef<SmallVector<Value>> keys,
                                      const SoftmaxStep &step, ValueRange out);
  Value normalize(Value tile, Value sums);

  /// Vectors of keys per key block, and keys per key block.
  int64_t groups, keyBlock;
};

SmallVector<Value> OneQueryKernel::at(Value pos) const {
  SmallVector<Value> indices(block.lead);
  indices.push_back(pos);
  return indices;
}

SmallVector<Value> OneQueryKernel::keyAt(OpBuilder &kb, Location kl,
                                         Value key) const {
  SmallVector<Value> indices = at(key);
  if (block.keyRows)
    indices[0] = kb.create<arith::IndexCastOp>(
        kl, kb.getIndexType(),
        kb.create<tensor::ExtractOp>(kl, block.keyRows,
                                     ValueRange{block.lead[0], key}));
  return indices;
}

/// The vector at column chunk c of the row of `t` that `rowIndex` indexes
/// ([.., S, W] at {lead.., pos}, or a tile [qs, W] at {i}); the last chunk
/// of a width that L does not divide is masked (zeros past W).
Value OneQueryKernel::readAt(OpBuilder &rb, Location rl, Value t,
                             ValueRange rowIndex, int64_t c,
                             int64_t width) const {
  SmallVector<Value> indices(rowIndex);
  indices.push_back(indexConstant(rb, rl, c * lanes));
  return readVector(rb, rl, vecType, t, indices, fzero,
                    (c + 1) * lanes <= width);
}

Value OneQueryKernel::writeAt(OpBuilder &rb, Location rl, Value value, Value t,
                              ValueRange rowIndex, int64_t c,
                              int64_t width) const {
  SmallVector<Value> indices(rowIndex);
  indices.push_back(indexConstant(rb, rl, c * lanes));
  return writeVector(rb, rl, value, t, indices, (c + 1) * lanes <= width);
}

Value OneQueryKernel::build() {
  // O = 0, m = -inf, l = 0
  Value tile = b.create<linalg::FillOp>(loc, fzero, block.tile).getResult(0);
  Value rowMax = filled(b, loc, {block.qs}, elt, -INFINITY);
  Value rowSum = filled(b, loc, {block.qs, b.getIndexAttr(lanes)}, elt, 0.0);
  // The block's last query sees the most keys.
  Value blockEnd =
      endOf(b, loc,
            b.create<arith::SubIOp>(
                loc, b.create<arith::AddIOp>(loc, block.q0, block.qs), one));
  auto keyBlocks = b.create<scf::ForOp>(
      loc, zero, blockEnd, indexConstant(b, loc, keyBlock),
      ValueRange{tile, rowMax, rowSum},
      [&](OpBuilder &bb, Location bl, Value k0, ValueRange blockIter) {
        auto queries = bb.create<scf::ForOp>(
            bl, zero, block.qs, one, blockIter,
            [&](OpBuilder &rb, Location rl, Value i, ValueRange rowIter) {
              rb.create<scf::YieldOp>(rl, visitQuery(rb, rl, k0, i, rowIter));
            });
        bb.create<scf::YieldOp>(bl, queries.getResults());
      });
  // O / Σ l, in place
  return normalize(keyBlocks.getResult(0), keyBlocks.getResult(2));
}

/// Query i (row i of the tile) and the key block at k0: its state {O, m, l}
/// in `rowIter` updated, or kept if it sees no key of the block.
ValueRange OneQueryKernel::visitQuery(OpBuilder &rb, Location rl, Value k0,
                                      Value i, ValueRange rowIter) {
  Value query = rb.create<arith::AddIOp>(rl, block.q0, i);
  Value end = endOf(rb, rl, query);
  Value visits =
      rb.create<arith::CmpIOp>(rl, arith::CmpIPredicate::slt, k0, end);
  auto visit = rb.create<scf::IfOp>(
      rl, visits,
      [&](OpBuilder &vb, Location vl) {
        updateQuery(vb, vl, k0, i, query, end, rowIter);
      },
      [&](OpBuilder &vb, Location vl) {
        vb.create<scf::YieldOp>(vl, rowIter);
      });
  return visit.getResults();
}

/// Loads query i's state into registers, visits the key block, and stores
/// it back: {O, m, l} -> {O', m', l'}.
void OneQueryKernel::updateQuery(OpBuilder &vb, Location vl, Value k0, Value i,
                                 Value query, Value end, ValueRange rowIter) {
  Value t = rowIter[0], mT = rowIter[1], lT = rowIter[2];
  SmallVector<Value> state = {
      vb.create<tensor::ExtractOp>(vl, mT, ValueRange{i}),
      readAt(vb, vl, lT, i, 0, lanes)};
  for (int64_t c = 0; c < outChunks; ++c)
    state.push_back(readAt(vb, vl, t, i, c, dv));
  SmallVector<Value> next = visitBlock(vb, vl, k0, query, end, state);
  Value nt = t;
  for (int64_t c = 0; c < outChunks; ++c)
    nt = writeAt(vb, vl, next[2 + c], nt, i, c, dv);
  Value nm = vb.create<tensor::InsertOp>(vl, next[0], mT, ValueRange{i});
  Value nl = writeAt(vb, vl, next[1], lT, i, 0, lanes);
  vb.create<scf::YieldOp>(vl, ValueRange{nt, nm, nl});
}

/// One key block for the query at position `query`, its state in
/// registers: {m, l, O...} -> {m', l', O'...}.
SmallVector<Value> OneQueryKernel::visitBlock(OpBuilder &kb, Location kl,
                                              Value k0, Value query, Value end,
                                              ValueRange state) {
  Value lastKey = kb.create<arith::SubIOp>(kl, end, one);
  Value endVec = kb.create<vector::BroadcastOp>(kl, i32Vec, toI32(kb, kl, end));
  SmallVector<Value> qv;
  for (int64_t c = 0; c < chunks; ++c)
    qv.push_back(readAt(kb, kl, block.q, at(query), c, d));
  // keys[j] = the indices of the rows of K and V read for key j; seen[g] =
  // the lanes of group g that the query sees.
  SmallVector<SmallVector<Value>> keys;
  SmallVector<Value> s, seen;
  for (int64_t g = 0; g < groups; ++g)
    s.push_back(
        scoreGroup(kb, kl, k0, g, query, lastKey, endVec, qv, keys, seen));
  SoftmaxStep step = onlineSoftmax(kb, kl, s, seen, state[0], state[1]);
  SmallVector<Value> next = {step.m, step.l};
  next.append(accumulateValues(kb, kl, keys, step, state.drop_front(2)));
  return next;
}

/// The scores of keys k0 + g·L + j, j < L, as one vector:
///   s[j] = scale · q·K[k0 + g·L + j]ᵀ (+ bias[.., query, k0 + g·L + j]),
///          -inf where k0 + g·L + j >= end
/// (dot products of D in vectors, summed across lanes by transposeSum).
/// Appends the indices of the rows read (keys clamped to the last one) to
/// `keys`, and the mask of keys seen to `seen`.
Value OneQueryKernel::scoreGroup(OpBuilder &kb, Location kl, Value k0,
                                 int64_t g, Value query, Value lastKey,
                                 Value endVec, ArrayRef<Value> qv,
                                 SmallVectorImpl<SmallVector<Value>> &keys,
                                 SmallVectorImpl<Value> &seen) {
  SmallVector<Value> dots;
  for (int64_t j = 0; j < lanes; ++j) {
    Value key = kb.create<arith::MinSIOp>(
        kl,
        kb.create<arith::AddIOp>(kl, k0, indexConstant(kb, kl, g * lanes + j)),
        lastKey);
    keys.push_back(keyAt(kb, kl, key));
    Value acc;
    for (int64_t c = 0; c < chunks; ++c) {
      Value kc = readAt(kb, kl, block.k, keys.back(), c, d);
      acc = acc ? kb.create<vector::FMAOp>(kl, qv[c], kc, acc).getResult()
                : kb.create<arith::MulFOp>(kl, qv[c], kc).getResult();
    }
    dots.push_back(acc);
  }
  // ids[j] = k0 + g·L + j; seen = ids < end
  Value ids = kb.create<arith::AddIOp>(
      kl,
      kb.create<vector::BroadcastOp>(
          kl, i32Vec,
          toI32(kb, kl,
                kb.create<arith::AddIOp>(kl, k0,
                                         indexConstant(kb, kl, g * lanes)))),
      laneIndex);
  seen.push_back(
      kb.create<arith::CmpIOp>(kl, arith::CmpIPredicate::slt, ids, endVec));
  Value scores =
      kb.create<arith::MulFOp>(kl, transposeSum(kb, kl, dots, lanes), scaleVec);
  if (block.bias)
    scores = kb.create<arith::AddFOp>(
        kl, scores,
        biasAt(kb, kl, query,
               kb.create<arith::AddIOp>(kl, k0,
                                        indexConstant(kb, kl, g * lanes))));
  return kb.create<arith::SelectOp>(kl, seen.back(), scores, ninfVec);
}

/// bias[.., query, key + j] for j < L: the leading indices of the block's
/// row where the bias has them (1 elsewhere); lanes past Sk read 0 (their
/// keys are hidden).
Value OneQueryKernel::biasAt(OpBuilder &kb, Location kl, Value query,
                             Value key) const {
  auto type = tensorTypeOf(block.bias);
  SmallVector<Value> indices;
  for (auto [dim, lead] : llvm::enumerate(block.lead))
    indices.push_back(type.getDimSize(dim) == 1 ? zero : lead);
  indices.push_back(query);
  indices.push_back(key);
  return readVector(kb, kl, vecType, block.bias, indices, fzero,
                    /*inBounds=*/false);
}

/// The online softmax of a key block's scores s (B / L vectors):
///   m' = max(m, max_j s)
///   p = exp(s - m'), exactly 0 for hidden keys;  c = exp(m - m')
///   l' = l·c + Σ p  (a vector: its lanes are summed once, at the end)
OneQueryKernel::SoftmaxStep
OneQueryKernel::onlineSoftmax(OpBuilder &kb, Location kl, ArrayRef<Value> s,
                              ArrayRef<Value> seen, Value m, Value l) {
  SoftmaxStep step;
  Value blockMax = s[0];
  for (int64_t g = 1; g < groups; ++g)
    blockMax = greaterOf(kb, kl, s[g], blockMax);
  step.m = greaterOf(kb, kl, greatestLane(kb, kl, blockMax), m);
  Value mNewVec = kb.create<vector::BroadcastOp>(kl, vecType, step.m);
  for (int64_t g = 0; g < groups; ++g)
    step.p.push_back(kb.create<arith::SelectOp>(
        kl, seen[g],
        kb.create<math::ExpOp>(kl, kb.create<arith::SubFOp>(kl, s[g], mNewVec)),
        zeroVec));
  step.corr = kb.create<math::ExpOp>(
      kl, kb.create<arith::SubFOp>(
              kl, kb.create<vector::BroadcastOp>(kl, vecType, m), mNewVec));
  step.l = kb.create<arith::MulFOp>(kl, l, step.corr);
  for (Value pg : step.p)
    step.l = kb.create<arith::AddFOp>(kl, step.l, pg);
  return step;
}

/// O' = O·c + Σ_j p[j]·V[k0 + j], O the Dv/L vectors `out`.
SmallVector<Value>
OneQueryKernel::accumulateValues(OpBuilder &kb, Location kl,
                                 ArrayRef<SmallVector<Value>> keys,
                                 const SoftmaxStep &step, ValueRange out) {
  SmallVector<Value> next;
  for (int64_t c = 0; c < outChunks; ++c)
    next.push_back(kb.create<arith::MulFOp>(kl, out[c], step.corr));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t j = 0; j < lanes; ++j) {
      Value pj = kb.create<vector::BroadcastOp>(
          kl, vecType, kb.create<vector::ExtractOp>(kl, step.p[g], j));
      for (int64_t c = 0; c < outChunks; ++c)
        next[c] = kb.create<vector::FMAOp>(
            kl, pj, readAt(kb, kl, block.v, keys[g * lanes + j], c, dv),
            next[c]);
    }
  return next;
}

/// tile[i, :] = tile[i, :] / Σ_lanes sums[i, :] for the rows i < qs: a
/// query's weighted sum of values over its softmax denominator, in place
/// (each row read from the tile being written).
Value OneQueryKernel::normalize(Value tile, Value sums) {
  Value pad = floatConstant(b, loc, elt, 0.0);
  auto rowLoop = b.create<scf::ForOp>(
      loc, indexConstant(b, loc, 0), block.qs, indexConstant(b, loc, 1),
      ValueRange{tile},
      [&](OpBuilder &rb, Location rl, Value i, ValueRange iter) {
        Value t = iter[0];
        auto read = [&](Value from, int64_t column, bool whole) -> Value {
          return readVector(rb, rl, vecType, from,
                            ValueRange{i, indexConstant(rb, rl, column)}, pad,
                            whole);
        };
        // inv = 1 / Σ l
        Value sum = sumOfLanes(rb, rl, read(sums, 0, true));
        Value inv = rb.create<vector::BroadcastOp>(
            rl, vecType,
            rb.create<arith::DivFOp>(rl, floatConstant(rb, rl, elt, 1.0), sum));
        for (int64_t column = 0; column < dv; column += lanes) {
          bool whole = column + lanes <= dv;
          t = writeVector(
              rb, rl, rb.create<arith::MulFOp>(rl, read(t, column, whole), inv),
              t, ValueRange{i, indexConstant(rb, rl, column)}, whole);
        }
        rb.create<scf::YieldOp>(rl, t);
      });
  return rowLoop.getResult(0);
}

//===----------------------------------------------------------------------===//
// Queries along the lanes, register-tiled
//===----------------------------------------------------------------------===//

/// Keys per block of the register-tiled kernel: the block's scores (64 x
/// 64 floats for a query block of 64) and its rows of V stay in L1 while
/// the block's queries visit them.
constexpr int64_t kTiledKeyBlock = 64;
/// The score tile of the tiled kernel: 8 keys x 2 vectors of queries, 16
/// accumulators (per column of D, 2 loads of Qᵀ and 8 broadcasts of K),
/// where AVX-512 has 32 vector registers; 4 keys with AVX2's 16.
constexpr int64_t kScoreTileVectors = 2;
static int64_t scoreTileKeys(int64_t lanes) { return lanes >= 16 ? 8 : 4; }
/// Query blocks of fewer queries take the one-query kernel: a score tile
/// is 2 vectors of queries wide.
constexpr int64_t kTiledMinQueries = 16;
/// Vector registers the P·V tile's accumulators may take (of 32).
constexpr int64_t kTiledAccumulators = 24;
/// Loops over a block's keys in the softmax go 4 at a time, with 4 partial
/// maxima or sums: their chains of dependent ops are 4 times shorter.
constexpr int64_t kSoftmaxUnroll = 4;
static_assert(kTiledKeyBlock % kSoftmaxUnroll == 0, "keys go 4 at a time");

/// Queries per group of the P·V step, R: the group's rows of O (R x Dv/L
/// vectors) fit the accumulators.
static int64_t tiledGroupRows(int64_t dv, int64_t lanes) {
  return std::max<int64_t>(1, kTiledAccumulators / llvm::divideCeil(dv, lanes));
}

/// The register-tiled form of OneQueryKernel, for blocks of many queries:
/// the block's queries lie along the lanes of its score vectors, so that
/// the online softmax runs lane-wise, one query per lane, and K is read as
/// it is. Qᵀ is packed once (packQueries: qT[c, i] = scale·Q[q0 + i, c];
/// lanes past the last query repeat it), then each block of B = 64 keys
/// from k0 is visited in three steps:
///   1. Sᵀ[j, i] = Σ_c K[k0 + j, c]·qT[c, i]   (scores: tiles of 8 or 4
///      keys x 2 vectors of queries in registers; keys past the last are
///      read as it)
///   2. per vector of L queries (onlineSoftmax):
///        Sᵀ[j] = -inf where k0 + j >= end_i  (only in blocks that reach
///                past the first query's end; end_i as in OneQueryKernel)
///        m' = max(m, max_j Sᵀ[j]);  P[j] = exp(Sᵀ[j] - m') (in place)
///        c = exp(m - m');           l' = l·c + Σ_j P[j]
///   3. per group of R = tiledGroupRows queries, over the keys any of them
///      sees (accumulateValues): O[i] = O[i]·c_i + Σ_j P[j, i]·V[k0 + j]
///      (R x Dv/L accumulators; per key Dv/L loads of V and R broadcasts
///      of P)
/// and finally O / l (normalize), written to block.tile [qs, Dv]. m' is
/// taken as 0 in the subtractions while it is -inf (no key seen yet), so
/// that P and c are 0 rather than NaN.
class TiledKernel : VectorKernel {
public:
  TiledKernel(OpBuilder &b, Location loc, const QueryBlock &block,
              int64_t lanes);

  /// The block's rows of the output, for blocks of up to `maxQueries`.
  Value build(int64_t maxQueries);

private:
  /// Folds over keys: step(j, Sᵀ[j], acc) gives {Sᵀ[j]', acc'}.
  using KeyStep = function_ref<std::pair<Value, Value>(OpBuilder &, Location,
                                                       Value, Value, Value)>;
  using Combine = function_ref<Value(OpBuilder &, Location, Value, Value)>;

  Value index(OpBuilder &cb, Location cl, int64_t value) const {
    return indexConstant(cb, cl, value);
  }
  Value read(OpBuilder &rb, Location rl, Value t, ValueRange indices,
             bool whole) const {
    return readVector(rb, rl, vecType, t, indices, fzero, whole);
  }
  Value write(OpBuilder &wb, Location wl, Value value, Value t,
              ValueRange indices, bool whole) const {
    return writeVector(wb, wl, value, t, indices, whole);
  }
  Value splatI32(OpBuilder &ib, Location il, Value value) const;
  Value roundUp(OpBuilder &ub, Location ul, Value n, int64_t multiple) const;
  Value rowOf(Value t);

  Value packQueries(Value qT);
  Value packSquares(OpBuilder &pb, Location pl, Value packed, Value j0);
  Value packSquare(OpBuilder &sb, Location sl, Value j0, Value first,
                   Value column, bool whole, int64_t squareWidth, Value into);

  SmallVector<Value> visitKeyBlock(OpBuilder &bb, Location bl, Value k0,
                                   ValueRange iter);
  Value blockScores(OpBuilder &sb, Location sl, Value k0, Value keys, Value sT);
  Value scoreTile(OpBuilder &kb, Location kl, Value k0, Value i0, Value j0,
                  Value sT);
  SmallVector<Value> scoreProducts(OpBuilder &db, Location dl, Value i0,
                                   Value col, ArrayRef<Value> keyRows,
                                   ValueRange acc);

  ValueRange onlineSoftmax(OpBuilder &sb, Location sl, Value k0, Value keys,
                           ValueRange state);
  SmallVector<Value> softmaxLanes(OpBuilder &qb, Location ql, Value k0,
                                  Value keys, Value partial, Value col,
                                  ValueRange iter);
  std::pair<Value, Value> foldKeys(OpBuilder &fb, Location fl, Value col,
                                   Value keys, Value scores, Value init,
                                   bool writes, KeyStep step, Combine combine);
  Value laneEnds(OpBuilder &mb, Location ml, Value col);
  std::pair<Value, Value> maskedMax(OpBuilder &mb, Location ml, Value k0,
                                    Value keys, Value col, Value scores,
                                    bool mask);

  Value accumulateValues(OpBuilder &gb, Location gl, Value k0, Value p,
                         Value cT, Value o);
  void accumulateGroup(OpBuilder &vb, Location vl, Value k0, Value i0,
                       Value groupEnd, Value p, Value cT, Value t);
  SmallVector<Value> addValueProducts(OpBuilder &vb, Location vl, Value k0,
                                      Value keys, Value p,
                                      ArrayRef<Value> lanesOf, ValueRange out);

  Value normalize(Value o, Value sums);

  /// R, B, and the score tile's keys, vectors and queries.
  int64_t rows, keyBlock, tileKeys, tileVectors, tileQueries;
  /// The batch row's [S, D] of Q, K and V, and the packed qT [D, W].
  Value q, k, v, qT;
  /// The block's last query; its queries rounded up to whole score tiles
  /// (the lanes of steps 1 and 2) and to whole groups (the rows of step 3).
  Value lastQuery, width, padded;
  /// end_i of the last query (the most keys), of the first (the fewest),
  /// and the last key any query sees.
  Value blockEnd, firstEnd, lastKey;
};

TiledKernel::TiledKernel(OpBuilder &b, Location loc, const QueryBlock &block,
                         int64_t lanes)
    : VectorKernel(b, loc, block, lanes), rows(tiledGroupRows(dv, lanes)),
      keyBlock(kTiledKeyBlock), tileKeys(scoreTileKeys(lanes)),
      tileVectors(kScoreTileVectors), tileQueries(tileVectors * lanes) {
  assert(tileKeys % kSoftmaxUnroll == 0 &&
         "score tiles hold whole groups of 4");
  assert(!block.keyRows && "tiles read their keys from one batch row of K");
  q = rowOf(block.q);
  k = rowOf(block.k);
  v = rowOf(block.v);
  createLaneConstants();
}

Value TiledKernel::splatI32(OpBuilder &ib, Location il, Value value) const {
  return ib.create<vector::BroadcastOp>(
      il, i32Vec, ib.create<arith::IndexCastOp>(il, ib.getI32Type(), value));
}

/// ceil(n / multiple) · multiple
Value TiledKernel::roundUp(OpBuilder &ub, Location ul, Value n,
                           int64_t multiple) const {
  return ub.create<arith::MulIOp>(
      ul, ub.create<arith::CeilDivUIOp>(ul, n, index(ub, ul, multiple)),
      index(ub, ul, multiple));
}

/// The batch row's [S, D] of Q, K or V, as a view: the loops then index it
/// from one base address.
Value TiledKernel::rowOf(Value t) {
  auto type = tensorTypeOf(t);
  SmallVector<OpFoldResult> offsets(block.lead.begin(), block.lead.end()),
      sizes;
  offsets.append(2, b.getIndexAttr(0));
  sizes.append(rank - 2, b.getIndexAttr(1));
  sizes.push_back(dimOf(b, loc, t, rank - 2));
  // K's D may be `?` where Q's is static (the verifier lets them agree).
  sizes.push_back(dimOf(b, loc, t, rank - 1));
  auto rowType = RankedTensorType::get(type.getShape().take_back(2),
                                       type.getElementType());
  return b.create<tensor::ExtractSliceOp>(loc, rowType, t, offsets, sizes,
                                          unitStrides(b, rank));
}

Value TiledKernel::build(int64_t maxQueries) {
  lastQuery = b.create<arith::SubIOp>(
      loc, b.create<arith::AddIOp>(loc, block.q0, block.qs), one);
  width = roundUp(b, loc, block.qs, tileQueries);
  padded = roundUp(b, loc, block.qs, rows);
  // O = 0, m = -inf, l = 0, of every lane; c and Sᵀ only written before
  // they are read.
  int64_t qWidth = llvm::alignTo(maxQueries, tileQueries);
  Value acc = filled(b, loc, {padded, b.getIndexAttr(dv)}, elt, 0.0);
  Value rowMax = filled(b, loc, {b.getIndexAttr(qWidth)}, elt, -INFINITY);
  Value rowSum = filled(b, loc, {b.getIndexAttr(qWidth)}, elt, 0.0);
  Value corrT = emptyTensor(b, loc, {b.getIndexAttr(qWidth)}, elt);
  Value sT = emptyTensor(
      b, loc, {b.getIndexAttr(keyBlock), b.getIndexAttr(qWidth)}, elt);
  qT = emptyTensor(b, loc, {b.getIndexAttr(d), b.getIndexAttr(qWidth)}, elt);
  blockEnd = endOf(b, loc, lastQuery);
  firstEnd = endOf(b, loc, block.q0);
  lastKey = b.create<arith::SubIOp>(loc, blockEnd, one);
  qT = packQueries(qT);
  auto keyBlocks = b.create<scf::ForOp>(
      loc, zero, blockEnd, index(b, loc, keyBlock),
      ValueRange{acc, rowMax, rowSum, corrT, sT},
      [&](OpBuilder &bb, Location bl, Value k0, ValueRange iter) {
        bb.create<scf::YieldOp>(bl, visitKeyBlock(bb, bl, k0, iter));
      });
  return normalize(keyBlocks.getResult(0), keyBlocks.getResult(2));
}

/// qT[c, j0 + x] = scale·Q[min(q0 + j0 + x, last), c], for the lanes j0 of
/// each score tile's width.
Value TiledKernel::packQueries(Value qT) {
  return b
      .create<scf::ForOp>(
          loc, zero, width, index(b, loc, lanes), ValueRange{qT},
          [&](OpBuilder &pb, Location pl, Value j0, ValueRange iter) {
            pb.create<scf::YieldOp>(pl, packSquares(pb, pl, iter[0], j0));
          })
      .getResult(0);
}

/// The L x L squares of the lanes j0 .. j0 + L: a loop over the squares of
/// D where L divides it (less code to compile), else unrolled.
Value TiledKernel::packSquares(OpBuilder &pb, Location pl, Value packed,
                               Value j0) {
  Value first = pb.create<arith::AddIOp>(pl, block.q0, j0);
  if (d % lanes == 0)
    return pb
        .create<scf::ForOp>(
            pl, zero, index(pb, pl, d), index(pb, pl, lanes),
            ValueRange{packed},
            [&](OpBuilder &sb, Location sl, Value column, ValueRange iter) {
              sb.create<scf::YieldOp>(sl, packSquare(sb, sl, j0, first, column,
                                                     true, lanes, iter[0]));
            })
        .getResult(0);
  for (int64_t ch = 0; ch < chunks; ++ch)
    packed = packSquare(pb, pl, j0, first, index(pb, pl, ch * lanes),
                        (ch + 1) * lanes <= d, std::min(lanes, d - ch * lanes),
                        packed);
  return packed;
}

/// qT[column + x, j0 ..] = scale·(Q[first .., column + x])ᵀ for x <
/// `squareWidth` (first = q0 + j0): L rows of Q transposed in registers.
Value TiledKernel::packSquare(OpBuilder &sb, Location sl, Value j0, Value first,
                              Value column, bool whole, int64_t squareWidth,
                              Value into) {
  SmallVector<Value> sourceRows;
  for (int64_t j = 0; j < lanes; ++j) {
    Value row = sb.create<arith::MinSIOp>(
        sl, sb.create<arith::AddIOp>(sl, first, index(sb, sl, j)), lastQuery);
    sourceRows.push_back(read(sb, sl, q, ValueRange{row, column}, whole));
  }
  SmallVector<Value> columns = transposeSquare(sb, sl, sourceRows);
  for (int64_t x = 0; x < squareWidth; ++x)
    into = write(
        sb, sl, sb.create<arith::MulFOp>(sl, columns[x], scaleVec), into,
        {sb.create<arith::AddIOp>(sl, column, index(sb, sl, x)), j0}, true);
  return into;
}

/// The three steps of the key block at k0: `iter` is {O, m, l, c, Sᵀ}.
SmallVector<Value> TiledKernel::visitKeyBlock(OpBuilder &bb, Location bl,
                                              Value k0, ValueRange iter) {
  // The keys of the block up to the last one any query sees, rounded up to
  // whole score tiles (the last block of a short or padded sequence is not
  // computed whole; the rest are masked)
  Value keys = roundUp(
      bb, bl,
      bb.create<arith::MinSIOp>(bl, index(bb, bl, keyBlock),
                                bb.create<arith::SubIOp>(bl, blockEnd, k0)),
      tileKeys);
  Value sT = blockScores(bb, bl, k0, keys, iter[4]);
  ValueRange softmax = onlineSoftmax(bb, bl, k0, keys,
                                     ValueRange{sT, iter[1], iter[2], iter[3]});
  Value o = accumulateValues(bb, bl, k0, softmax[0], softmax[3], iter[0]);
  return {o, softmax[1], softmax[2], softmax[3], softmax[0]};
}

/// 1. Sᵀ of the block at k0, tile by tile: i0 over the queries, j0 over
/// the block's `keys`.
Value TiledKernel::blockScores(OpBuilder &sb, Location sl, Value k0, Value keys,
                               Value sT) {
  return sb
      .create<scf::ForOp>(
          sl, zero, width, index(sb, sl, tileQueries), ValueRange{sT},
          [&](OpBuilder &tb, Location tl, Value i0, ValueRange tIter) {
            auto keyTiles = tb.create<scf::ForOp>(
                tl, zero, keys, index(tb, tl, tileKeys), tIter,
                [&](OpBuilder &kb, Location kl, Value j0, ValueRange kIter) {
                  kb.create<scf::YieldOp>(
                      kl, scoreTile(kb, kl, k0, i0, j0, kIter[0]));
                });
            tb.create<scf::YieldOp>(tl, keyTiles.getResults());
          })
      .getResult(0);
}

/// The score tile of keys k0 + j0 + x, x < 8 or 4, and queries i0 .. i0 +
/// 2L, a micro-GEMM with its accumulators in registers:
///   Sᵀ[j0 + x, i0 + t·L ..] = Σ_c K[k0 + j0 + x, c]·qT[c, i0 + t·L ..]
/// keys past the last one read as it.
Value TiledKernel::scoreTile(OpBuilder &kb, Location kl, Value k0, Value i0,
                             Value j0, Value sT) {
  SmallVector<Value> keyRows;
  for (int64_t x = 0; x < tileKeys; ++x)
    keyRows.push_back(kb.create<arith::MinSIOp>(
        kl,
        kb.create<arith::AddIOp>(
            kl, k0, kb.create<arith::AddIOp>(kl, j0, index(kb, kl, x))),
        lastKey));
  SmallVector<Value> zeros(tileKeys * tileVectors, zeroVec);
  auto dots = kb.create<scf::ForOp>(
      kl, zero, index(kb, kl, d), one, zeros,
      [&](OpBuilder &db, Location dl, Value col, ValueRange dIter) {
        db.create<scf::YieldOp>(dl,
                                scoreProducts(db, dl, i0, col, keyRows, dIter));
      });
  for (int64_t x = 0; x < tileKeys; ++x)
    for (int64_t t = 0; t < tileVectors; ++t)
      sT = write(kb, kl, dots.getResult(x * tileVectors + t), sT,
                 {kb.create<arith::AddIOp>(kl, j0, index(kb, kl, x)),
                  kb.create<arith::AddIOp>(kl, i0, index(kb, kl, t * lanes))},
                 true);
  return sT;
}

/// One column `col` of D in the score tile: acc[x, t] += K[key_x, col] ·
/// qT[col, i0 + t·L ..] (2 loads of qT, a broadcast of K per key).
SmallVector<Value> TiledKernel::scoreProducts(OpBuilder &db, Location dl,
                                              Value i0, Value col,
                                              ArrayRef<Value> keyRows,
                                              ValueRange acc) {
  SmallVector<Value> queries, next(acc);
  for (int64_t t = 0; t < tileVectors; ++t)
    queries.push_back(
        read(db, dl, qT,
             {col, db.create<arith::AddIOp>(dl, i0, index(db, dl, t * lanes))},
             true));
  for (int64_t x = 0; x < tileKeys; ++x) {
    Value key = db.create<vector::BroadcastOp>(
        dl, vecType,
        db.create<tensor::ExtractOp>(dl, k, ValueRange{keyRows[x], col}));
    for (int64_t t = 0; t < tileVectors; ++t)
      next[x * tileVectors + t] = db.create<vector::FMAOp>(
          dl, key, queries[t], next[x * tileVectors + t]);
  }
  return next;
}

/// 2. The online softmax of the block's scores, vector of queries by vector:
/// `state` is {Sᵀ, m, l, c}; returns them updated, Sᵀ holding P.
ValueRange TiledKernel::onlineSoftmax(OpBuilder &sb, Location sl, Value k0,
                                      Value keys, ValueRange state) {
  // Keys of the block past the first query's end: some lanes are hidden.
  Value partial = sb.create<arith::CmpIOp>(
      sl, arith::CmpIPredicate::sgt,
      sb.create<arith::AddIOp>(sl, k0, index(sb, sl, keyBlock)), firstEnd);
  return sb
      .create<scf::ForOp>(
          sl, zero, width, index(sb, sl, lanes), state,
          [&](OpBuilder &qb, Location ql, Value col, ValueRange iter) {
            qb.create<scf::YieldOp>(
                ql, softmaxLanes(qb, ql, k0, keys, partial, col, iter));
          })
      .getResults();
}

/// The queries in lanes col .. col + L - 1, `iter` {Sᵀ, m, l, c}:
///   m' = max(m, max_j Sᵀ[j])  (Sᵀ masked first where `partial`)
///   P[j] = exp(Sᵀ[j] - m'), in place;  c = exp(m - m');  l' = l·c + Σ_j P[j]
/// with m' as 0 in the subtractions while it is -inf.
SmallVector<Value> TiledKernel::softmaxLanes(OpBuilder &qb, Location ql,
                                             Value k0, Value keys,
                                             Value partial, Value col,
                                             ValueRange iter) {
  Value s = iter[0], mT = iter[1], lT = iter[2], cT = iter[3];
  auto masked = qb.create<scf::IfOp>(
      ql, partial,
      [&](OpBuilder &mb, Location ml) {
        auto [ns, most] = maskedMax(mb, ml, k0, keys, col, s, true);
        mb.create<scf::YieldOp>(ml, ValueRange{ns, most});
      },
      [&](OpBuilder &mb, Location ml) {
        auto [ns, most] = maskedMax(mb, ml, k0, keys, col, s, false);
        mb.create<scf::YieldOp>(ml, ValueRange{ns, most});
      });
  s = masked.getResult(0);
  Value m = read(qb, ql, mT, col, true);
  Value mNew = greaterOf(qb, ql, masked.getResult(1), m);
  Value mSafe = qb.create<arith::SelectOp>(
      ql,
      qb.create<arith::CmpFOp>(ql, arith::CmpFPredicate::OEQ, mNew, ninfVec),
      zeroVec, mNew);
  // P = exp(Sᵀ - m'), in place; Σ_j P[j] in partial sums
  auto [p, sum] = foldKeys(
      qb, ql, col, keys, s, zeroVec, /*writes=*/true,
      [&](OpBuilder &lb, Location ll, Value, Value x, Value sum) {
        Value pj =
            expOfNonPositive(lb, ll, lb.create<arith::SubFOp>(ll, x, mSafe));
        return std::make_pair(
            pj, lb.create<arith::AddFOp>(ll, sum, pj).getResult());
      },
      [](OpBuilder &ab, Location al, Value a, Value b) -> Value {
        return ab.create<arith::AddFOp>(al, b, a);
      });
  Value corr = expOfNonPositive(qb, ql, qb.create<arith::SubFOp>(ql, m, mSafe));
  Value l = qb.create<math::FmaOp>(ql, read(qb, ql, lT, col, true), corr, sum);
  return {p, write(qb, ql, mNew, mT, col, true),
          write(qb, ql, l, lT, col, true), write(qb, ql, corr, cT, col, true)};
}

/// Folds `step` over the keys j < `keys` of lanes `col` of Sᵀ, 4 keys at a
/// time into 4 partial accumulators from `init`; Sᵀ[j] is written back if
/// `writes`. Returns {Sᵀ, the partials reduced by `combine`}.
std::pair<Value, Value> TiledKernel::foldKeys(OpBuilder &fb, Location fl,
                                              Value col, Value keys,
                                              Value scores, Value init,
                                              bool writes, KeyStep step,
                                              Combine combine) {
  constexpr int64_t unroll = kSoftmaxUnroll;
  SmallVector<Value> inits = {scores};
  inits.append(unroll, init);
  auto loop = fb.create<scf::ForOp>(
      fl, zero, keys, index(fb, fl, unroll), inits,
      [&](OpBuilder &lb, Location ll, Value j0, ValueRange iter) {
        Value s = iter[0];
        SmallVector<Value> next = {s};
        for (int64_t u = 0; u < unroll; ++u) {
          Value j = lb.create<arith::AddIOp>(ll, j0, index(lb, ll, u));
          auto [x, acc] =
              step(lb, ll, j, read(lb, ll, s, {j, col}, true), iter[1 + u]);
          if (writes)
            s = write(lb, ll, x, s, {j, col}, true);
          next.push_back(acc);
        }
        next[0] = s;
        lb.create<scf::YieldOp>(ll, next);
      });
  Value total = loop.getResult(1);
  for (int64_t u = 1; u < unroll; ++u)
    total = combine(fb, fl, loop.getResult(1 + u), total);
  return std::make_pair(loop.getResult(0), total);
}

/// end_i of the queries in lanes i = col + x, from the loop indices:
///   end_i = min(len, min(q0 + i, last) + Sk - Sq + 1)  (causal, >= 0)
///   end_i = len                                         (else)
Value TiledKernel::laneEnds(OpBuilder &mb, Location ml, Value col) {
  Value keyEndVec = splatI32(mb, ml, block.keyEnd);
  if (!block.causal)
    return keyEndVec;
  Value queries = mb.create<arith::MinSIOp>(
      ml,
      mb.create<arith::AddIOp>(
          ml, splatI32(mb, ml, mb.create<arith::AddIOp>(ml, block.q0, col)),
          laneIndex),
      splatI32(mb, ml, lastQuery));
  Value visible = mb.create<arith::AddIOp>(
      ml, queries,
      splatI32(mb, ml, mb.create<arith::AddIOp>(ml, block.shift, one)));
  visible = mb.create<arith::MaxSIOp>(ml, visible, splatI32(mb, ml, zero));
  return mb.create<arith::MinSIOp>(ml, keyEndVec, visible);
}

/// {Sᵀ, max_j Sᵀ[j]} of lanes `col`, with Sᵀ[j] = -inf where k0 + j >=
/// end_i if `mask`.
std::pair<Value, Value> TiledKernel::maskedMax(OpBuilder &mb, Location ml,
                                               Value k0, Value keys, Value col,
                                               Value scores, bool mask) {
  Value ends = mask ? laneEnds(mb, ml, col) : Value();
  return foldKeys(
      mb, ml, col, keys, scores, ninfVec, mask,
      [&](OpBuilder &lb, Location ll, Value j, Value x, Value most) {
        if (mask) {
          Value seen = lb.create<arith::CmpIOp>(
              ll, arith::CmpIPredicate::slt,
              splatI32(lb, ll, lb.create<arith::AddIOp>(ll, k0, j)), ends);
          x = lb.create<arith::SelectOp>(ll, seen, x, ninfVec);
        }
        return std::make_pair(x, greaterOf(lb, ll, x, most));
      },
      greaterOf);
}

/// 3. O = O·c + P·V, group of R queries by group, over the keys any query
/// of a group sees; groups that see no key of the block keep O.
Value TiledKernel::accumulateValues(OpBuilder &gb, Location gl, Value k0,
                                    Value p, Value cT, Value o) {
  return gb
      .create<scf::ForOp>(
          gl, zero, padded, index(gb, gl, rows), ValueRange{o},
          [&](OpBuilder &rb, Location rl, Value i0, ValueRange iter) {
            Value first = rb.create<arith::AddIOp>(rl, block.q0, i0);
            Value groupEnd = endOf(rb, rl,
                                   rb.create<arith::MinSIOp>(
                                       rl,
                                       rb.create<arith::AddIOp>(
                                           rl, first, index(rb, rl, rows - 1)),
                                       lastQuery));
            Value visits = rb.create<arith::CmpIOp>(
                rl, arith::CmpIPredicate::slt, k0, groupEnd);
            auto visit = rb.create<scf::IfOp>(
                rl, visits,
                [&](OpBuilder &vb, Location vl) {
                  accumulateGroup(vb, vl, k0, i0, groupEnd, p, cT, iter[0]);
                },
                [&](OpBuilder &vb, Location vl) {
                  vb.create<scf::YieldOp>(vl, iter[0]);
                });
            rb.create<scf::YieldOp>(rl, visit.getResults());
          })
      .getResult(0);
}

/// The rows i0 .. i0 + R of O in `t`, in R x Dv/L accumulators:
///   O[i] = O[i]·c_i + Σ_{j < groupEnd - k0} P[j, i]·V[k0 + j]
/// Rows past the last query read the last lane computed; they are dropped.
void TiledKernel::accumulateGroup(OpBuilder &vb, Location vl, Value k0,
                                  Value i0, Value groupEnd, Value p, Value cT,
                                  Value t) {
  Value lastLane = vb.create<arith::SubIOp>(vl, width, one);
  SmallVector<Value> rowIds, lanesOf, out;
  for (int64_t r = 0; r < rows; ++r) {
    rowIds.push_back(vb.create<arith::AddIOp>(vl, i0, index(vb, vl, r)));
    lanesOf.push_back(vb.create<arith::MinSIOp>(vl, rowIds[r], lastLane));
  }
  // O[i]·c_i
  for (int64_t r = 0; r < rows; ++r) {
    Value corr = vb.create<vector::BroadcastOp>(
        vl, vecType, vb.create<tensor::ExtractOp>(vl, cT, lanesOf[r]));
    for (int64_t ch = 0; ch < outChunks; ++ch)
      out.push_back(vb.create<arith::MulFOp>(
          vl,
          read(vb, vl, t, {rowIds[r], index(vb, vl, ch * lanes)},
               (ch + 1) * lanes <= dv),
          corr));
  }
  Value keys = vb.create<arith::MinSIOp>(
      vl, index(vb, vl, keyBlock), vb.create<arith::SubIOp>(vl, groupEnd, k0));
  SmallVector<Value> sums = addValueProducts(vb, vl, k0, keys, p, lanesOf, out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < outChunks; ++ch)
      t = write(vb, vl, sums[r * outChunks + ch], t,
                {rowIds[r], index(vb, vl, ch * lanes)}, (ch + 1) * lanes <= dv);
  vb.create<scf::YieldOp>(vl, t);
}

/// out[r] += Σ_{j < keys} P[j, lane_r]·V[k0 + j]: per key, Dv/L loads of V
/// and R broadcasts of P.
SmallVector<Value> TiledKernel::addValueProducts(OpBuilder &vb, Location vl,
                                                 Value k0, Value keys, Value p,
                                                 ArrayRef<Value> lanesOf,
                                                 ValueRange out) {
  auto values = vb.create<scf::ForOp>(
      vl, zero, keys, one, out,
      [&](OpBuilder &ob, Location ol, Value j, ValueRange acc) {
        Value key = ob.create<arith::AddIOp>(ol, k0, j);
        SmallVector<Value> vv, next(acc);
        for (int64_t ch = 0; ch < outChunks; ++ch)
          vv.push_back(read(ob, ol, v,
                            ValueRange{key, index(ob, ol, ch * lanes)},
                            (ch + 1) * lanes <= dv));
        for (int64_t r = 0; r < rows; ++r) {
          Value pb = ob.create<vector::BroadcastOp>(
              ol, vecType,
              ob.create<tensor::ExtractOp>(ol, p, ValueRange{j, lanesOf[r]}));
          for (int64_t ch = 0; ch < outChunks; ++ch)
            next[r * outChunks + ch] = ob.create<vector::FMAOp>(
                ol, pb, vv[ch], next[r * outChunks + ch]);
        }
        ob.create<scf::YieldOp>(ol, next);
      });
  return SmallVector<Value>(values.getResults());
}

/// tile[i] = O[i] / l_i
Value TiledKernel::normalize(Value o, Value sums) {
  return b
      .create<scf::ForOp>(
          loc, zero, block.qs, one, ValueRange{block.tile},
          [&](OpBuilder &nb, Location nl, Value i, ValueRange iter) {
            Value inv = nb.create<vector::BroadcastOp>(
                nl, vecType,
                nb.create<arith::DivFOp>(
                    nl, floatConstant(nb, nl, elt, 1.0),
                    nb.create<tensor::ExtractOp>(nl, sums, i)));
            Value t = iter[0];
            for (int64_t ch = 0; ch < outChunks; ++ch) {
              bool whole = (ch + 1) * lanes <= dv;
              t = write(
                  nb, nl,
                  nb.create<arith::MulFOp>(
                      nl,
                      read(nb, nl, o, {i, index(nb, nl, ch * lanes)}, whole),
                      inv),
                  t, {i, index(nb, nl, ch * lanes)}, whole);
            }
            nb.create<scf::YieldOp>(nl, t);
          })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// The loop nest
//===----------------------------------------------------------------------===//

/// Query and key blocks of the linalg kernel, and floats per vector of the
/// target.
struct AttentionTiling {
  int64_t queryBlock, keyBlock, lanes;
};

/// FlashAttention on [N, Sq, D] x [N, Sk, D] x [N, Sk, Dv] (the leading
/// dimensions collapsed into N): a forall over batch rows n and blocks of
/// queries, each block one of the kernels. The linalg kernel visits key
/// blocks [k0, k0 + bk) in turn:
///   S = scale · Q_blk·K_blkᵀ (causal: -inf where k0 + j > q0 + i + Sk - Sq)
///   m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m')
///   l' = l·c + rowsum P;    O' = O·c + P·V_blk
/// and finally O / l. Key padding ends the key loop at lengths[b]; causal
/// attention ends it after the block's last visible key.
class AttentionKernelBuilder {
public:
  AttentionKernelBuilder(OpBuilder &b, AttentionOp op, Value query, Value key,
                         Value value, Value lengths, Value keyRows, Value bias,
                         AttentionTiling tiling);

  /// The attention, of the op's shape up to static sizes.
  Value build();

private:
  Value idx(OpFoldResult r) const {
    return getValueOrCreateConstantIndexOp(b, loc, r);
  }
  SmallVector<Value> leadingIndices(Value row);
  Value keyEndOf(Value batch);
  Value vectorBlock(Value output, Value row, ArrayRef<Value> lead, Value q0,
                    Value qs, Value kEnd);
  Value linalgBlock(Value row, Value q0, Value qs, Value kEnd);
  Value linalgScores(OpBuilder &kb, Location kl, Value qTile, Value kTile,
                     Value q0, Value k0, Value qs, Value ks);
  SmallVector<Value> linalgSoftmaxAndValues(OpBuilder &kb, Location kl, Value s,
                                            Value vTile, ValueRange iter);
  Value expandResult(Value flat);

  OpBuilder &b;
  AttentionOp op;
  Location loc;
  RankedTensorType type;
  Type elt;
  int64_t rank;
  /// The operands as the op has them, and with the leading dimensions
  /// collapsed ([N, S, D]).
  Value query, key, value, q, k, v, lengths, keyRows, bias;
  bool causal;
  double scale;
  AttentionTiling tiling;
  Value n, sq, sk, shift, bq, bk, zero, queryBlocks;
  OpFoldResult d, dv;
  /// Static head sizes take the vector kernels; others the linalg tiles.
  bool vectorized;
};

AttentionKernelBuilder::AttentionKernelBuilder(OpBuilder &b, AttentionOp op,
                                               Value query, Value key,
                                               Value value, Value lengths,
                                               Value keyRows, Value bias,
                                               AttentionTiling tiling)
    : b(b), op(op), loc(op.getLoc()), type(op.getType()),
      elt(type.getElementType()), rank(type.getRank()), query(query), key(key),
      value(value), lengths(lengths), keyRows(keyRows), bias(bias),
      causal(op.getCausal()), scale(op.getScale().convertToDouble()),
      tiling(tiling) {
  q = collapseLeading(b, loc, query, 2);
  k = collapseLeading(b, loc, key, 2);
  v = collapseLeading(b, loc, value, 2);
  n = idx(dimOf(b, loc, q, 0));
  sq = idx(dimOf(b, loc, q, 1));
  sk = idx(dimOf(b, loc, k, 1));
  d = dimOf(b, loc, q, 2);
  dv = dimOf(b, loc, v, 2);
  shift = b.create<arith::SubIOp>(loc, sk, sq);
  bq = indexConstant(b, loc, tiling.queryBlock);
  bk = indexConstant(b, loc, tiling.keyBlock);
  zero = indexConstant(b, loc, 0);
  queryBlocks = b.create<arith::CeilDivUIOp>(loc, sq, bq);
  vectorized = tiling.lanes > 1 && hasVectorAttentionKernel(op);
}

Value AttentionKernelBuilder::build() {
  Value out = emptyTensor(b, loc, {n, sq, dv}, elt);
  auto forall =
      b.create<scf::ForallOp>(loc, ArrayRef<OpFoldResult>{n, queryBlocks},
                              ValueRange{out}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = forall.getBody();
    b.setInsertionPointToStart(body);
    Value row = body->getArgument(0), qb = body->getArgument(1);
    Value output = body->getArguments().back();
    // Queries [q0, q0 + qs) of batch row `row`.
    Value q0 = b.create<arith::MulIOp>(loc, qb, bq);
    Value qs =
        b.create<arith::MinUIOp>(loc, bq, b.create<arith::SubIOp>(loc, sq, q0));
    SmallVector<Value> lead = leadingIndices(row);
    Value kEnd = keyEndOf(lead[0]);
    Value tile = vectorized ? vectorBlock(output, row, lead, q0, qs, kEnd)
                            : linalgBlock(row, q0, qs, kEnd);
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    b.create<tensor::ParallelInsertSliceOp>(
        loc, tile, output, ArrayRef<OpFoldResult>{row, q0, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), qs, dv}, unitStrides(b, 3));
  }
  return expandResult(forall.getResult(0));
}

/// The flattened row's leading indices (batch, head, ..):
/// row = Σ lead[i]·Π_{j>i} size_j
SmallVector<Value> AttentionKernelBuilder::leadingIndices(Value row) {
  SmallVector<Value> lead(rank - 2);
  Value rest = row;
  for (int64_t dim = rank - 3; dim > 0; --dim) {
    Value size = idx(dimOf(b, loc, query, dim));
    lead[dim] = b.create<arith::RemUIOp>(loc, rest, size);
    rest = b.create<arith::DivUIOp>(loc, rest, size);
  }
  lead[0] = rest;
  return lead;
}

/// The key loop's end: len = min(Sk, lengths[batch]); padding hides the
/// keys past it.
Value AttentionKernelBuilder::keyEndOf(Value batch) {
  if (!lengths)
    return sk;
  Value len = b.create<arith::IndexCastOp>(
      loc, b.getIndexType(),
      b.create<tensor::ExtractOp>(loc, lengths, ValueRange{batch}));
  return b.create<arith::MinUIOp>(loc, sk, len);
}

/// A block on vectors, written in place into the rows of the shared output:
/// blocks of many queries take the register-tiled kernel; decoder steps
/// (one query) and other small blocks the one-query kernel.
Value AttentionKernelBuilder::vectorBlock(Value output, Value row,
                                          ArrayRef<Value> lead, Value q0,
                                          Value qs, Value kEnd) {
  Value init = rowTile(b, loc, output, row, q0, qs, dv);
  QueryBlock block = {query,  key,   value, SmallVector<Value>(lead),
                      q0,     qs,    kEnd,  shift,
                      causal, scale, init,  bias,
                      keyRows};
  auto oneQueryAtATime = [&](OpBuilder &ob, Location ol) {
    return OneQueryKernel(ob, ol, block, tiling.lanes).build();
  };
  // The tiled kernel's queries lie along the lanes, across the bias's rows,
  // and it reads its tiles of keys from one batch row of K: a bias or key
  // rows take the one-query kernel at any block size.
  int64_t staticQueries = type.getDimSize(rank - 2);
  if (bias || keyRows ||
      (!ShapedType::isDynamic(staticQueries) &&
       staticQueries < kTiledMinQueries))
    return oneQueryAtATime(b, loc);
  Value many = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, qs,
                                       indexConstant(b, loc, kTiledMinQueries));
  return b
      .create<scf::IfOp>(
          loc, many,
          [&](OpBuilder &tb, Location tl) {
            tb.create<scf::YieldOp>(tl, TiledKernel(tb, tl, block, tiling.lanes)
                                            .build(tiling.queryBlock));
          },
          [&](OpBuilder &ob, Location ol) {
            ob.create<scf::YieldOp>(ol, oneQueryAtATime(ob, ol));
          })
      .getResult(0);
}

/// A block on linalg tiles: the key loop with O, m and l of the block's
/// queries as [qs, Dv] and [qs] tensors; O / l at the end.
Value AttentionKernelBuilder::linalgBlock(Value row, Value q0, Value qs,
                                          Value kEnd) {
  if (causal) {
    // last query of the block sees keys up to q0 + qs - 1 + Sk - Sq
    Value lastVisible = b.create<arith::AddIOp>(
        loc, b.create<arith::AddIOp>(loc, q0, qs), shift);
    kEnd = b.create<arith::MinUIOp>(loc, kEnd, lastVisible);
  }
  Value qTile = rowTile(b, loc, q, row, q0, qs, d);
  Value m0 = filled(b, loc, {qs}, elt, -INFINITY);
  Value l0 = filled(b, loc, {qs}, elt, 0.0);
  Value acc0 = filled(b, loc, {qs, dv}, elt, 0.0);
  auto loop = b.create<scf::ForOp>(
      loc, zero, kEnd, bk, ValueRange{m0, l0, acc0},
      [&](OpBuilder &kb, Location kl, Value k0, ValueRange iter) {
        Value ks = kb.create<arith::MinUIOp>(
            kl, bk, kb.create<arith::SubIOp>(kl, kEnd, k0));
        Value kTile = rowTile(kb, kl, k, row, k0, ks, d);
        Value vTile = rowTile(kb, kl, v, row, k0, ks, dv);
        Value s = linalgScores(kb, kl, qTile, kTile, q0, k0, qs, ks);
        kb.create<scf::YieldOp>(kl,
                                linalgSoftmaxAndValues(kb, kl, s, vTile, iter));
      });
  // O / l
  return withRowValue(b, loc, loop.getResult(2), loop.getResult(1), quotient);
}

/// S = scale · Q_blk·K_blkᵀ, -inf where causality hides key k0 + j from
/// query q0 + i: k0 + j > q0 + i + Sk - Sq.
Value AttentionKernelBuilder::linalgScores(OpBuilder &kb, Location kl,
                                           Value qTile, Value kTile, Value q0,
                                           Value k0, Value qs, Value ks) {
  Value s0 = filled(kb, kl, {qs, ks}, elt, 0.0);
  Value s = kb.create<linalg::MatmulTransposeBOp>(kl, ValueRange{qTile, kTile},
                                                  ValueRange{s0})
                .getResult(0);
  Value scaleV = floatConstant(kb, kl, elt, scale);
  Value ninf = floatConstant(kb, kl, elt, -INFINITY);
  return elementwise(
      kb, kl, cast<RankedTensorType>(s.getType()), ValueRange{s},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value x = nb.create<arith::MulFOp>(nl, args[0], scaleV);
        if (!causal)
          return x;
        Value i =
            nb.create<arith::AddIOp>(nl, q0, nb.create<linalg::IndexOp>(nl, 0));
        Value j =
            nb.create<arith::AddIOp>(nl, k0, nb.create<linalg::IndexOp>(nl, 1));
        Value hidden =
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::sgt, j,
                                     nb.create<arith::AddIOp>(nl, i, shift));
        return nb.create<arith::SelectOp>(nl, hidden, ninf, x).getResult();
      });
}

/// The online softmax and P·V of one key block, `iter` {m, l, O}:
///   m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m')
///   l' = l·c + rowsum P;    O' = O·c + P·V_blk
SmallVector<Value> AttentionKernelBuilder::linalgSoftmaxAndValues(
    OpBuilder &kb, Location kl, Value s, Value vTile, ValueRange iter) {
  Value m = iter[0], lsum = iter[1], acc = iter[2];
  auto rowType = cast<RankedTensorType>(m.getType());
  // m' = max(m, rowmax S)
  Value rowMax = reduceLastAxis(kb, kl, s, -INFINITY, maxCombine);
  Value mNew = elementwise(kb, kl, rowType, ValueRange{m, rowMax}, maxCombine);
  // P = exp(S - m')
  Value p = withRowValue(kb, kl, s, mNew, expOfDifference);
  // c = exp(m - m');  l' = l·c + rowsum P
  Value corr =
      elementwise(kb, kl, rowType, ValueRange{m, mNew}, expOfDifference);
  Value rowSum = reduceLastAxis(kb, kl, p, 0.0, addCombine);
  Value lNew = elementwise(
      kb, kl, rowType, ValueRange{lsum, corr, rowSum},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        return nb.create<arith::AddFOp>(
            nl, nb.create<arith::MulFOp>(nl, args[0], args[1]), args[2]);
      });
  // O' = O·c + P·V
  Value scaled = withRowValue(kb, kl, acc, corr, product);
  Value accNew =
      kb.create<linalg::MatmulOp>(kl, ValueRange{p, vTile}, ValueRange{scaled})
          .getResult(0);
  return {mNew, lNew, accNew};
}

/// [N, Sq, Dv] back to the op's leading dimensions.
Value AttentionKernelBuilder::expandResult(Value flat) {
  SmallVector<int64_t> shape(type.getShape().drop_back(2));
  shape.push_back(ShapedType::kDynamic);
  shape.push_back(tensorTypeOf(v).getDimSize(2));
  return expandLeading(b, loc, flat, RankedTensorType::get(shape, elt), query);
}

/// tfm.attention as AttentionKernelBuilder's loop nest, with a finite bias
/// and key rows in the vector kernel; with another mask, or a bias or key
/// rows and no vectors, decomposed.
struct AttentionLowering : public OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, AttentionTiling tiling)
      : OpConversionPattern(ctx), tiling(tiling) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool vectorKernel = tiling.lanes > 1 && hasVectorAttentionKernel(op);
    if ((op.getMask() || op.getKeyRows()) && !vectorKernel) {
      // An arbitrary additive mask has no loop-index form, and the linalg
      // tiles read K and V in blocks of rows: spell the block out (gathering
      // keys and values through their rows) and let the primitive patterns
      // lower it.
      FailureOr<SmallVector<Value>> values =
          cast<linalg::AggregatedOpInterface>(op.getOperation())
              .decomposeOperation(rewriter);
      if (failed(values))
        return failure();
      rewriter.replaceOp(op, *values);
      return success();
    }
    AttentionKernelBuilder builder(
        rewriter, op, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
        adaptor.getKeyLengths(), adaptor.getKeyRows(), adaptor.getMask(),
        tiling);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(),
                                                builder.build());
    return success();
  }

  AttentionTiling tiling;
};

} // namespace

void mlir::tfm::lowering::populateAttentionLoweringPatterns(
    RewritePatternSet &patterns, int64_t queryBlock, int64_t keyBlock,
    int64_t vectorWidth) {
  patterns.add<AttentionLowering>(
      patterns.getContext(),
      AttentionTiling{queryBlock, keyBlock, vectorWidth});
}

/// A bias the vector kernel adds to the scores: finite by construction
/// (a -inf would need the online softmax's guards), of the scores' rank.
static bool isKernelBias(AttentionOp op) {
  Value mask = op.getMask();
  return mask && mask.getDefiningOp<RelativePositionBiasOp>() &&
         cast<RankedTensorType>(mask.getType()).getRank() ==
             cast<RankedTensorType>(op.getQuery().getType()).getRank();
}

bool mlir::tfm::hasVectorAttentionKernel(AttentionOp op) {
  auto query = cast<RankedTensorType>(op.getQuery().getType());
  auto value = cast<RankedTensorType>(op.getValue().getType());
  return (!op.getMask() || isKernelBias(op)) &&
         query.getElementType().isF32() &&
         !query.isDynamicDim(query.getRank() - 1) &&
         !value.isDynamicDim(value.getRank() - 1);
}
