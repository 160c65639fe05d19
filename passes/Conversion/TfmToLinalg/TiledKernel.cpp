//===- TiledKernel.cpp - Attention of many queries, register-tiled --------===//
//
// TiledKernel builds the online softmax of a block of many queries with
// the queries along the lanes: per block of keys, Sᵀ = K·Qᵀ in register
// tiles, the softmax lane-wise, and P·V in groups of queries.
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
// Queries along the lanes, register-tiled
//===----------------------------------------------------------------------===//

/// Queries per group of the P·V step, R: the group's rows of O (R x Dv/L
/// vectors) fit the `accumulators`.
static int64_t tiledGroupRows(int64_t dv, int64_t lanes, int64_t accumulators) {
  return std::max<int64_t>(1, accumulators / llvm::divideCeil(dv, lanes));
}

/// The register-tiled form of OneQueryKernel, for blocks of many queries:
/// the block's queries lie along the lanes of its score vectors, so that
/// the online softmax runs lane-wise, one query per lane, and K is read as
/// it is. Qᵀ is packed once (packQueries: qT[c, i] = scale·Q[q0 + i, c];
/// lanes past the last query repeat it), then each block of B =
/// tiledKeyBlock keys from k0 is visited in three steps:
///   1. Sᵀ[j, i] = Σ_c K[k0 + j, c]·qT[c, i]   (scores: tiles of
///      scoreTileKeys keys x scoreTileVectors vectors of queries in
///      registers; keys past the last are read as it)
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
              const KernelConfig &config);

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

  /// R, B, the score tile's keys, vectors and queries, and the keys per
  /// step of the softmax loops.
  int64_t rows, keyBlock, tileKeys, tileVectors, tileQueries, unroll;
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
                         const KernelConfig &config)
    : VectorKernel(b, loc, block, config.vectorWidth),
      rows(tiledGroupRows(dv, lanes, config.attention.tiledAccumulators)),
      keyBlock(config.attention.tiledKeyBlock),
      tileKeys(config.attention.scoreTileKeys),
      tileVectors(config.attention.scoreTileVectors),
      tileQueries(tileVectors * lanes), unroll(config.attention.softmaxUnroll) {
  assert(keyBlock % unroll == 0 && tileKeys % unroll == 0 &&
         "key blocks and score tiles hold whole steps of the softmax");
  assert(!block.keyRows && "tiles read their keys from one batch row of K");
  assert(!block.keyStart && "tiles start at the first key");
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

/// Folds `step` over the keys j < `keys` of lanes `col` of Sᵀ, `unroll`
/// keys at a time into as many partial accumulators from `init` (their
/// chains of dependent ops are that many times shorter); Sᵀ[j] is written
/// back if `writes`. Returns {Sᵀ, the partials reduced by `combine`}.
std::pair<Value, Value> TiledKernel::foldKeys(OpBuilder &fb, Location fl,
                                              Value col, Value keys,
                                              Value scores, Value init,
                                              bool writes, KeyStep step,
                                              Combine combine) {
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

} // namespace

Value mlir::tfm::lowering::tiledAttention(OpBuilder &b, Location loc,
                                          const QueryBlock &block,
                                          const KernelConfig &config) {
  return TiledKernel(b, loc, block, config).build(config.attention.queryBlock);
}
