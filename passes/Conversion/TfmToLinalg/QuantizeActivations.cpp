//===- QuantizeActivations.cpp - int8 and bf16 inputs of the panel kernel ===//
//
// ActivationQuantizer builds the int8 form of a linear's input (the math is
// at quantizeActivations in PanelKernel.h): per row, its range, its zero
// point and scale, and its bytes; over rows in parallel or in one loop.
// roundActivationsToBf16 rounds a bf16 linear's input the same two ways.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/PanelKernel.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

/// Whether x [M, K] is large enough to be narrowed in parallel over rows:
/// more than `serialElements` elements (up to which forking and joining
/// the threads takes about as long as the work).
static Value manyElements(OpBuilder &b, Location loc, Value m, int64_t k,
                          int64_t serialElements) {
  return b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::ugt,
      b.create<arith::MulIOp>(loc, m, indexConstant(b, loc, k)),
      indexConstant(b, loc, serialElements));
}

/// One row's quantization: its bytes u (in the tensor they were written
/// into), zero point z (f32) and scale s_x.
struct QuantizedRow {
  Value u, zero, scale;
};

/// Builds quantizeActivations for x [M, K] on vectors of `lanes`:
///   scf.if (M·K > serialElements)                build
///     scf.forall over rows { quantizeRow }       parallelRows
///   else scf.for over rows { quantizeRow }       serialRows
/// and per row: rowRange (lo, hi), then rowBytes (u) with the scale and zero
/// point between them, each a pass over the row's vectors (columns).
/// scf's body builders hand back `b` itself at the body's start, so every
/// method builds with `b` at its insertion point.
class ActivationQuantizer {
public:
  ActivationQuantizer(OpBuilder &b, Location loc, Value x, int64_t lanes,
                      int64_t serialElements, int64_t padTo);

  /// u [M, K4] (i8), z [M] and s_x [M] (f32).
  std::tuple<Value, Value, Value> build();

private:
  /// `body(column, full, values)` -> values, for one vector of a row.
  using ColumnFn =
      function_ref<SmallVector<Value>(Value column, bool full, ValueRange)>;

  void parallelRows(scf::ForallOp forall);
  ValueRange serialRows();
  QuantizedRow quantizeRow(Value row, Value dest, Value at);
  std::pair<Value, Value> rowRange(Value row);
  Value rowBytes(Value row, Value dest, Value at, Value inverse, Value zero);

  SmallVector<Value> columns(int64_t end, ValueRange init, ColumnFn body);
  Value read(Value row, Value column, bool full);
  Value pick(arith::CmpFPredicate predicate, Value v, Value acc);
  Value constant(Type type, double v) { return floatConstant(b, loc, type, v); }

  OpBuilder &b;
  Location loc;
  Value x;
  int64_t lanes, serialElements;
  Type f32, i8, i32;
  VectorType vecType;
  // K, and K padded to whole quads (int4: whole groups).
  int64_t k, paddedK;
  // M, the results' empty tensors, and 0.0.
  Value m, u0, zeros0, scales0, fzero;
};

} // namespace

ActivationQuantizer::ActivationQuantizer(OpBuilder &b, Location loc, Value x,
                                         int64_t lanes, int64_t serialElements,
                                         int64_t padTo)
    : b(b), loc(loc), x(x), lanes(lanes), serialElements(serialElements),
      f32(b.getF32Type()), i8(b.getI8Type()), i32(b.getI32Type()),
      vecType(VectorType::get({lanes}, f32)), k(tensorTypeOf(x).getDimSize(1)),
      paddedK(llvm::alignTo(k, padTo)) {}

/// In parallel over rows where there are many (an encoder's batch, whose
/// serial loop left the other thread idle), else in one loop (a decoder
/// step's few rows take less time than threads to fork and join).
std::tuple<Value, Value, Value> ActivationQuantizer::build() {
  m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  u0 = emptyTensor(b, loc, {m, b.getIndexAttr(paddedK)}, i8);
  zeros0 = emptyTensor(b, loc, {m}, f32);
  scales0 = emptyTensor(b, loc, {m}, f32);
  fzero = constant(f32, 0);
  Value many = manyElements(b, loc, m, k, serialElements);
  auto choice = b.create<scf::IfOp>(
      loc, many,
      [&](OpBuilder &, Location) {
        auto forall = b.create<scf::ForallOp>(loc, ArrayRef<OpFoldResult>{m},
                                              ValueRange{u0, zeros0, scales0},
                                              std::nullopt);
        b.create<scf::YieldOp>(loc, forall.getResults());
        parallelRows(forall);
      },
      [&](OpBuilder &, Location) {
        b.create<scf::YieldOp>(loc, serialRows());
      });
  return {choice.getResult(0), choice.getResult(1), choice.getResult(2)};
}

/// The body of scf.forall row in [0, M): the row quantized into a one-row
/// slice of u, then u[row, :], z[row] and s_x[row] inserted in parallel.
void ActivationQuantizer::parallelRows(scf::ForallOp forall) {
  OpBuilder::InsertionGuard guard(b);
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  Value row = body->getArgument(0);
  Value sharedU = body->getArgument(1);
  SmallVector<OpFoldResult> rowOffsets = {row, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1),
                                        b.getIndexAttr(paddedK)};
  Value rowSlice = b.create<tensor::ExtractSliceOp>(
      loc, RankedTensorType::get({1, paddedK}, i8), sharedU, rowOffsets,
      rowSizes, unitStrides(b, 2));
  QuantizedRow q = quantizeRow(row, rowSlice, indexConstant(b, loc, 0));
  auto one = [&](Value v) {
    return b.create<tensor::FromElementsOp>(
        loc, RankedTensorType::get({1}, f32), ValueRange{v});
  };
  Value zeroSlice = one(q.zero), scaleSlice = one(q.scale);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  b.create<tensor::ParallelInsertSliceOp>(loc, q.u, sharedU, rowOffsets,
                                          rowSizes, unitStrides(b, 2));
  for (auto [slice, shared] : {std::pair{zeroSlice, body->getArgument(2)},
                               std::pair{scaleSlice, body->getArgument(3)}})
    b.create<tensor::ParallelInsertSliceOp>(
        loc, slice, shared, ArrayRef<OpFoldResult>{row},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)}, unitStrides(b, 1));
}

/// scf.for row in [0, M): u[row, :], z[row] and s_x[row] written in turn.
ValueRange ActivationQuantizer::serialRows() {
  auto rowLoop = b.create<scf::ForOp>(
      loc, indexConstant(b, loc, 0), m, indexConstant(b, loc, 1),
      ValueRange{u0, zeros0, scales0},
      [&](OpBuilder &, Location, Value row, ValueRange outs) {
        QuantizedRow q = quantizeRow(row, outs[0], row);
        Value zeros = b.create<tensor::InsertOp>(loc, q.zero, outs[1], row);
        Value scales = b.create<tensor::InsertOp>(loc, q.scale, outs[2], row);
        b.create<scf::YieldOp>(loc, ValueRange{q.u, zeros, scales});
      });
  return rowLoop.getResults();
}

/// Row `row` of x: u's row written into `dest` at row `at` (u itself, or
/// a one-row slice of it), and the row's zero point and scale:
///   r = hi − lo (255 if 0), s_x = r / 255, inverse = (1 / r) · 255
///   z = round_even(−lo · inverse)
QuantizedRow ActivationQuantizer::quantizeRow(Value row, Value dest, Value at) {
  auto [lo, hi] = rowRange(row);
  Value r = b.create<arith::SubFOp>(loc, hi, lo);
  r = b.create<arith::SelectOp>(
      loc, b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, r, fzero), r,
      constant(f32, 255));
  Value scale = b.create<arith::DivFOp>(loc, r, constant(f32, 255));
  Value inverse = b.create<arith::MulFOp>(
      loc, b.create<arith::DivFOp>(loc, constant(f32, 1), r),
      constant(f32, 255));
  Value zero = b.create<math::RoundEvenOp>(
      loc,
      b.create<arith::MulFOp>(loc, b.create<arith::NegFOp>(loc, lo), inverse));
  Value u = rowBytes(row, dest, at, inverse, zero);
  return {u, zero, scale};
}

/// lo and hi of the row, from 0: one pass of
///   lo = v < lo ? v : lo, hi = v > hi ? v : hi
/// then the lanes' min and max.
std::pair<Value, Value> ActivationQuantizer::rowRange(Value row) {
  Value vzero = constant(vecType, 0);
  SmallVector<Value> bounds = columns(
      k, ValueRange{vzero, vzero},
      [&](Value column, bool full, ValueRange acc) -> SmallVector<Value> {
        Value v = read(row, column, full);
        return {pick(arith::CmpFPredicate::OLT, v, acc[0]),
                pick(arith::CmpFPredicate::OGT, v, acc[1])};
      });
  Value lo = b.create<vector::ReductionOp>(loc, vector::CombiningKind::MINIMUMF,
                                           bounds[0]);
  Value hi = b.create<vector::ReductionOp>(loc, vector::CombiningKind::MAXIMUMF,
                                           bounds[1]);
  return {lo, hi};
}

/// u over the padded row, written into `dest` at row `at`:
///   u[k] = clamp(round_even(x[row, k] · inverse) + z, 0, 255)
/// Its whole vectors may pass K (K = 15 and 16 lanes), and then their reads
/// of x are masked too.
Value ActivationQuantizer::rowBytes(Value row, Value dest, Value at,
                                    Value inverse, Value zero) {
  Value inverseVec = b.create<vector::BroadcastOp>(loc, vecType, inverse);
  Value zeroVec = b.create<vector::BroadcastOp>(loc, vecType, zero);
  bool wholeInK = paddedK / lanes * lanes <= k;
  auto bytesOf = [&](Value column, bool full,
                     ValueRange acc) -> SmallVector<Value> {
    Value q = b.create<math::RoundEvenOp>(
        loc, b.create<arith::MulFOp>(loc, read(row, column, full && wholeInK),
                                     inverseVec));
    q = b.create<arith::AddFOp>(loc, q, zeroVec);
    // clamp(q, 0, 255) by vmaxps / vminps, as in pick.
    q = pick(arith::CmpFPredicate::OGT, q, constant(vecType, 0));
    q = pick(arith::CmpFPredicate::OLT, q, constant(vecType, 255));
    Value bytes = b.create<arith::TruncIOp>(
        loc, VectorType::get({lanes}, i8),
        b.create<arith::FPToSIOp>(loc, VectorType::get({lanes}, i32), q));
    return {b.create<vector::TransferWriteOp>(loc, bytes, acc[0],
                                              ValueRange{at, column},
                                              ArrayRef<bool>{full})
                .getResult()};
  };
  return columns(paddedK, ValueRange{dest}, bytesOf)[0];
}

/// Columns [0, end) in vectors: full ones in a loop, a partial last one
/// (in_bounds false) after it; `body` threads `init` through them.
SmallVector<Value> ActivationQuantizer::columns(int64_t end, ValueRange init,
                                                ColumnFn body) {
  int64_t whole = end / lanes * lanes;
  SmallVector<Value> values(init);
  if (whole)
    values = b.create<scf::ForOp>(
                  loc, indexConstant(b, loc, 0), indexConstant(b, loc, whole),
                  indexConstant(b, loc, lanes), values,
                  [&](OpBuilder &, Location, Value column, ValueRange iter) {
                    b.create<scf::YieldOp>(loc, body(column, true, iter));
                  })
                 .getResults();
  if (whole < end)
    values = body(indexConstant(b, loc, whole), false, values);
  return values;
}

/// x[row, column : column + L], 0 past K unless `full`.
Value ActivationQuantizer::read(Value row, Value column, bool full) {
  return b.create<vector::TransferReadOp>(
      loc, vecType, x, ValueRange{row, column}, fzero, ArrayRef<bool>{full});
}

/// v `predicate` acc ? v : acc, which for OLT / OGT is vminps / vmaxps (a
/// NaN input, which has no quantization, is skipped). arith.minimumf /
/// maximumf, expanded for NaNs and signed zeros, put a compare, a mask and
/// a blend on each accumulator's dependency chain.
Value ActivationQuantizer::pick(arith::CmpFPredicate predicate, Value v,
                                Value acc) {
  return b.create<arith::SelectOp>(
      loc, b.create<arith::CmpFOp>(loc, predicate, v, acc), v, acc);
}

std::tuple<Value, Value, Value>
mlir::tfm::lowering::quantizeActivations(OpBuilder &b, Location loc, Value x,
                                         int64_t lanes, int64_t serialElements,
                                         int64_t padTo) {
  return ActivationQuantizer(b, loc, x, lanes, serialElements, padTo).build();
}

/// dest[row0 : row0 + rows, 0 : K] = round(x[row0 : row0 + rows, 0 : K]):
/// bf16(x), or f32(bf16(x)) where `widen`. Returns the slice written, for
/// the caller to insert.
static Value roundRows(OpBuilder &b, Location loc, Value x, Value dest,
                       OpFoldResult row0, OpFoldResult rows, bool widen) {
  int64_t k = tensorTypeOf(x).getDimSize(1);
  SmallVector<OpFoldResult> offsets = {row0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {rows, b.getIndexAttr(k)};
  Value from = b.create<tensor::ExtractSliceOp>(loc, x, offsets, sizes,
                                                unitStrides(b, 2));
  Value into = b.create<tensor::ExtractSliceOp>(loc, dest, offsets, sizes,
                                                unitStrides(b, 2));
  Type f32 = tensorTypeOf(x).getElementType();
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{into.getType()}, ValueRange{from}, ValueRange{into},
          SmallVector<AffineMap>(2, b.getMultiDimIdentityMap(2)), parallel(2),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value narrow =
                nb.create<arith::TruncFOp>(nl, nb.getBF16Type(), args[0]);
            if (widen)
              narrow = nb.create<arith::ExtFOp>(nl, f32, narrow);
            nb.create<linalg::YieldOp>(nl, narrow);
          })
      .getResult(0);
}

/// Both branches write the rounded rows into the one `dest` (its padding
/// column zeroed first): the result keeps dest's plain layout, which every
/// bf16 kernel then reads (branches yielding tensors of their own made it
/// a dynamic strided one, and those kernels slower).
Value mlir::tfm::lowering::roundActivationsToBf16(OpBuilder &b, Location loc,
                                                  Value x, bool dotPairs,
                                                  int64_t serialElements) {
  RankedTensorType xType = tensorTypeOf(x);
  int64_t k = xType.getDimSize(1), k2 = llvm::alignTo(k, 2);
  Type elt = dotPairs ? b.getBF16Type() : xType.getElementType();
  Value m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  SmallVector<OpFoldResult> zero = {b.getIndexAttr(0), b.getIndexAttr(0)};
  Value dest = emptyTensor(b, loc, {m, b.getIndexAttr(k2)}, elt);
  if (k2 != k) {
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(k)};
    SmallVector<OpFoldResult> sizes = {m, b.getIndexAttr(1)};
    Value column = b.create<tensor::ExtractSliceOp>(loc, dest, offsets, sizes,
                                                    unitStrides(b, 2));
    column =
        b.create<linalg::FillOp>(loc, floatConstant(b, loc, elt, 0.0), column)
            .getResult(0);
    dest = b.create<tensor::InsertSliceOp>(loc, column, dest, offsets, sizes,
                                           unitStrides(b, 2));
  }
  SmallVector<OpFoldResult> written = {m, b.getIndexAttr(k)};
  auto parallelRows = [&](OpBuilder &pb, Location pl) {
    auto forall = pb.create<scf::ForallOp>(pl, ArrayRef<OpFoldResult>{m},
                                           ValueRange{dest}, std::nullopt);
    OpBuilder::InsertionGuard guard(pb);
    Block *body = forall.getBody();
    pb.setInsertionPointToStart(body);
    Value row = body->getArgument(0), shared = body->getArgument(1);
    Value rounded =
        roundRows(pb, pl, x, shared, row, pb.getIndexAttr(1), !dotPairs);
    pb.setInsertionPointToStart(forall.getTerminator().getBody());
    pb.create<tensor::ParallelInsertSliceOp>(
        pl, rounded, shared, ArrayRef<OpFoldResult>{row, pb.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{pb.getIndexAttr(1), pb.getIndexAttr(k)},
        unitStrides(pb, 2));
    pb.setInsertionPointAfter(forall);
    pb.create<scf::YieldOp>(pl, forall.getResult(0));
  };
  auto serialRows = [&](OpBuilder &sb, Location sl) {
    Value rounded =
        roundRows(sb, sl, x, dest, sb.getIndexAttr(0), m, !dotPairs);
    sb.create<scf::YieldOp>(
        sl, sb.create<tensor::InsertSliceOp>(sl, rounded, dest, zero, written,
                                             unitStrides(sb, 2))
                .getResult());
  };
  return b
      .create<scf::IfOp>(loc, manyElements(b, loc, m, k, serialElements),
                         parallelRows, serialRows)
      .getResult(0);
}
