//===- Common.cpp - Helpers of the tfm to linalg lowering -------*- C++ -*-===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <cmath>

namespace mlir {
namespace tfm {
namespace lowering {

RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

OpFoldResult dimOf(OpBuilder &b, Location loc, Value tensor, int64_t dim) {
  int64_t size = tensorTypeOf(tensor).getDimSize(dim);
  if (!ShapedType::isDynamic(size))
    return b.getIndexAttr(size);
  return b.create<tensor::DimOp>(loc, tensor, dim).getResult();
}

SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value tensor) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0, e = tensorTypeOf(tensor).getRank(); d < e; ++d)
    sizes.push_back(dimOf(b, loc, tensor, d));
  return sizes;
}

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elt) {
  return b.create<tensor::EmptyOp>(loc, sizes, elt);
}

/// A float constant of type `t`: a scalar, or a splat vector.
Value floatConstant(OpBuilder &b, Location loc, Type t, double v) {
  if (auto vector = dyn_cast<VectorType>(t))
    return b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(
                 vector, b.getFloatAttr(vector.getElementType(), v)));
  return b.create<arith::ConstantOp>(loc, b.getFloatAttr(t, v));
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

Value filled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elt,
             double v) {
  Value empty = emptyTensor(b, loc, sizes, elt);
  return b.create<linalg::FillOp>(loc, floatConstant(b, loc, elt, v), empty)
      .getResult(0);
}

SmallVector<OpFoldResult> unitStrides(OpBuilder &b, int64_t rank) {
  return SmallVector<OpFoldResult>(rank, b.getIndexAttr(1));
}

SmallVector<IteratorType> parallel(int64_t n) {
  return SmallVector<IteratorType>(n, IteratorType::parallel);
}

/// Sizes of a result that broadcasts `inputs` NumPy-style: each dimension
/// static, or read from an input whose aligned dimension is not a
/// broadcast 1. Dynamic dimensions are taken to be equal, not to broadcast.
SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                         RankedTensorType result,
                                         ValueRange inputs) {
  int64_t rank = result.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!result.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(result.getDimSize(d)));
      continue;
    }
    OpFoldResult size;
    for (Value in : inputs) {
      auto t = tensorTypeOf(in);
      int64_t id = d - (rank - t.getRank());
      if (id >= 0 && t.getDimSize(id) != 1) {
        size = dimOf(b, loc, in, id);
        break;
      }
    }
    assert(size && "a dynamic result dimension with no source");
    sizes.push_back(size);
  }
  return sizes;
}

/// The map from the result's iteration space to a broadcast input: aligned
/// on the last dimension, size-1 dimensions pinned to 0.
AffineMap broadcastMap(RankedTensorType input, RankedTensorType result) {
  MLIRContext *ctx = input.getContext();
  int64_t rank = result.getRank(), lead = rank - input.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    bool stretched =
        input.getDimSize(d) == 1 && result.getDimSize(d + lead) != 1;
    exprs.push_back(stretched ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(d + lead, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// result[i] = body(inputs[i]...), inputs broadcast to the result.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType type,
                  ValueRange inputs, BodyFn body) {
  Value init = emptyTensor(b, loc, broadcastSizes(b, loc, type, inputs),
                           type.getElementType());
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(tensorTypeOf(in), type));
  maps.push_back(b.getMultiDimIdentityMap(type.getRank()));
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{type}, inputs, ValueRange{init}, maps,
          parallel(type.getRank()),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            nb.create<linalg::YieldOp>(nl, body(nb, nl, args.drop_back()));
          })
      .getResult(0);
}

/// Reduces `input` over its last axis: result[..] = combine over j of
/// map(input[.., j]), starting from `init`.
Value reduceLastAxis(OpBuilder &b, Location loc, Value input, double init,
                     BodyFn combine) {
  auto type = tensorTypeOf(input);
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, input);
  sizes.pop_back();
  Value acc = filled(b, loc, sizes, type.getElementType(), init);
  SmallVector<IteratorType> iters = parallel(rank);
  iters.back() = IteratorType::reduction;
  AffineMap in = b.getMultiDimIdentityMap(rank);
  AffineMap out = in.dropResult(rank - 1);
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{acc.getType()}, ValueRange{input}, ValueRange{acc},
          ArrayRef<AffineMap>{in, out}, iters,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            nb.create<linalg::YieldOp>(nl, combine(nb, nl, args));
          })
      .getResult(0);
}

/// result[.., j] = body(x[.., j], rowValue[..]): combines each element with
/// a value of its row (the tensor without its last axis).
Value withRowValue(OpBuilder &b, Location loc, Value x, Value rowValue,
                   BodyFn body) {
  auto type = tensorTypeOf(x);
  int64_t rank = type.getRank();
  AffineMap full = b.getMultiDimIdentityMap(rank);
  AffineMap row = full.dropResult(rank - 1);
  Value init = emptyTensor(b, loc, sizesOf(b, loc, x), type.getElementType());
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{type}, ValueRange{x, rowValue}, ValueRange{init},
          ArrayRef<AffineMap>{full, row, full}, parallel(rank),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            nb.create<linalg::YieldOp>(nl, body(nb, nl, args.drop_back()));
          })
      .getResult(0);
}

Value expOfDifference(OpBuilder &b, Location l, ValueRange args) {
  return b.create<math::ExpOp>(l, b.create<arith::SubFOp>(l, args[0], args[1]));
}
Value product(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::MulFOp>(l, args[0], args[1]);
}
Value quotient(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::DivFOp>(l, args[0], args[1]);
}

/// Moves `axis` of `input` last (a transpose), or returns `input` if it is.
Value axisLast(OpBuilder &b, Location loc, Value input, int64_t axis,
               SmallVectorImpl<int64_t> &perm) {
  auto type = tensorTypeOf(input);
  int64_t rank = type.getRank();
  perm.clear();
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  if (axis == rank - 1)
    return input;
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, input);
  SmallVector<OpFoldResult> permuted;
  for (int64_t p : perm)
    permuted.push_back(sizes[p]);
  Value init = emptyTensor(b, loc, permuted, type.getElementType());
  return b.create<linalg::TransposeOp>(loc, input, init, perm)->getResult(0);
}

Value undoAxisLast(OpBuilder &b, Location loc, Value input,
                   ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return input;
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, input), permuted;
  for (int64_t p : inverse)
    permuted.push_back(sizes[p]);
  Value init =
      emptyTensor(b, loc, permuted, tensorTypeOf(input).getElementType());
  return b.create<linalg::TransposeOp>(loc, input, init, inverse)->getResult(0);
}

/// Collapses all leading dimensions: [d0, ..., dn-1, k] -> [d0*...*dn-1, k].
Value collapseLeading(OpBuilder &b, Location loc, Value input, int64_t keep) {
  int64_t rank = tensorTypeOf(input).getRank();
  if (rank == keep + 1)
    return input;
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t d = 0; d <= rank - keep - 1; ++d)
    groups[0].push_back(d);
  for (int64_t d = rank - keep; d < rank; ++d)
    groups.push_back({d});
  return b.create<tensor::CollapseShapeOp>(loc, input, groups);
}

/// The inverse of collapseLeading, with the leading sizes of `like`.
Value expandLeading(OpBuilder &b, Location loc, Value input,
                    RankedTensorType resultType, Value like) {
  int64_t rank = resultType.getRank(), inRank = tensorTypeOf(input).getRank();
  if (rank == inRank)
    return input;
  int64_t keep = inRank - 1;
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t d = 0; d <= rank - keep - 1; ++d)
    groups[0].push_back(d);
  for (int64_t d = rank - keep; d < rank; ++d)
    groups.push_back({d});
  SmallVector<OpFoldResult> shape;
  for (int64_t d = 0; d < rank - keep; ++d)
    shape.push_back(dimOf(b, loc, like, d));
  for (int64_t d = 1; d < inRank; ++d)
    shape.push_back(dimOf(b, loc, input, d));
  // MLIR 19 cannot bufferize an expand_shape whose group has two dynamic
  // sizes (it re-infers the shape); tensor.reshape takes them as values.
  if (llvm::count_if(resultType.getShape().take_front(rank - keep),
                     ShapedType::isDynamic) > 1) {
    SmallVector<Value> sizes = getValueOrCreateConstantIndexOp(b, loc, shape);
    Value shapeTensor = b.create<tensor::FromElementsOp>(loc, sizes);
    return b.create<tensor::ReshapeOp>(loc, resultType, input, shapeTensor);
  }
  return b.create<tensor::ExpandShapeOp>(loc, resultType, input, groups, shape);
}

Value applyActivation(OpBuilder &b, Location loc, Activation act, Value x) {
  Type t = x.getType();
  switch (act) {
  case Activation::none:
    return x;
  case Activation::relu:
    // max(x, 0)
    return greaterOf(b, loc, x, floatConstant(b, loc, t, 0.0));
  case Activation::gelu: {
    // x/2 · (1 + erf(x / sqrt(2)))
    Value scaled =
        b.create<arith::MulFOp>(loc, x, floatConstant(b, loc, t, M_SQRT1_2));
    Value erf = b.create<math::ErfOp>(loc, scaled);
    Value onePlus =
        b.create<arith::AddFOp>(loc, erf, floatConstant(b, loc, t, 1.0));
    Value half = b.create<arith::MulFOp>(loc, x, floatConstant(b, loc, t, 0.5));
    return b.create<arith::MulFOp>(loc, half, onePlus);
  }
  case Activation::gelu_tanh: {
    // x/2 · (1 + tanh(sqrt(2/π) · (x + 0.044715 x³)))
    Value cube =
        b.create<arith::MulFOp>(loc, b.create<arith::MulFOp>(loc, x, x), x);
    Value inner = b.create<arith::AddFOp>(
        loc, x,
        b.create<arith::MulFOp>(loc, cube, floatConstant(b, loc, t, 0.044715)));
    Value tanh = b.create<math::TanhOp>(
        loc, b.create<arith::MulFOp>(
                 loc, inner, floatConstant(b, loc, t, std::sqrt(2.0 / M_PI))));
    Value onePlus =
        b.create<arith::AddFOp>(loc, tanh, floatConstant(b, loc, t, 1.0));
    Value half = b.create<arith::MulFOp>(loc, x, floatConstant(b, loc, t, 0.5));
    return b.create<arith::MulFOp>(loc, half, onePlus);
  }
  case Activation::silu: {
    // x · sigmoid(x) = x / (1 + exp(-x))
    Value negExp = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, x));
    Value denom =
        b.create<arith::AddFOp>(loc, negExp, floatConstant(b, loc, t, 1.0));
    return b.create<arith::DivFOp>(loc, x, denom);
  }
  }
  llvm_unreachable("unknown activation");
}

Value maxCombine(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::MaximumFOp>(l, args[0], args[1]);
}

Value greaterOf(OpBuilder &b, Location loc, Value a, Value other) {
  Value keep =
      b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UGT, a, other);
  return b.create<arith::SelectOp>(loc, keep, a, other);
}

Value addCombine(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::AddFOp>(l, args[0], args[1]);
}

/// The size of the last axis of `v`, as a float of `elt`.
Value lastDimAsFloat(OpBuilder &b, Location loc, Value v, Type elt) {
  int64_t last = tensorTypeOf(v).getRank() - 1;
  Value n = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, v, last));
  Value i64 = b.create<arith::IndexCastOp>(loc, b.getI64Type(), n);
  return b.create<arith::SIToFPOp>(loc, elt, i64);
}

} // namespace lowering
} // namespace tfm
} // namespace mlir

std::pair<mlir::Value, mlir::Value>
mlir::tfm::lowering::callerArgument(OpBuilder &b, Location loc, Operation *op,
                                    StringRef name, int64_t elementBytes) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  Value argument;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto argName = func.getArgAttrOfType<StringAttr>(i, "tfm.name"))
      if (argName.getValue() == name)
        argument = func.getArgument(i);
  assert(argument && "convert-tfm-to-linalg adds the caller's arguments");
  Value bytes = b.create<memref::DimOp>(loc, argument, 0);
  Value count =
      b.create<arith::DivUIOp>(loc, bytes, indexConstant(b, loc, elementBytes));
  return {argument, count};
}
