//===- VectorMath.cpp - Vector helpers of the lowering ----------*- C++ -*-===//
//
// What the vector kernels (attention, layer norm) build on vectors of L
// floats.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/VectorMath.h"

#include <cmath>

namespace mlir {
namespace tfm {
namespace lowering {

//===----------------------------------------------------------------------===//
// Reads, writes and broadcasts
//===----------------------------------------------------------------------===//

Value readVector(OpBuilder &b, Location loc, VectorType type, Value source,
                 ValueRange indices, Value pad, bool inBounds) {
  return b.create<vector::TransferReadOp>(loc, type, source, indices, pad,
                                          ArrayRef<bool>{inBounds});
}

Value writeVector(OpBuilder &b, Location loc, Value value, Value dest,
                  ValueRange indices, bool inBounds) {
  return b
      .create<vector::TransferWriteOp>(loc, value, dest, indices,
                                       ArrayRef<bool>{inBounds})
      .getResult();
}

Value broadcast(OpBuilder &b, Location loc, VectorType type, Value scalar) {
  return b.create<vector::BroadcastOp>(loc, type, scalar);
}

Value laneIndices(OpBuilder &b, Location loc, int64_t lanes) {
  SmallVector<int32_t> ids;
  for (int64_t j = 0; j < lanes; ++j)
    ids.push_back(int32_t(j));
  return b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(VectorType::get({lanes}, b.getI32Type()),
                                  ArrayRef<int32_t>(ids)));
}

//===----------------------------------------------------------------------===//
// A row in vectors
//===----------------------------------------------------------------------===//

SmallVector<Value> visitRow(OpBuilder &b, Location loc, int64_t width,
                            int64_t lanes, int64_t unroll, ValueRange init,
                            RowVisitor visit) {
  int64_t vectors = width / lanes, step = unroll * lanes;
  int64_t looped = vectors / unroll * step;
  SmallVector<Value> values(init);
  if (looped > 0) {
    auto loop = b.create<scf::ForOp>(
        loc, indexConstant(b, loc, 0), indexConstant(b, loc, looped),
        indexConstant(b, loc, step), values,
        [&](OpBuilder &lb, Location ll, Value j, ValueRange iters) {
          SmallVector<Value> next(iters);
          for (int64_t u = 0; u < unroll; ++u) {
            Value column = u == 0
                               ? j
                               : lb.create<arith::AddIOp>(
                                       ll, j, indexConstant(lb, ll, u * lanes))
                                     .getResult();
            visit(lb, ll, column, u, true, next);
          }
          lb.create<scf::YieldOp>(ll, next);
        });
    values.assign(loop.getResults().begin(), loop.getResults().end());
  }
  int64_t slot = 0;
  for (int64_t c = looped; c + lanes <= width; c += lanes)
    visit(b, loc, indexConstant(b, loc, c), slot++, true, values);
  if (width % lanes)
    visit(b, loc, indexConstant(b, loc, vectors * lanes), slot % unroll, false,
          values);
  return values;
}

//===----------------------------------------------------------------------===//
// Across lanes
//===----------------------------------------------------------------------===//

Value greatestLane(OpBuilder &b, Location loc, Value v) {
  for (int64_t width = cast<VectorType>(v.getType()).getNumElements();
       width > 1; width /= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t i = 0; i < width / 2; ++i) {
      low.push_back(i);
      high.push_back(width / 2 + i);
    }
    v = greaterOf(b, loc, b.create<vector::ShuffleOp>(loc, v, v, low),
                  b.create<vector::ShuffleOp>(loc, v, v, high));
  }
  return b.create<vector::ExtractOp>(loc, v, ArrayRef<int64_t>{0});
}

Value sumOfLanes(OpBuilder &b, Location loc, ArrayRef<Value> partials) {
  SmallVector<Value> level(partials);
  while (level.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back(b.create<arith::AddFOp>(loc, level[i], level[i + 1]));
    if (level.size() % 2)
      next.push_back(level.back());
    level = std::move(next);
  }
  return b.create<vector::ReductionOp>(loc, vector::CombiningKind::ADD,
                                       level.front());
}

/// Each level adds the two halves of every pair of vectors after a shuffle,
/// so that the vectors halve and the lanes of what is left hold partial
/// sums of more keys (lane x of level s: key x mod 2s). 7 shuffle pairs and
/// adds for 8 keys instead of 8 horizontal reductions.
Value transposeSum(OpBuilder &b, Location loc, SmallVector<Value> accs,
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

/// The stage of size s swaps, in every 2s x 2s block, the upper-right and
/// lower-left s x s blocks (64 shuffles for 16 x 16).
SmallVector<Value> transposeSquare(OpBuilder &b, Location loc,
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

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

/// Exactly 0 below -87: the -inf of hidden keys, and weights under 1.7e-38
/// next to a softmax sum >= 1 (the max's own term):
///   t = x·log2 e + C,  C = 1.5·2^23 + 127  (t's ulp is 1: the rounding
///       leaves n = round(x·log2 e) in t's low bits, bits(t) = .. + 127 + n)
///   n = t - C,  r = x - n·ln 2  (ln 2 in two parts, n·ln2_hi exact:
///       |r| <= ln2 / 2)
///   e^r = Σ_{i<=7} r^i / i!  (Horner; the rest of the series is below
///       5e-9 of it)
///   exp(x) = e^r · 2^n,  2^n = bits(t) << 23  (the exponent field gets
///       127 + n in [1, 127]; the bits above it shift out)
Value expOfNonPositive(OpBuilder &b, Location loc, Value x) {
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

} // namespace lowering
} // namespace tfm
} // namespace mlir
