//===- OneQueryKernel.cpp - Attention one query at a time -------*- C++ -*-===//
//
// OneQueryKernel builds the online softmax of a block of few queries (a
// decoder step's one) with vectors along D: per query and block of keys,
// the scores as dot products, the softmax step, and P·V.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/VectorAttention.h"
#include "passes/Conversion/TfmToLinalg/VectorMath.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// One query at a time
//===----------------------------------------------------------------------===//

/// The vector form of one block of queries, for blocks of few queries (a
/// decoder step's one). Keys go in blocks of B = oneQueryKeyBlock, each
/// visited by every query of the block in turn; between key blocks a
/// query's running state lives in the output tile (O), `rowMax` (m) and
/// `rowSum` (l, one vector per query). For query i and key block k0:
///   s[j] = scale · Σ_c q_i[c]·K[k0 + j][c]      (scores: dot products of D
///          in vectors; L of them summed at once by transposeSum, L = the
///          vector width, so s is B / L vectors)
///   s[j] = -inf where k0 + j >= end_i           (padding and causality: end_i
///          = min(len, i + Sk - Sq + 1); blocks past it are skipped, and
///          the first block begins at the row's key start)
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
                 const KernelConfig &config)
      : VectorKernel(b, loc, block, config.vectorWidth),
        groups(std::max<int64_t>(1, config.attention.oneQueryKeyBlock /
                                        config.vectorWidth)),
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
  Value firstKey = block.keyStart ? block.keyStart : zero;
  auto keyBlocks = b.create<scf::ForOp>(
      loc, firstKey, blockEnd, indexConstant(b, loc, keyBlock),
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

} // namespace

Value mlir::tfm::lowering::oneQueryAttention(OpBuilder &b, Location loc,
                                             const QueryBlock &block,
                                             const KernelConfig &config) {
  return OneQueryKernel(b, loc, block, config).build();
}
