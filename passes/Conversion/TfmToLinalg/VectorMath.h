//===- VectorMath.h - Vector helpers of the lowering ------------*- C++ -*-===//
//
// What the vector kernels (attention, layer norm) build on vectors of L
// floats: reads and writes of a row's vectors, a walk over a row in
// vectors, lane reductions and transposes in registers, and a short exp for
// softmax weights.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CONVERSION_TFMTOLINALG_VECTORMATH_H
#define TFM_PASSES_CONVERSION_TFMTOLINALG_VECTORMATH_H

#include "passes/Conversion/TfmToLinalg/Common.h"

namespace mlir {
namespace tfm {
namespace lowering {

//===----------------------------------------------------------------------===//
// Reads, writes and broadcasts
//===----------------------------------------------------------------------===//

/// source[indices.., last + 0 .. L) as a vector of `type`; unless
/// `inBounds`, the lanes past the source's last dimension read `pad`.
Value readVector(OpBuilder &b, Location loc, VectorType type, Value source,
                 ValueRange indices, Value pad, bool inBounds);

/// `value` written to dest[indices.., last + 0 .. L); unless `inBounds`,
/// the lanes past dest's last dimension are dropped. Returns the new dest.
Value writeVector(OpBuilder &b, Location loc, Value value, Value dest,
                  ValueRange indices, bool inBounds);

/// The vector of `type` whose lanes are all `scalar`.
Value broadcast(OpBuilder &b, Location loc, VectorType type, Value scalar);

/// The vector <0, 1, .., L - 1> of i32: each lane's offset in a block.
Value laneIndices(OpBuilder &b, Location loc, int64_t lanes);

//===----------------------------------------------------------------------===//
// A row in vectors
//===----------------------------------------------------------------------===//

/// visit(b, loc, column, slot, full, values) updates the loop-carried
/// `values` with the vector of the row at `column`; `slot` (< the unroll)
/// numbers the vectors of an iteration so each can have its own
/// accumulator, `full` is false for the tail, whose transfers are masked.
using RowVisitor = function_ref<void(OpBuilder &, Location, Value, int64_t,
                                     bool, SmallVectorImpl<Value> &)>;

/// Visits a row of `width` floats in vectors of `lanes`: `unroll` vectors per
/// iteration of an scf.for, the whole vectors left over unrolled after it,
/// then the last width % lanes floats as one masked vector.
SmallVector<Value> visitRow(OpBuilder &b, Location loc, int64_t width,
                            int64_t lanes, int64_t unroll, ValueRange init,
                            RowVisitor visit);

//===----------------------------------------------------------------------===//
// Across lanes
//===----------------------------------------------------------------------===//

/// The largest lane of a vector (as greaterOf): halves compared log2(L)
/// times, then the first lane.
Value greatestLane(OpBuilder &b, Location loc, Value v);

/// The sum of all lanes of `partials`: a tree of vector adds, then one
/// horizontal reduction.
Value sumOfLanes(OpBuilder &b, Location loc, ArrayRef<Value> partials);

/// sums[j] = Σ over lanes of accs[j], for L vectors of L lanes, as one
/// vector: log2(L) levels of shuffles and adds (L - 1 of each) instead of L
/// horizontal reductions.
Value transposeSum(OpBuilder &b, Location loc, SmallVector<Value> accs,
                   int64_t lanes);

/// The transpose of L vectors of L lanes (rows[i][j] -> result[j][i]) in
/// log2(L) stages of two-source shuffles (L·log2(L) shuffles).
SmallVector<Value> transposeSquare(OpBuilder &b, Location loc,
                                   SmallVector<Value> rows);

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

/// exp(x) of a vector whose lanes are <= 0 (scores less their running
/// max), in 15 vector ops where math.exp's general polynomial takes about
/// 25; to about 1 ulp down to x = -87, and exactly 0 below. NaN lanes stay
/// NaN.
Value expOfNonPositive(OpBuilder &b, Location loc, Value x);

} // namespace lowering
} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_CONVERSION_TFMTOLINALG_VECTORMATH_H
