//===- Attention.cpp - Lower tfm.attention ----------------------*- C++ -*-===//
//
// tfm.attention as a FlashAttention loop nest: the scores are never
// materialized whole, masks come from loop indices and lengths.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Attention
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
      loc, type, source,
      ArrayRef<OpFoldResult>{row, offset, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), size, width},
      unitStrides(b, 3));
}

/// sums[j] = Σ over lanes of accs[j], for L vectors of L lanes, as one
/// vector: log2(L) levels, each adding the two halves of every pair of
/// vectors after a shuffle, so that the vectors halve and the lanes of what
/// is left hold partial sums of more keys (lane x of level s: key x mod 2s).
/// 7 shuffle pairs and adds for 8 keys instead of 8 horizontal reductions.
static Value transposeSum(OpBuilder &b, Location loc, SmallVector<Value> accs,
                          int64_t lanes) {
  for (int64_t s = 1; s < lanes; s *= 2) {
    // Lane x takes, from the first vector of the pair (x / s even) or the
    // second, the lanes at g·2s + x mod s (lo) and g·2s + s + x mod s (hi)
    // of its group g = x / 2s: two partials of the same key.
    SmallVector<int64_t> lo, hi;
    for (int64_t x = 0; x < lanes; ++x) {
      int64_t from = (x / s) % 2 ? lanes : 0;
      int64_t base = from + (x / (2 * s)) * 2 * s + x % s;
      lo.push_back(base);
      hi.push_back(base + s);
    }
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < accs.size(); i += 2)
      next.push_back(b.create<arith::AddFOp>(
          loc, b.create<vector::ShuffleOp>(loc, accs[i], accs[i + 1], lo),
          b.create<vector::ShuffleOp>(loc, accs[i], accs[i + 1], hi)));
    accs = std::move(next);
  }
  return accs.front();
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

/// The vector <0, 1, .., L - 1> of i32: each lane's key offset in a block.
static Value laneIndices(OpBuilder &b, Location loc, int64_t lanes) {
  SmallVector<int32_t> ids;
  for (int64_t j = 0; j < lanes; ++j)
    ids.push_back(int32_t(j));
  return b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(VectorType::get({lanes}, b.getI32Type()),
                                  ArrayRef<int32_t>(ids)));
}

/// tile[i, :] = out[i, :] / Σ_lanes sums[i, :] for the rows i < qs: a
/// query's weighted sum of values over its softmax denominator. `out` may
/// be `tile` itself (then each row is read from the tile being written, so
/// that it is normalized in place).
static Value normalizedRows(OpBuilder &b, Location loc, Value out, Value sums,
                            Value tile, Value qs) {
  int64_t lanes = tensorTypeOf(sums).getDimSize(1);
  int64_t dv = tensorTypeOf(tile).getDimSize(1);
  Type elt = tensorTypeOf(tile).getElementType();
  auto vecType = VectorType::get({lanes}, elt);
  Value fzero = floatConstant(b, loc, elt, 0.0);
  bool inPlace = out == tile;
  auto normalize = b.create<scf::ForOp>(
      loc, indexConstant(b, loc, 0), qs, indexConstant(b, loc, 1),
      ValueRange{tile},
      [&](OpBuilder &rb, Location rl, Value i, ValueRange iter) {
        Value t = iter[0];
        auto read = [&](Value from, int64_t column, bool whole) -> Value {
          return rb.create<vector::TransferReadOp>(
              rl, vecType, from,
              ValueRange{i, indexConstant(rb, rl, column)}, fzero,
              ArrayRef<bool>{whole});
        };
        Value sum = rb.create<vector::ReductionOp>(
            rl, vector::CombiningKind::ADD, read(sums, 0, true));
        Value inv = rb.create<vector::BroadcastOp>(
            rl, vecType,
            rb.create<arith::DivFOp>(rl, floatConstant(rb, rl, elt, 1.0), sum));
        Value from = inPlace ? t : out;
        for (int64_t column = 0; column < dv; column += lanes) {
          bool whole = column + lanes <= dv;
          t = rb.create<vector::TransferWriteOp>(
                    rl, rb.create<arith::MulFOp>(rl, read(from, column, whole),
                                                 inv),
                    t, ValueRange{i, indexConstant(rb, rl, column)},
                    ArrayRef<bool>{whole})
                  .getResult();
          if (inPlace)
            from = t;
        }
        rb.create<scf::YieldOp>(rl, t);
      });
  return normalize.getResult(0);
}

/// Keys per block of the vector kernel: a block of K and V rows of 64
/// floats is 16 KiB, which stays in L1 while the block's queries visit it,
/// and its 32 scores give the exp, the max and the products enough
/// independent work to hide their latencies.
constexpr int64_t kVectorKeyBlock = 32;

/// The vector form of one block of queries q0 .. q0 + qs of the batch row
/// whose leading indices (batch, head, ..) are `lead`, with D and Dv static,
/// written to `tile` [qs, Dv] (the block's rows of the output). Q, K and V
/// keep their leading dimensions: collapsing those of a KV cache's valid
/// prefix (a strided view) would copy the cache every step. Keys go in
/// blocks of B = kVectorKeyBlock, each visited by every query of the block
/// in turn; between key blocks a
/// query's running state lives in the output tile (O), `rowMax` (m) and
/// `rowSum` (l, one vector per query). For query i and key block k0:
///   s[j] = scale · Σ_c q_i[c]·K[k0 + j][c]      (dot products of D in
///          vectors; L of them summed at once by transposeSum, L = the
///          vector width, so s is B / L vectors)
///   s[j] = -inf where k0 + j >= end_i           (padding and causality: end_i
///          = min(len, i + Sk - Sq + 1); blocks past it are skipped)
///   m' = max(m, max_j s);  p = exp(s - m');  c = exp(m - m')
///   l' = l·c + Σ p  (vectors: their lanes are summed once, at the end)
///   O' = O·c + Σ_j p[j]·V[k0 + j]                (Dv/L vector accumulators)
/// and finally O / Σ l. Reads past a query's last key are clamped to it;
/// their weights are 0.
static Value vectorQueryBlock(OpBuilder &b, Location loc, Value q, Value k,
                              Value v, ValueRange lead, Value q0, Value qs,
                              Value keyEnd, Value shift, bool causal,
                              double scale, int64_t lanes, Value tile) {
  int64_t rank = tensorTypeOf(q).getRank();
  int64_t d = tensorTypeOf(q).getDimSize(rank - 1);
  int64_t dv = tensorTypeOf(v).getDimSize(rank - 1);
  Type elt = tensorTypeOf(q).getElementType();
  auto vecType = VectorType::get({lanes}, elt);
  auto i32Vec = VectorType::get({lanes}, b.getI32Type());
  int64_t chunks = llvm::divideCeil(d, lanes);
  int64_t outChunks = llvm::divideCeil(dv, lanes);
  int64_t groups = std::max<int64_t>(1, kVectorKeyBlock / lanes);
  int64_t keyBlock = groups * lanes;
  Value fzero = floatConstant(b, loc, elt, 0.0);
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  // The vector at column chunk c of the row of `t` that `rowIndex` indexes
  // ([.., S, W] at {lead.., pos}, or a tile [qs, W] at {i}); the last chunk
  // of a width that L does not divide is masked (zeros past W).
  auto chunkIndices = [&](OpBuilder &rb, Location rl, ValueRange rowIndex,
                          int64_t c) {
    SmallVector<Value> indices(rowIndex);
    indices.push_back(indexConstant(rb, rl, c * lanes));
    return indices;
  };
  auto readAt = [&](OpBuilder &rb, Location rl, Value t, ValueRange rowIndex,
                    int64_t c, int64_t width) -> Value {
    return rb.create<vector::TransferReadOp>(
        rl, vecType, t, chunkIndices(rb, rl, rowIndex, c), fzero,
        ArrayRef<bool>{(c + 1) * lanes <= width});
  };
  auto writeAt = [&](OpBuilder &rb, Location rl, Value value, Value t,
                     ValueRange rowIndex, int64_t c, int64_t width) -> Value {
    return rb
        .create<vector::TransferWriteOp>(
            rl, value, t, chunkIndices(rb, rl, rowIndex, c),
            ArrayRef<bool>{(c + 1) * lanes <= width})
        .getResult();
  };
  auto toI32 = [&](OpBuilder &ib, Location il, Value index) -> Value {
    return ib.create<arith::IndexCastOp>(il, ib.getI32Type(), index);
  };
  auto endOf = [&](OpBuilder &eb, Location el, Value query) {
    return visibleEnd(eb, el, query, keyEnd, shift, causal);
  };
  Value laneIndex = laneIndices(b, loc, lanes);
  Value scaleVec = floatConstant(b, loc, vecType, scale);
  Value ninfVec = floatConstant(b, loc, vecType, -INFINITY);
  Value zeroVec = floatConstant(b, loc, vecType, 0.0);
  // {lead.., pos}: the row at position pos of Q, K or V.
  auto at = [&](Value pos) {
    SmallVector<Value> indices(lead);
    indices.push_back(pos);
    return indices;
  };

  // One key block for query i at position `query`, its state in registers:
  // {m, l, O...} -> {m', l', O'...}.
  auto visitBlock = [&](OpBuilder &kb, Location kl, Value k0, Value query,
                        Value end, ValueRange state) {
    Value lastKey = kb.create<arith::SubIOp>(kl, end, one);
    Value endVec =
        kb.create<vector::BroadcastOp>(kl, i32Vec, toI32(kb, kl, end));
    SmallVector<Value> qv;
    for (int64_t c = 0; c < chunks; ++c)
      qv.push_back(readAt(kb, kl, q, at(query), c, d));
    // s = scale · q_i·K[k0 + j]ᵀ, masked; keys[j] = the row read for key j
    SmallVector<Value> keys, s, seen;
    for (int64_t g = 0; g < groups; ++g) {
      SmallVector<Value> dots;
      for (int64_t j = 0; j < lanes; ++j) {
        Value key = kb.create<arith::MinSIOp>(
            kl,
            kb.create<arith::AddIOp>(kl, k0,
                                     indexConstant(kb, kl, g * lanes + j)),
            lastKey);
        keys.push_back(key);
        Value acc;
        for (int64_t c = 0; c < chunks; ++c) {
          Value kc = readAt(kb, kl, k, at(key), c, d);
          acc = acc ? kb.create<vector::FMAOp>(kl, qv[c], kc, acc).getResult()
                    : kb.create<arith::MulFOp>(kl, qv[c], kc).getResult();
        }
        dots.push_back(acc);
      }
      Value ids = kb.create<arith::AddIOp>(
          kl,
          kb.create<vector::BroadcastOp>(
              kl, i32Vec,
              toI32(kb, kl,
                    kb.create<arith::AddIOp>(
                        kl, k0, indexConstant(kb, kl, g * lanes)))),
          laneIndex);
      seen.push_back(
          kb.create<arith::CmpIOp>(kl, arith::CmpIPredicate::slt, ids, endVec));
      Value scores = kb.create<arith::MulFOp>(
          kl, transposeSum(kb, kl, dots, lanes), scaleVec);
      s.push_back(kb.create<arith::SelectOp>(kl, seen[g], scores, ninfVec));
    }
    // m' = max(m, max_j s)
    Value blockMax = s[0];
    for (int64_t g = 1; g < groups; ++g)
      blockMax = greaterOf(kb, kl, s[g], blockMax);
    Value m = state[0];
    Value mNew = greaterOf(kb, kl, greatestLane(kb, kl, blockMax), m);
    Value mNewVec = kb.create<vector::BroadcastOp>(kl, vecType, mNew);
    // p = exp(s - m'), exactly 0 for hidden keys; c = exp(m - m')
    SmallVector<Value> p;
    for (int64_t g = 0; g < groups; ++g)
      p.push_back(kb.create<arith::SelectOp>(
          kl, seen[g],
          kb.create<math::ExpOp>(kl,
                                 kb.create<arith::SubFOp>(kl, s[g], mNewVec)),
          zeroVec));
    Value corr = kb.create<math::ExpOp>(
        kl, kb.create<arith::SubFOp>(
                kl, kb.create<vector::BroadcastOp>(kl, vecType, m), mNewVec));
    // l' = l·c + Σ p
    Value l = kb.create<arith::MulFOp>(kl, state[1], corr);
    for (Value pg : p)
      l = kb.create<arith::AddFOp>(kl, l, pg);
    // O' = O·c + Σ_j p[j]·V[k0 + j]
    SmallVector<Value> out;
    for (int64_t c = 0; c < outChunks; ++c)
      out.push_back(kb.create<arith::MulFOp>(kl, state[2 + c], corr));
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 0; j < lanes; ++j) {
        Value pj = kb.create<vector::BroadcastOp>(
            kl, vecType, kb.create<vector::ExtractOp>(kl, p[g], j));
        for (int64_t c = 0; c < outChunks; ++c)
          out[c] = kb.create<vector::FMAOp>(
              kl, pj, readAt(kb, kl, v, at(keys[g * lanes + j]), c, dv),
              out[c]);
      }
    SmallVector<Value> next = {mNew, l};
    next.append(out);
    return next;
  };

  // O = 0, m = -inf, l = 0
  tile = b.create<linalg::FillOp>(loc, fzero, tile).getResult(0);
  Value rowMax = filled(b, loc, {qs}, elt, -INFINITY);
  Value rowSum = filled(b, loc, {qs, b.getIndexAttr(lanes)}, elt, 0.0);
  // The block's last query sees the most keys.
  Value blockEnd = endOf(
      b, loc,
      b.create<arith::SubIOp>(loc, b.create<arith::AddIOp>(loc, q0, qs), one));
  auto keyBlocks = b.create<scf::ForOp>(
      loc, zero, blockEnd, indexConstant(b, loc, keyBlock),
      ValueRange{tile, rowMax, rowSum},
      [&](OpBuilder &bb, Location bl, Value k0, ValueRange blockIter) {
        auto queries = bb.create<scf::ForOp>(
            bl, zero, qs, one, blockIter,
            [&](OpBuilder &rb, Location rl, Value i, ValueRange rowIter) {
              Value t = rowIter[0], mT = rowIter[1], lT = rowIter[2];
              Value query = rb.create<arith::AddIOp>(rl, q0, i);
              Value end = endOf(rb, rl, query);
              // Queries that see no key of the block keep their state.
              Value visits = rb.create<arith::CmpIOp>(
                  rl, arith::CmpIPredicate::slt, k0, end);
              auto visit = rb.create<scf::IfOp>(
                  rl, visits,
                  [&](OpBuilder &vb, Location vl) {
                    SmallVector<Value> state = {
                        vb.create<tensor::ExtractOp>(vl, mT, ValueRange{i}),
                        readAt(vb, vl, lT, i, 0, lanes)};
                    for (int64_t c = 0; c < outChunks; ++c)
                      state.push_back(readAt(vb, vl, t, i, c, dv));
                    SmallVector<Value> next =
                        visitBlock(vb, vl, k0, query, end, state);
                    Value nt = t;
                    for (int64_t c = 0; c < outChunks; ++c)
                      nt = writeAt(vb, vl, next[2 + c], nt, i, c, dv);
                    Value nm = vb.create<tensor::InsertOp>(vl, next[0], mT,
                                                           ValueRange{i});
                    Value nl = writeAt(vb, vl, next[1], lT, i, 0, lanes);
                    vb.create<scf::YieldOp>(vl, ValueRange{nt, nm, nl});
                  },
                  [&](OpBuilder &vb, Location vl) {
                    vb.create<scf::YieldOp>(vl, ValueRange{t, mT, lT});
                  });
              rb.create<scf::YieldOp>(rl, visit.getResults());
            });
        bb.create<scf::YieldOp>(bl, queries.getResults());
      });

  // O / Σ l, in place
  Value out = keyBlocks.getResult(0);
  return normalizedRows(b, loc, out, keyBlocks.getResult(2), out, qs);
}

/// The transpose of L vectors of L lanes (rows[i][j] -> result[j][i]) in
/// log2(L) stages of two-source shuffles: the stage of size s swaps, in
/// every 2s x 2s block, the upper-right and lower-left s x s blocks
/// (L·log2(L) shuffles: 64 for 16 x 16).
static SmallVector<Value> transposeSquare(OpBuilder &b, Location loc,
                                          SmallVector<Value> rows) {
  int64_t lanes = rows.size();
  for (int64_t s = lanes / 2; s >= 1; s /= 2) {
    // Lanes of concat(rows[i], rows[i + s]) for rows i (bit s clear) and
    // i + s: lane x of the first takes (x & s) ? rows[i + s][x - s] :
    // rows[i][x], of the second (x & s) ? rows[i + s][x] : rows[i][x + s].
    SmallVector<int64_t> upper, lower;
    for (int64_t x = 0; x < lanes; ++x) {
      upper.push_back(x & s ? lanes + x - s : x);
      lower.push_back(x & s ? lanes + x : x + s);
    }
    for (int64_t i = 0; i < lanes; ++i) {
      if (i & s)
        continue;
      Value a = rows[i], c = rows[i + s];
      rows[i] = b.create<vector::ShuffleOp>(loc, a, c, upper);
      rows[i + s] = b.create<vector::ShuffleOp>(loc, a, c, lower);
    }
  }
  return rows;
}

/// exp(x) of a vector whose lanes are <= 0 (scores less their running
/// max), in 15 vector ops where math.exp's general polynomial takes about
/// 25; to about 1 ulp down to x = -87, and exactly 0 below (the -inf of
/// hidden keys, and weights under 1.7e-38 next to a softmax sum >= 1, the
/// max's own term):
///   t = x·log2 e + C,  C = 1.5·2^23 + 127  (t's ulp is 1: the rounding
///       leaves n = round(x·log2 e) in t's low bits, bits(t) = .. + 127 + n)
///   n = t - C,  r = x - n·ln 2  (ln 2 in two parts, n·ln2_hi exact:
///       |r| <= ln2 / 2)
///   e^r = Σ_{i<=7} r^i / i!  (Horner; the rest of the series is below
///       5e-9 of it)
///   exp(x) = e^r · 2^n,  2^n = bits(t) << 23  (the exponent field gets
///       127 + n in [1, 127]; the bits above it shift out)
/// NaN lanes stay NaN.
static Value expOfNonPositive(OpBuilder &b, Location loc, Value x) {
  auto type = cast<VectorType>(x.getType());
  auto intType = VectorType::get(type.getShape(), b.getI32Type());
  auto splat = [&](double v) { return floatConstant(b, loc, type, v); };
  Value normal =
      b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UGT, x, splat(-87.0));
  x = b.create<arith::SelectOp>(loc, normal, x, splat(-87.0));
  const double shifter = 12582912.0 + 127.0;
  Value t = b.create<math::FmaOp>(loc, x, splat(M_LOG2E), splat(shifter));
  Value n = b.create<arith::SubFOp>(loc, t, splat(shifter));
  Value r = b.create<math::FmaOp>(loc, n, splat(-0.693359375), x);
  r = b.create<math::FmaOp>(loc, n, splat(2.12194440e-4), r);
  Value poly = splat(1.0 / 5040);
  for (double coefficient :
       {1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0})
    poly = b.create<math::FmaOp>(loc, poly, r, splat(coefficient));
  Value twoToN = b.create<arith::BitcastOp>(
      loc, type,
      b.create<arith::ShLIOp>(
          loc, b.create<arith::BitcastOp>(loc, intType, t),
          b.create<arith::ConstantOp>(
              loc, DenseElementsAttr::get(intType, b.getI32IntegerAttr(23)))));
  return b.create<arith::SelectOp>(
      loc, normal, b.create<arith::MulFOp>(loc, poly, twoToN), splat(0.0));
}

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

/// Queries per group of the P·V step, R: the group's rows of O (R x Dv/L
/// vectors) fit the accumulators.
static int64_t tiledGroupRows(int64_t dv, int64_t lanes) {
  return std::max<int64_t>(1, kTiledAccumulators / llvm::divideCeil(dv, lanes));
}

/// The register-tiled form of vectorQueryBlock, for blocks of many queries:
/// the block's queries lie along the lanes of its score vectors, so that
/// the online softmax runs lane-wise, one query per lane, and K is read as
/// it is. Qᵀ is packed once (qT[c, i] = scale·Q[q0 + i, c]; lanes past the
/// last query repeat it), then each block of B = 64 keys from k0 is
/// visited in three steps:
///   1. Sᵀ[j, i] = Σ_c K[k0 + j, c]·qT[c, i]   (tiles of 8 or 4 keys x 2
///      vectors of queries in registers; keys past the last are read as it)
///   2. per vector of L queries:
///        Sᵀ[j] = -inf where k0 + j >= end_i  (only in blocks that reach
///                past the first query's end; end_i as in vectorQueryBlock)
///        m' = max(m, max_j Sᵀ[j]);  P[j] = exp(Sᵀ[j] - m') (in place)
///        c = exp(m - m');           l' = l·c + Σ_j P[j]
///   3. per group of R = tiledGroupRows queries, over the keys any of them
///      sees: O[i] = O[i]·c_i + Σ_j P[j, i]·V[k0 + j]   (R x Dv/L
///      accumulators; per key Dv/L loads of V and R broadcasts of P)
/// and finally O / l, written to `tile` [qs, Dv]. m' is taken as 0 in the
/// subtractions while it is -inf (no key seen yet), so that P and c are 0
/// rather than NaN.
static Value tiledQueryBlock(OpBuilder &b, Location loc, Value q, Value k,
                             Value v, ValueRange lead, Value q0, Value qs,
                             int64_t maxQueries, Value keyEnd, Value shift,
                             bool causal, double scale, int64_t lanes,
                             Value tile) {
  int64_t rank = tensorTypeOf(q).getRank();
  int64_t d = tensorTypeOf(q).getDimSize(rank - 1);
  int64_t dv = tensorTypeOf(v).getDimSize(rank - 1);
  Type elt = tensorTypeOf(q).getElementType();
  auto vecType = VectorType::get({lanes}, elt);
  auto i32Vec = VectorType::get({lanes}, b.getI32Type());
  int64_t chunks = llvm::divideCeil(d, lanes);
  int64_t outChunks = llvm::divideCeil(dv, lanes);
  int64_t rows = tiledGroupRows(dv, lanes);
  int64_t keyBlock = kTiledKeyBlock;
  int64_t tileKeys = scoreTileKeys(lanes), tileVectors = kScoreTileVectors;
  int64_t tileQueries = tileVectors * lanes;
  Value fzero = floatConstant(b, loc, elt, 0.0);
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  auto c = [&](OpBuilder &cb, Location cl, int64_t value) {
    return indexConstant(cb, cl, value);
  };
  // The batch row's [S, D] of Q, K and V, as views: the loops then index
  // them from one base address.
  auto rowOf = [&](Value t) -> Value {
    auto type = tensorTypeOf(t);
    SmallVector<OpFoldResult> offsets(lead.begin(), lead.end()), sizes;
    offsets.append(2, b.getIndexAttr(0));
    sizes.append(rank - 2, b.getIndexAttr(1));
    sizes.push_back(dimOf(b, loc, t, rank - 2));
    sizes.push_back(b.getIndexAttr(type.getDimSize(rank - 1)));
    auto rowType = RankedTensorType::get(type.getShape().take_back(2),
                                         type.getElementType());
    return b.create<tensor::ExtractSliceOp>(loc, rowType, t, offsets, sizes,
                                            unitStrides(b, rank));
  };
  q = rowOf(q);
  k = rowOf(k);
  v = rowOf(v);
  auto read = [&](OpBuilder &rb, Location rl, Value t, ValueRange indices,
                  bool whole) -> Value {
    return rb.create<vector::TransferReadOp>(rl, vecType, t, indices, fzero,
                                             ArrayRef<bool>{whole});
  };
  auto write = [&](OpBuilder &wb, Location wl, Value value, Value t,
                   ValueRange indices, bool whole) -> Value {
    return wb
        .create<vector::TransferWriteOp>(wl, value, t, indices,
                                         ArrayRef<bool>{whole})
        .getResult();
  };
  auto endOf = [&](OpBuilder &eb, Location el, Value query) {
    return visibleEnd(eb, el, query, keyEnd, shift, causal);
  };
  auto splatI32 = [&](OpBuilder &ib, Location il, Value index) -> Value {
    return ib.create<vector::BroadcastOp>(
        il, i32Vec, ib.create<arith::IndexCastOp>(il, ib.getI32Type(), index));
  };
  Value laneIndex = laneIndices(b, loc, lanes);
  Value scaleVec = floatConstant(b, loc, vecType, scale);
  Value ninfVec = floatConstant(b, loc, vecType, -INFINITY);
  Value zeroVec = floatConstant(b, loc, vecType, 0.0);

  // The lanes of steps 1 and 2: the queries rounded up to whole score
  // tiles; the rows of step 3: rounded up to whole groups.
  Value lastQuery =
      b.create<arith::SubIOp>(loc, b.create<arith::AddIOp>(loc, q0, qs), one);
  auto roundUp = [&](OpBuilder &ub, Location ul, Value n,
                     int64_t multiple) -> Value {
    return ub.create<arith::MulIOp>(
        ul, ub.create<arith::CeilDivUIOp>(ul, n, c(ub, ul, multiple)),
        c(ub, ul, multiple));
  };
  Value width = roundUp(b, loc, qs, tileQueries);
  Value padded = roundUp(b, loc, qs, rows);
  int64_t qWidth = llvm::alignTo(maxQueries, tileQueries);
  Value acc = filled(b, loc, {padded, b.getIndexAttr(dv)}, elt, 0.0);
  Value rowMax = filled(b, loc, {b.getIndexAttr(qWidth)}, elt, -INFINITY);
  Value rowSum = filled(b, loc, {b.getIndexAttr(qWidth)}, elt, 0.0);
  Value corrT = emptyTensor(b, loc, {b.getIndexAttr(qWidth)}, elt);
  Value sT = emptyTensor(
      b, loc, {b.getIndexAttr(keyBlock), b.getIndexAttr(qWidth)}, elt);
  Value qT =
      emptyTensor(b, loc, {b.getIndexAttr(d), b.getIndexAttr(qWidth)}, elt);
  // The last query sees the most keys, the first the fewest.
  Value blockEnd = endOf(b, loc, lastQuery);
  Value firstEnd = endOf(b, loc, q0);
  Value lastKey = b.create<arith::SubIOp>(loc, blockEnd, one);

  // qT[c, j0 + x] = scale·Q[min(q0 + j0 + x, last), c], per L x L square:
  // L rows of Q transposed in registers; a loop over the squares of D
  // where L divides it (less code to compile).
  auto packSquares = [&](OpBuilder &pb, Location pl, Value packed, Value j0) {
    Value first = pb.create<arith::AddIOp>(pl, q0, j0);
    auto square = [&](OpBuilder &sb, Location sl, Value column, bool whole,
                      int64_t squareWidth, Value into) {
      SmallVector<Value> sourceRows;
      for (int64_t j = 0; j < lanes; ++j) {
        Value row = sb.create<arith::MinSIOp>(
            sl, sb.create<arith::AddIOp>(sl, first, c(sb, sl, j)), lastQuery);
        sourceRows.push_back(read(sb, sl, q, ValueRange{row, column}, whole));
      }
      SmallVector<Value> columns = transposeSquare(sb, sl, sourceRows);
      for (int64_t x = 0; x < squareWidth; ++x)
        into = write(
            sb, sl, sb.create<arith::MulFOp>(sl, columns[x], scaleVec), into,
            {sb.create<arith::AddIOp>(sl, column, c(sb, sl, x)), j0}, true);
      return into;
    };
    if (d % lanes == 0)
      return pb
          .create<scf::ForOp>(
              pl, zero, c(pb, pl, d), c(pb, pl, lanes), ValueRange{packed},
              [&](OpBuilder &sb, Location sl, Value column, ValueRange iter) {
                sb.create<scf::YieldOp>(
                    sl, square(sb, sl, column, true, lanes, iter[0]));
              })
          .getResult(0);
    for (int64_t ch = 0; ch < chunks; ++ch)
      packed = square(pb, pl, c(pb, pl, ch * lanes), (ch + 1) * lanes <= d,
                      std::min(lanes, d - ch * lanes), packed);
    return packed;
  };
  qT = b.create<scf::ForOp>(
            loc, zero, width, c(b, loc, lanes), ValueRange{qT},
            [&](OpBuilder &pb, Location pl, Value j0, ValueRange iter) {
              pb.create<scf::YieldOp>(pl, packSquares(pb, pl, iter[0], j0));
            })
           .getResult(0);

  // 1. Sᵀ of the block at k0, tile by tile.
  auto scoresOf = [&](OpBuilder &sb, Location sl, Value k0, Value keys,
                      Value scores) {
    return sb
        .create<scf::ForOp>(
            sl, zero, width, c(sb, sl, tileQueries), ValueRange{scores},
            [&](OpBuilder &tb, Location tl, Value i0, ValueRange tIter) {
              auto keyTiles = tb.create<scf::ForOp>(
                  tl, zero, keys, c(tb, tl, tileKeys), tIter,
                  [&](OpBuilder &kb, Location kl, Value j0, ValueRange kIter) {
                    SmallVector<Value> keyRows;
                    for (int64_t x = 0; x < tileKeys; ++x)
                      keyRows.push_back(kb.create<arith::MinSIOp>(
                          kl,
                          kb.create<arith::AddIOp>(
                              kl, k0,
                              kb.create<arith::AddIOp>(kl, j0, c(kb, kl, x))),
                          lastKey));
                    SmallVector<Value> zeros(tileKeys * tileVectors, zeroVec);
                    auto dots = kb.create<scf::ForOp>(
                        kl, zero, c(kb, kl, d), one, zeros,
                        [&](OpBuilder &db, Location dl, Value col,
                            ValueRange dIter) {
                          SmallVector<Value> queries, next(dIter);
                          for (int64_t t = 0; t < tileVectors; ++t)
                            queries.push_back(
                                read(db, dl, qT,
                                     {col, db.create<arith::AddIOp>(
                                               dl, i0, c(db, dl, t * lanes))},
                                     true));
                          for (int64_t x = 0; x < tileKeys; ++x) {
                            Value key = db.create<vector::BroadcastOp>(
                                dl, vecType,
                                db.create<tensor::ExtractOp>(
                                    dl, k, ValueRange{keyRows[x], col}));
                            for (int64_t t = 0; t < tileVectors; ++t)
                              next[x * tileVectors + t] =
                                  db.create<vector::FMAOp>(
                                      dl, key, queries[t],
                                      next[x * tileVectors + t]);
                          }
                          db.create<scf::YieldOp>(dl, next);
                        });
                    Value out = kIter[0];
                    for (int64_t x = 0; x < tileKeys; ++x)
                      for (int64_t t = 0; t < tileVectors; ++t)
                        out = write(
                            kb, kl, dots.getResult(x * tileVectors + t), out,
                            {kb.create<arith::AddIOp>(kl, j0, c(kb, kl, x)),
                             kb.create<arith::AddIOp>(kl, i0,
                                                      c(kb, kl, t * lanes))},
                            true);
                    kb.create<scf::YieldOp>(kl, out);
                  });
              tb.create<scf::YieldOp>(tl, keyTiles.getResults());
            })
        .getResult(0);
  };

  // 2. The online softmax of the queries in lanes col .. col + L - 1.
  // Loops over the block's keys go 4 at a time, with 4 partial maxima or
  // sums: their chains of dependent ops are 4 times shorter.
  constexpr int64_t unroll = 4;
  static_assert(kTiledKeyBlock % unroll == 0, "keys go 4 at a time");
  assert(tileKeys % unroll == 0 && "score tiles hold whole groups of 4");
  // Folds `step` over the keys j < `keys` of lanes `col` of Sᵀ: step(j,
  // Sᵀ[j], acc) gives {Sᵀ[j]', acc'}; Sᵀ[j] is written back if `writes`.
  // Returns {Sᵀ, the 4 partial accumulators reduced by `combine`}.
  using KeyStep = function_ref<std::pair<Value, Value>(OpBuilder &, Location,
                                                       Value, Value, Value)>;
  auto foldKeys =
      [&](OpBuilder &fb, Location fl, Value col, Value keys, Value scores,
          Value init, bool writes, KeyStep step,
          function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
        SmallVector<Value> inits = {scores};
        inits.append(unroll, init);
        auto loop = fb.create<scf::ForOp>(
            fl, zero, keys, c(fb, fl, unroll), inits,
            [&](OpBuilder &lb, Location ll, Value j0, ValueRange iter) {
              Value s = iter[0];
              SmallVector<Value> next = {s};
              for (int64_t u = 0; u < unroll; ++u) {
                Value j = lb.create<arith::AddIOp>(ll, j0, c(lb, ll, u));
                auto [x, acc] = step(lb, ll, j, read(lb, ll, s, {j, col}, true),
                                     iter[1 + u]);
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
      };
  // {Sᵀ, max_j Sᵀ[j]}, with Sᵀ = -inf where hidden if `mask`.
  auto maskedMax = [&](OpBuilder &mb, Location ml, Value k0, Value keys,
                       Value col, Value scores, bool mask) {
    Value ends;
    if (mask) {
      // end_i of lanes i = col + x: the query min(q0 + i, last)
      Value keyEndVec = splatI32(mb, ml, keyEnd);
      ends = keyEndVec;
      if (causal) {
        Value queries = mb.create<arith::MinSIOp>(
            ml,
            mb.create<arith::AddIOp>(
                ml, splatI32(mb, ml, mb.create<arith::AddIOp>(ml, q0, col)),
                laneIndex),
            splatI32(mb, ml, lastQuery));
        Value visible = mb.create<arith::AddIOp>(
            ml, queries,
            splatI32(mb, ml, mb.create<arith::AddIOp>(ml, shift, one)));
        visible =
            mb.create<arith::MaxSIOp>(ml, visible, splatI32(mb, ml, zero));
        ends = mb.create<arith::MinSIOp>(ml, keyEndVec, visible);
      }
    }
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
  };
  auto softmaxOf = [&](OpBuilder &sb, Location sl, Value k0, Value keys,
                       ValueRange state) {
    // Keys of the block past the first query's end: some lanes are hidden.
    Value partial = sb.create<arith::CmpIOp>(
        sl, arith::CmpIPredicate::sgt,
        sb.create<arith::AddIOp>(sl, k0, c(sb, sl, keyBlock)), firstEnd);
    return sb
        .create<scf::ForOp>(
            sl, zero, width, c(sb, sl, lanes), state,
            [&](OpBuilder &qb, Location ql, Value col, ValueRange iter) {
              Value s = iter[0], mT = iter[1], lT = iter[2], cT = iter[3];
              auto masked = qb.create<scf::IfOp>(
                  ql, partial,
                  [&](OpBuilder &mb, Location ml) {
                    auto [ns, most] = maskedMax(mb, ml, k0, keys, col, s, true);
                    mb.create<scf::YieldOp>(ml, ValueRange{ns, most});
                  },
                  [&](OpBuilder &mb, Location ml) {
                    auto [ns, most] =
                        maskedMax(mb, ml, k0, keys, col, s, false);
                    mb.create<scf::YieldOp>(ml, ValueRange{ns, most});
                  });
              s = masked.getResult(0);
              Value m = read(qb, ql, mT, col, true);
              Value mNew = greaterOf(qb, ql, masked.getResult(1), m);
              Value mSafe = qb.create<arith::SelectOp>(
                  ql,
                  qb.create<arith::CmpFOp>(ql, arith::CmpFPredicate::OEQ, mNew,
                                           ninfVec),
                  zeroVec, mNew);
              // P = exp(Sᵀ - m'), in place; Σ_j P[j] in partial sums
              auto [p, sum] = foldKeys(
                  qb, ql, col, keys, s, zeroVec, /*writes=*/true,
                  [&](OpBuilder &lb, Location ll, Value, Value x, Value sum) {
                    Value pj = expOfNonPositive(
                        lb, ll, lb.create<arith::SubFOp>(ll, x, mSafe));
                    return std::make_pair(
                        pj, lb.create<arith::AddFOp>(ll, sum, pj).getResult());
                  },
                  [](OpBuilder &ab, Location al, Value a, Value b) -> Value {
                    return ab.create<arith::AddFOp>(al, b, a);
                  });
              Value corr = expOfNonPositive(
                  qb, ql, qb.create<arith::SubFOp>(ql, m, mSafe));
              Value l = qb.create<math::FmaOp>(ql, read(qb, ql, lT, col, true),
                                               corr, sum);
              qb.create<scf::YieldOp>(
                  ql, ValueRange{p, write(qb, ql, mNew, mT, col, true),
                                 write(qb, ql, l, lT, col, true),
                                 write(qb, ql, corr, cT, col, true)});
            })
        .getResults();
  };

  // 3. O = O·c + P·V, group by group, over the keys any row of a group sees.
  auto valuesOf = [&](OpBuilder &gb, Location gl, Value k0, Value p, Value cT,
                      Value o) {
    return gb
        .create<scf::ForOp>(
            gl, zero, padded, c(gb, gl, rows), ValueRange{o},
            [&](OpBuilder &rb, Location rl, Value i0, ValueRange iter) {
              Value first = rb.create<arith::AddIOp>(rl, q0, i0);
              Value groupEnd = endOf(
                  rb, rl,
                  rb.create<arith::MinSIOp>(
                      rl,
                      rb.create<arith::AddIOp>(rl, first, c(rb, rl, rows - 1)),
                      lastQuery));
              Value visits = rb.create<arith::CmpIOp>(
                  rl, arith::CmpIPredicate::slt, k0, groupEnd);
              auto visit = rb.create<scf::IfOp>(
                  rl, visits,
                  [&](OpBuilder &vb, Location vl) {
                    Value t = iter[0];
                    // The lanes of the group's rows (rows past the last
                    // query read the last lane computed; they are dropped)
                    Value lastLane = vb.create<arith::SubIOp>(vl, width, one);
                    SmallVector<Value> rowIds, lanesOf, out;
                    for (int64_t r = 0; r < rows; ++r) {
                      rowIds.push_back(
                          vb.create<arith::AddIOp>(vl, i0, c(vb, vl, r)));
                      lanesOf.push_back(
                          vb.create<arith::MinSIOp>(vl, rowIds[r], lastLane));
                    }
                    for (int64_t r = 0; r < rows; ++r) {
                      Value corr = vb.create<vector::BroadcastOp>(
                          vl, vecType,
                          vb.create<tensor::ExtractOp>(vl, cT, lanesOf[r]));
                      for (int64_t ch = 0; ch < outChunks; ++ch)
                        out.push_back(vb.create<arith::MulFOp>(
                            vl,
                            read(vb, vl, t, {rowIds[r], c(vb, vl, ch * lanes)},
                                 (ch + 1) * lanes <= dv),
                            corr));
                    }
                    Value keys = vb.create<arith::MinSIOp>(
                        vl, c(vb, vl, keyBlock),
                        vb.create<arith::SubIOp>(vl, groupEnd, k0));
                    auto values = vb.create<scf::ForOp>(
                        vl, zero, keys, one, out,
                        [&](OpBuilder &ob, Location ol, Value j,
                            ValueRange acc) {
                          Value key = ob.create<arith::AddIOp>(ol, k0, j);
                          SmallVector<Value> vv, next(acc);
                          for (int64_t ch = 0; ch < outChunks; ++ch)
                            vv.push_back(
                                read(ob, ol, v,
                                     ValueRange{key, c(ob, ol, ch * lanes)},
                                     (ch + 1) * lanes <= dv));
                          for (int64_t r = 0; r < rows; ++r) {
                            Value pb = ob.create<vector::BroadcastOp>(
                                ol, vecType,
                                ob.create<tensor::ExtractOp>(
                                    ol, p, ValueRange{j, lanesOf[r]}));
                            for (int64_t ch = 0; ch < outChunks; ++ch)
                              next[r * outChunks + ch] =
                                  ob.create<vector::FMAOp>(
                                      ol, pb, vv[ch], next[r * outChunks + ch]);
                          }
                          ob.create<scf::YieldOp>(ol, next);
                        });
                    for (int64_t r = 0; r < rows; ++r)
                      for (int64_t ch = 0; ch < outChunks; ++ch)
                        t = write(vb, vl, values.getResult(r * outChunks + ch),
                                  t, {rowIds[r], c(vb, vl, ch * lanes)},
                                  (ch + 1) * lanes <= dv);
                    vb.create<scf::YieldOp>(vl, t);
                  },
                  [&](OpBuilder &vb, Location vl) {
                    vb.create<scf::YieldOp>(vl, iter[0]);
                  });
              rb.create<scf::YieldOp>(rl, visit.getResults());
            })
        .getResult(0);
  };

  auto keyBlocks = b.create<scf::ForOp>(
      loc, zero, blockEnd, c(b, loc, keyBlock),
      ValueRange{acc, rowMax, rowSum, corrT, sT},
      [&](OpBuilder &bb, Location bl, Value k0, ValueRange iter) {
        // The keys of the block up to the last one any query sees, rounded
        // up to whole score tiles (the last block of a short or padded
        // sequence is not computed whole; the rest are masked)
        Value keys = roundUp(bb, bl,
                             bb.create<arith::MinSIOp>(
                                 bl, c(bb, bl, keyBlock),
                                 bb.create<arith::SubIOp>(bl, blockEnd, k0)),
                             tileKeys);
        Value scores = scoresOf(bb, bl, k0, keys, iter[4]);
        ValueRange softmax = softmaxOf(
            bb, bl, k0, keys, ValueRange{scores, iter[1], iter[2], iter[3]});
        Value o = valuesOf(bb, bl, k0, softmax[0], softmax[3], iter[0]);
        bb.create<scf::YieldOp>(
            bl, ValueRange{o, softmax[1], softmax[2], softmax[3], softmax[0]});
      });

  // tile[i] = O[i] / l_i
  Value o = keyBlocks.getResult(0), sums = keyBlocks.getResult(2);
  return b
      .create<scf::ForOp>(
          loc, zero, qs, one, ValueRange{tile},
          [&](OpBuilder &nb, Location nl, Value i, ValueRange iter) {
            Value inv = nb.create<vector::BroadcastOp>(
                nl, vecType,
                nb.create<arith::DivFOp>(
                    nl, floatConstant(nb, nl, elt, 1.0),
                    nb.create<tensor::ExtractOp>(nl, sums, i)));
            Value t = iter[0];
            for (int64_t ch = 0; ch < outChunks; ++ch) {
              bool whole = (ch + 1) * lanes <= dv;
              t = write(nb, nl,
                        nb.create<arith::MulFOp>(
                            nl,
                            read(nb, nl, o, {i, c(nb, nl, ch * lanes)}, whole),
                            inv),
                        t, {i, c(nb, nl, ch * lanes)}, whole);
            }
            nb.create<scf::YieldOp>(nl, t);
          })
      .getResult(0);
}

/// FlashAttention on [N, Sq, D] x [N, Sk, D] x [N, Sk, Dv]: for each batch
/// row n and block of queries, visit key blocks [k0, k0 + bk) in turn:
///   S = scale · Q_blk·K_blkᵀ (causal: -inf where k0 + j > q0 + i + Sk - Sq)
///   m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m')
///   l' = l·c + rowsum P;    O' = O·c + P·V_blk
/// and finally O / l. Key padding ends the key loop at lengths[b]; causal
/// attention ends it after the block's last visible key.
struct AttentionLowering : public OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, int64_t queryBlock, int64_t keyBlock,
                    int64_t lanes)
      : OpConversionPattern(ctx), queryBlock(queryBlock), keyBlock(keyBlock),
        lanes(lanes) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getMask()) {
      // An arbitrary additive mask has no loop-index form: spell the block
      // out and let the primitive patterns lower it.
      FailureOr<SmallVector<Value>> values =
          cast<linalg::AggregatedOpInterface>(op.getOperation())
              .decomposeOperation(rewriter);
      if (failed(values))
        return failure();
      rewriter.replaceOp(op, *values);
      return success();
    }
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    int64_t rank = type.getRank();
    Value q = collapseLeading(rewriter, loc, adaptor.getQuery(), 2);
    Value k = collapseLeading(rewriter, loc, adaptor.getKey(), 2);
    Value v = collapseLeading(rewriter, loc, adaptor.getValue(), 2);
    Value lengths = adaptor.getKeyLengths();
    bool causal = op.getCausal();
    double scale = op.getScale().convertToDouble();

    auto idx = [&](OpFoldResult r) {
      return getValueOrCreateConstantIndexOp(rewriter, loc, r);
    };
    Value n = idx(dimOf(rewriter, loc, q, 0));
    Value sq = idx(dimOf(rewriter, loc, q, 1));
    Value sk = idx(dimOf(rewriter, loc, k, 1));
    OpFoldResult d = dimOf(rewriter, loc, q, 2);
    OpFoldResult dv = dimOf(rewriter, loc, v, 2);
    Value shift = rewriter.create<arith::SubIOp>(loc, sk, sq);
    Value bq = indexConstant(rewriter, loc, queryBlock);
    Value bk = indexConstant(rewriter, loc, keyBlock);
    Value zero = indexConstant(rewriter, loc, 0);
    Value queryBlocks = rewriter.create<arith::CeilDivUIOp>(loc, sq, bq);
    // Static head sizes take the vector kernel; others the linalg tiles.
    bool vectorized = lanes > 1 && hasVectorAttentionKernel(op);

    Value out = emptyTensor(rewriter, loc,
                            {n, sq, dv}, elt);
    auto forall = rewriter.create<scf::ForallOp>(
        loc, ArrayRef<OpFoldResult>{n, queryBlocks}, ValueRange{out},
        std::nullopt);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      Block *body = forall.getBody();
      rewriter.setInsertionPointToStart(body);
      Value row = body->getArgument(0), qb = body->getArgument(1);
      Value q0 = rewriter.create<arith::MulIOp>(loc, qb, bq);
      Value qs = rewriter.create<arith::MinUIOp>(
          loc, bq, rewriter.create<arith::SubIOp>(loc, sq, q0));
      // The key loop's end: padding and causality hide keys past it.
      // The flattened row's leading indices (batch, head, ..):
      // row = Σ lead[i]·Π_{j>i} size_j
      SmallVector<Value> lead(rank - 2);
      Value rest = row;
      for (int64_t dim = rank - 3; dim > 0; --dim) {
        Value size = idx(dimOf(rewriter, loc, adaptor.getQuery(), dim));
        lead[dim] = rewriter.create<arith::RemUIOp>(loc, rest, size);
        rest = rewriter.create<arith::DivUIOp>(loc, rest, size);
      }
      lead[0] = rest;
      Value kEnd = sk;
      if (lengths) {
        Value len = rewriter.create<arith::IndexCastOp>(
            loc, rewriter.getIndexType(),
            rewriter.create<tensor::ExtractOp>(loc, lengths,
                                               ValueRange{lead[0]}));
        kEnd = rewriter.create<arith::MinUIOp>(loc, kEnd, len);
      }
      Value tile;
      if (vectorized) {
        // Written in place: the rows of the shared output.
        Value init = rowTile(rewriter, loc, body->getArguments().back(), row,
                             q0, qs, dv);
        auto oneQueryAtATime = [&](OpBuilder &ob, Location ol) {
          return vectorQueryBlock(ob, ol, adaptor.getQuery(), adaptor.getKey(),
                                  adaptor.getValue(), lead, q0, qs, kEnd, shift,
                                  causal, scale, lanes, init);
        };
        // Blocks of many queries take the register-tiled kernel; decoder
        // steps (one query) and other small blocks the one-query kernel.
        int64_t staticQueries = type.getDimSize(rank - 2);
        if (!ShapedType::isDynamic(staticQueries) &&
            staticQueries < kTiledMinQueries) {
          tile = oneQueryAtATime(rewriter, loc);
        } else {
          Value many = rewriter.create<arith::CmpIOp>(
              loc, arith::CmpIPredicate::uge, qs,
              indexConstant(rewriter, loc, kTiledMinQueries));
          tile = rewriter
                     .create<scf::IfOp>(
                         loc, many,
                         [&](OpBuilder &tb, Location tl) {
                           tb.create<scf::YieldOp>(
                               tl, tiledQueryBlock(tb, tl, adaptor.getQuery(),
                                                   adaptor.getKey(),
                                                   adaptor.getValue(), lead, q0,
                                                   qs, queryBlock, kEnd, shift,
                                                   causal, scale, lanes, init));
                         },
                         [&](OpBuilder &ob, Location ol) {
                           ob.create<scf::YieldOp>(ol, oneQueryAtATime(ob, ol));
                         })
                     .getResult(0);
        }
      } else {
        if (causal) {
          // last query of the block sees keys up to q0 + qs - 1 + Sk - Sq
          Value lastVisible = rewriter.create<arith::AddIOp>(
              loc, rewriter.create<arith::AddIOp>(loc, q0, qs), shift);
          kEnd = rewriter.create<arith::MinUIOp>(loc, kEnd, lastVisible);
        }
        Value qTile = rowTile(rewriter, loc, q, row, q0, qs, d);
        Value m0 = filled(rewriter, loc, {qs}, elt, -INFINITY);
        Value l0 = filled(rewriter, loc, {qs}, elt, 0.0);
        Value acc0 = filled(rewriter, loc, {qs, dv}, elt, 0.0);
        auto loop = rewriter.create<scf::ForOp>(
            loc, zero, kEnd, bk, ValueRange{m0, l0, acc0},
            [&](OpBuilder &b, Location l, Value k0, ValueRange iter) {
              Value ks = b.create<arith::MinUIOp>(
                  l, bk, b.create<arith::SubIOp>(l, kEnd, k0));
              Value kTile = rowTile(b, l, k, row, k0, ks, d);
              Value vTile = rowTile(b, l, v, row, k0, ks, dv);
              // S = Q·Kᵀ, then scale and the causal mask
              Value s0 = filled(b, l, {qs, ks}, elt, 0.0);
              Value s = b.create<linalg::MatmulTransposeBOp>(
                             l, ValueRange{qTile, kTile}, ValueRange{s0})
                            .getResult(0);
              Value scaleV = floatConstant(b, l, elt, scale);
              Value ninf = floatConstant(b, l, elt, -INFINITY);
              s = elementwise(
                  b, l, cast<RankedTensorType>(s.getType()), ValueRange{s},
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    Value x = nb.create<arith::MulFOp>(nl, args[0], scaleV);
                    if (!causal)
                      return x;
                    Value i = nb.create<arith::AddIOp>(
                        nl, q0, nb.create<linalg::IndexOp>(nl, 0));
                    Value j = nb.create<arith::AddIOp>(
                        nl, k0, nb.create<linalg::IndexOp>(nl, 1));
                    Value hidden = nb.create<arith::CmpIOp>(
                        nl, arith::CmpIPredicate::sgt, j,
                        nb.create<arith::AddIOp>(nl, i, shift));
                    return nb.create<arith::SelectOp>(nl, hidden, ninf, x)
                        .getResult();
                  });
              // m' = max(m, rowmax S)
              Value m = iter[0], lsum = iter[1], acc = iter[2];
              auto vecType = cast<RankedTensorType>(m.getType());
              Value rowMax = reduceLastAxis(b, l, s, -INFINITY, maxCombine);
              Value mNew = elementwise(b, l, vecType, ValueRange{m, rowMax},
                                       maxCombine);
              // P = exp(S - m')
              Value p = withRowValue(b, l, s, mNew, expOfDifference);
              // c = exp(m - m');  l' = l·c + rowsum P
              Value corr =
                  elementwise(b, l, vecType, ValueRange{m, mNew}, expOfDifference);
              Value rowSum = reduceLastAxis(b, l, p, 0.0, addCombine);
              Value lNew = elementwise(
                  b, l, vecType, ValueRange{lsum, corr, rowSum},
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    return nb.create<arith::AddFOp>(
                        nl, nb.create<arith::MulFOp>(nl, args[0], args[1]),
                        args[2]);
                  });
              // O' = O·c + P·V
              Value scaled = withRowValue(b, l, acc, corr, product);
              Value accNew = b.create<linalg::MatmulOp>(
                                  l, ValueRange{p, vTile}, ValueRange{scaled})
                                 .getResult(0);
              b.create<scf::YieldOp>(l, ValueRange{mNew, lNew, accNew});
            });
        // O / l
        tile = withRowValue(rewriter, loc, loop.getResult(2),
                                  loop.getResult(1), quotient);
      }
      rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
      rewriter.create<tensor::ParallelInsertSliceOp>(
          loc, tile, body->getArguments().back(),
          ArrayRef<OpFoldResult>{row, q0, rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), qs, dv},
          unitStrides(rewriter, 3));
    }
    Value result = expandLeading(rewriter, loc, forall.getResult(0),
                                 RankedTensorType::get(
                                     [&] {
                                       SmallVector<int64_t> s(
                                           type.getShape().drop_back(2));
                                       s.push_back(ShapedType::kDynamic);
                                       s.push_back(
                                           tensorTypeOf(v).getDimSize(2));
                                       return s;
                                     }(),
                                     elt),
                                 adaptor.getQuery());
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, type, result);
    return success();
  }

  int64_t queryBlock, keyBlock;
  // Floats per vector of the target.
  int64_t lanes;
};

} // namespace

void mlir::tfm::lowering::populateAttentionLoweringPatterns(
    RewritePatternSet &patterns, int64_t queryBlock, int64_t keyBlock,
    int64_t vectorWidth) {
  patterns.add<AttentionLowering>(patterns.getContext(), queryBlock,
                                  keyBlock, vectorWidth);
}

bool mlir::tfm::hasVectorAttentionKernel(AttentionOp op) {
  auto query = cast<RankedTensorType>(op.getQuery().getType());
  auto value = cast<RankedTensorType>(op.getValue().getType());
  return !op.getMask() && query.getElementType().isF32() &&
         !query.isDynamicDim(query.getRank() - 1) &&
         !value.isDynamicDim(value.getRank() - 1);
}
