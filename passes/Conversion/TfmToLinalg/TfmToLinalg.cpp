//===- TfmToLinalg.cpp - Lower tfm to linalg, tensor and scf -------*- C++ -*-===//
//
// Each tfm op becomes tensor-level upstream ops that the codegen pipeline
// tiles, vectorizes, bufferizes and lowers to LLVM. Shapes stay dynamic in
// batch and sequence; sizes come from tensor.dim of the operands.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_CONVERTTFMTOLINALGPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static OpFoldResult dimOf(OpBuilder &b, Location loc, Value tensor,
                          int64_t dim) {
  int64_t size = tensorTypeOf(tensor).getDimSize(dim);
  if (!ShapedType::isDynamic(size))
    return b.getIndexAttr(size);
  return b.create<tensor::DimOp>(loc, tensor, dim).getResult();
}

static SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc,
                                         Value tensor) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0, e = tensorTypeOf(tensor).getRank(); d < e; ++d)
    sizes.push_back(dimOf(b, loc, tensor, d));
  return sizes;
}

static Value emptyTensor(OpBuilder &b, Location loc,
                         ArrayRef<OpFoldResult> sizes, Type elt) {
  return b.create<tensor::EmptyOp>(loc, sizes, elt);
}

/// A float constant of type `t`: a scalar, or a splat vector.
static Value floatConstant(OpBuilder &b, Location loc, Type t, double v) {
  if (auto vector = dyn_cast<VectorType>(t))
    return b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(
                 vector, b.getFloatAttr(vector.getElementType(), v)));
  return b.create<arith::ConstantOp>(loc, b.getFloatAttr(t, v));
}

static Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

static Value filled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                    Type elt, double v) {
  Value empty = emptyTensor(b, loc, sizes, elt);
  return b.create<linalg::FillOp>(loc, floatConstant(b, loc, elt, v), empty)
      .getResult(0);
}

static SmallVector<OpFoldResult> unitStrides(OpBuilder &b, int64_t rank) {
  return SmallVector<OpFoldResult>(rank, b.getIndexAttr(1));
}

static SmallVector<IteratorType> parallel(int64_t n) {
  return SmallVector<IteratorType>(n, IteratorType::parallel);
}

/// Sizes of a result that broadcasts `inputs` NumPy-style: each dimension
/// static, or read from an input whose aligned dimension is not a
/// broadcast 1. Dynamic dimensions are taken to be equal, not to broadcast.
static SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
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
static AffineMap broadcastMap(RankedTensorType input, RankedTensorType result) {
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
static Value elementwise(OpBuilder &b, Location loc, RankedTensorType type,
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
static Value reduceLastAxis(OpBuilder &b, Location loc, Value input,
                            double init, BodyFn combine) {
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
static Value withRowValue(OpBuilder &b, Location loc, Value x, Value rowValue,
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

static Value expOfDifference(OpBuilder &b, Location l, ValueRange args) {
  return b.create<math::ExpOp>(l, b.create<arith::SubFOp>(l, args[0], args[1]));
}
static Value product(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::MulFOp>(l, args[0], args[1]);
}
static Value quotient(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::DivFOp>(l, args[0], args[1]);
}

/// Moves `axis` of `input` last (a transpose), or returns `input` if it is.
static Value axisLast(OpBuilder &b, Location loc, Value input, int64_t axis,
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

static Value undoAxisLast(OpBuilder &b, Location loc, Value input,
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
  return b.create<linalg::TransposeOp>(loc, input, init, inverse)
      ->getResult(0);
}

/// Collapses all leading dimensions: [d0, ..., dn-1, k] -> [d0*...*dn-1, k].
static Value collapseLeading(OpBuilder &b, Location loc, Value input,
                             int64_t keep) {
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
static Value expandLeading(OpBuilder &b, Location loc, Value input,
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
  return b.create<tensor::ExpandShapeOp>(loc, resultType, input, groups,
                                         shape);
}

static Value applyActivation(OpBuilder &b, Location loc, Activation act,
                             Value x) {
  Type t = x.getType();
  switch (act) {
  case Activation::none:
    return x;
  case Activation::relu:
    // max(x, 0)
    return b.create<arith::MaximumFOp>(loc, x, floatConstant(b, loc, t, 0.0));
  case Activation::gelu: {
    // x/2 · (1 + erf(x / sqrt(2)))
    Value scaled = b.create<arith::MulFOp>(
        loc, x, floatConstant(b, loc, t, M_SQRT1_2));
    Value erf = b.create<math::ErfOp>(loc, scaled);
    Value onePlus =
        b.create<arith::AddFOp>(loc, erf, floatConstant(b, loc, t, 1.0));
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

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct ElementwisePattern : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using Adaptor = typename OpTy::Adaptor;

  virtual Value scalar(OpBuilder &b, Location loc, OpTy op,
                       ValueRange args) const = 0;

  LogicalResult
  matchAndRewrite(OpTy op, Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, elementwise(rewriter, op.getLoc(), type,
                                       adaptor.getOperands(),
                                       [&](OpBuilder &b, Location loc,
                                           ValueRange args) {
                                         return scalar(b, loc, op, args);
                                       }));
    return success();
  }
};

#define TFM_ELEMENTWISE(OpTy, ...)                                             \
  struct OpTy##Lowering : public ElementwisePattern<OpTy> {                    \
    using ElementwisePattern::ElementwisePattern;                              \
    Value scalar(OpBuilder &b, Location loc, OpTy op,                          \
                 ValueRange args) const override {                             \
      __VA_ARGS__                                                              \
    }                                                                          \
  };

TFM_ELEMENTWISE(AddOp, return b.create<arith::AddFOp>(loc, args[0], args[1]);)
TFM_ELEMENTWISE(SubOp, return b.create<arith::SubFOp>(loc, args[0], args[1]);)
TFM_ELEMENTWISE(MulOp, return b.create<arith::MulFOp>(loc, args[0], args[1]);)
TFM_ELEMENTWISE(DivOp, return b.create<arith::DivFOp>(loc, args[0], args[1]);)
TFM_ELEMENTWISE(RsqrtOp, return b.create<math::RsqrtOp>(loc, args[0]);)
TFM_ELEMENTWISE(SqrtOp, return b.create<math::SqrtOp>(loc, args[0]);)
TFM_ELEMENTWISE(ReluOp, return applyActivation(b, loc, Activation::relu, args[0]);)
TFM_ELEMENTWISE(GeluOp, return applyActivation(b, loc, Activation::gelu, args[0]);)
TFM_ELEMENTWISE(SiluOp, return applyActivation(b, loc, Activation::silu, args[0]);)
TFM_ELEMENTWISE(SelectOp,
                return b.create<arith::SelectOp>(loc, args[0], args[1], args[2]);)
TFM_ELEMENTWISE(ScaleOp, {
  Value factor = floatConstant(b, loc, args[0].getType(),
                               op.getFactor().convertToDouble());
  return b.create<arith::MulFOp>(loc, args[0], factor);
})
#undef TFM_ELEMENTWISE

//===----------------------------------------------------------------------===//
// Weights, embeddings, positions
//===----------------------------------------------------------------------===//

/// tfm.weight -> a view of the function's weights argument at its offset.
struct WeightLowering : public OpConversionPattern<WeightOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WeightOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getOffset())
      return op.emitOpError("has no offset in the weights file; run "
                            "tfm-layout-weights first");
    auto func = op->getParentOfType<FunctionOpInterface>();
    Location loc = op.getLoc();
    Value weights = func.getArgument(0);
    RankedTensorType type = op.getType();
    Value offset = indexConstant(rewriter, loc, *op.getOffset());
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    Value view = rewriter.create<memref::ViewOp>(loc, memrefType, weights,
                                                 offset, ValueRange{});
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, type, view, /*restrict=*/true, /*writable=*/false);
    return success();
  }
};

/// The panels [Np, K, P] of a weight stored packed for linears
/// (tfm-layout-weights), as a view of the weights argument.
static Value panelsOf(OpBuilder &b, WeightOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  int64_t p = op->getAttrOfType<IntegerAttr>(kPanelWidthAttr).getInt();
  auto panelsType = MemRefType::get(
      {int64_t(llvm::divideCeil(type.getDimSize(0), p)), type.getDimSize(1), p},
      type.getElementType());
  Value weights = op->getParentOfType<FunctionOpInterface>().getArgument(0);
  Value view = b.create<memref::ViewOp>(
      loc, panelsType, weights, indexConstant(b, loc, *op.getOffset()),
      ValueRange{});
  return view;
}

/// result[.., d] = table[ids[..], d]
struct EmbeddingLowering : public OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    Value ids = adaptor.getIds(), table = adaptor.getTable();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, ids);
    sizes.push_back(dimOf(rewriter, loc, table, 1));
    Value init = emptyTensor(rewriter, loc, sizes, type.getElementType());
    AffineMap out = rewriter.getMultiDimIdentityMap(rank);
    AffineMap in = out.dropResult(rank - 1);
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(
        op, TypeRange{type}, ValueRange{ids}, ValueRange{init},
        ArrayRef<AffineMap>{in, out}, parallel(rank),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value row = b.create<arith::IndexCastOp>(l, b.getIndexType(),
                                                   args[0]);
          Value col = b.create<linalg::IndexOp>(l, rank - 1);
          b.create<linalg::YieldOp>(
              l, b.create<tensor::ExtractOp>(l, table, ValueRange{row, col})
                     .getResult());
        });
    return success();
  }
};

/// result[.., s, c] = PE(offset + s, c)
struct PositionEncodingLowering
    : public OpConversionPattern<PositionEncodingOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PositionEncodingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank(), dim = type.getShape().back();
    Value ids = adaptor.getIds(), offset = adaptor.getOffset();
    Value table = adaptor.getTable();
    PositionKind kind = op.getKind();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, ids);
    sizes.push_back(rewriter.getIndexAttr(dim));
    Value init = emptyTensor(rewriter, loc, sizes, type.getElementType());
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(
        op, TypeRange{type}, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
        parallel(rank), [&](OpBuilder &b, Location l, ValueRange args) {
          Value pos = b.create<arith::AddIOp>(
              l, offset, b.create<linalg::IndexOp>(l, rank - 2));
          Value c = b.create<linalg::IndexOp>(l, rank - 1);
          Value result;
          if (kind == PositionKind::learned) {
            result = b.create<tensor::ExtractOp>(l, table, ValueRange{pos, c});
          } else {
            result = sinusoid(b, l, kind, pos, c, dim, args[0].getType());
          }
          b.create<linalg::YieldOp>(l, result);
        });
    return success();
  }

  /// In f64, as reference implementations compute the table:
  /// angle = p / 10000^(2i/d); sin for the first of each pair (interleaved)
  /// or the first half of the channels (concatenated), cos for the other.
  static Value sinusoid(OpBuilder &b, Location l, PositionKind kind, Value pos,
                        Value c, int64_t dim, Type elt) {
    Type f64 = b.getF64Type();
    Value half = indexConstant(b, l, dim / 2);
    Value i, isSin;
    if (kind == PositionKind::sinusoidal_interleaved) {
      Value two = indexConstant(b, l, 2);
      i = b.create<arith::DivUIOp>(l, c, two);
      isSin = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq,
                                      b.create<arith::RemUIOp>(l, c, two),
                                      indexConstant(b, l, 0));
    } else {
      isSin = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ult, c, half);
      i = b.create<arith::SelectOp>(l, isSin, c,
                                    b.create<arith::SubIOp>(l, c, half));
    }
    auto toF64 = [&](Value index) -> Value {
      Value i64 = b.create<arith::IndexCastOp>(l, b.getI64Type(), index);
      return b.create<arith::SIToFPOp>(l, f64, i64);
    };
    // 10000^(2i/d)
    Value exponent = b.create<arith::DivFOp>(
        l, b.create<arith::MulFOp>(l, toF64(i), floatConstant(b, l, f64, 2.0)),
        floatConstant(b, l, f64, double(dim)));
    Value denom = b.create<math::PowFOp>(
        l, floatConstant(b, l, f64, 10000.0), exponent);
    Value angle = b.create<arith::DivFOp>(l, toF64(pos), denom);
    Value value = b.create<arith::SelectOp>(
        l, isSin, b.create<math::SinOp>(l, angle),
        b.create<math::CosOp>(l, angle));
    return b.create<arith::TruncFOp>(l, elt, value);
  }
};

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// C[.., i, j] = sum_k A[.., i, k] B[.., k, j] as one linalg.generic; the
/// transposes only permute the indexing maps.
struct MatmulLowering : public OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    MLIRContext *ctx = rewriter.getContext();
    // Iteration space: batch dims, i, j, k.
    auto d = [&](int64_t n) { return getAffineDimExpr(n, ctx); };
    SmallVector<AffineExpr> batch, a, bm, c;
    for (int64_t n = 0; n < rank - 2; ++n)
      batch.push_back(d(n));
    AffineExpr i = d(rank - 2), j = d(rank - 1), k = d(rank);
    a = batch;
    a.append(op.getTransposeLhs() ? SmallVector<AffineExpr>{k, i}
                                  : SmallVector<AffineExpr>{i, k});
    bm = batch;
    bm.append(op.getTransposeRhs() ? SmallVector<AffineExpr>{j, k}
                                   : SmallVector<AffineExpr>{k, j});
    c = batch;
    c.append({i, j});
    SmallVector<OpFoldResult> sizes;
    for (int64_t n = 0; n < rank - 2; ++n)
      sizes.push_back(dimOf(rewriter, loc, lhs, n));
    sizes.push_back(dimOf(rewriter, loc, lhs, op.getTransposeLhs() ? rank - 1
                                                                   : rank - 2));
    sizes.push_back(dimOf(rewriter, loc, rhs, op.getTransposeRhs() ? rank - 2
                                                                   : rank - 1));
    Value init = filled(rewriter, loc, sizes, type.getElementType(), 0.0);
    SmallVector<IteratorType> iters = parallel(rank + 1);
    iters.back() = IteratorType::reduction;
    SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, a, ctx),
                                   AffineMap::get(rank + 1, 0, bm, ctx),
                                   AffineMap::get(rank + 1, 0, c, ctx)};
    Value result =
        rewriter
            .create<linalg::GenericOp>(
                loc, TypeRange{init.getType()}, ValueRange{lhs, rhs},
                ValueRange{init}, maps, iters,
                [&](OpBuilder &b, Location l, ValueRange args) {
                  Value p = b.create<arith::MulFOp>(l, args[0], args[1]);
                  b.create<linalg::YieldOp>(
                      l, b.create<arith::AddFOp>(l, args[2], p).getResult());
                })
            .getResult(0);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, type, result);
    return success();
  }
};

/// y = act(x + b) + r, the epilogue of a linear, on scalars or vectors.
static Value linearEpilogue(OpBuilder &b, Location loc, Value y, Value bias,
                            Activation act, Value residual) {
  if (bias)
    y = b.create<arith::AddFOp>(loc, y, bias);
  y = applyActivation(b, loc, act, y);
  if (residual)
    y = b.create<arith::AddFOp>(loc, y, residual);
  return y;
}

/// act(x·Wᵀ + b) + r for a weight of dynamic shape: matmul_transpose_b and
/// one epilogue generic over [M, N] (not vectorized; the checkpoints' linears
/// all have static weights and take the panel kernel below).
static Value linearOfDynamicWeight(OpBuilder &b, Location loc, Value x,
                                   Value weight, Value bias, Activation act,
                                   Value residual) {
  Type elt = tensorTypeOf(x).getElementType();
  SmallVector<OpFoldResult> sizes = {dimOf(b, loc, x, 0),
                                     dimOf(b, loc, weight, 0)};
  Value acc = filled(b, loc, sizes, elt, 0.0);
  Value y = b.create<linalg::MatmulTransposeBOp>(loc, ValueRange{x, weight},
                                                 ValueRange{acc})
                .getResult(0);
  if (!bias && act == Activation::none && !residual)
    return y;
  SmallVector<Value> inputs = {y};
  if (bias)
    inputs.push_back(bias);
  if (residual)
    inputs.push_back(residual);
  return elementwise(b, loc, tensorTypeOf(y), inputs,
                     [&](OpBuilder &nb, Location nl, ValueRange args) {
                       unsigned next = 1;
                       Value biasValue = bias ? args[next++] : Value();
                       Value residualValue = residual ? args[next++] : Value();
                       return linearEpilogue(nb, nl, args[0], biasValue, act,
                                             residualValue);
                     });
}

/// Wp[p, k, j] = W[p·P + j, k], and 0 where p·P + j >= N: the panels of a
/// weight that is not in the weights file (an argument, a constant), packed
/// in the function. tfm-layout-weights packs the checkpoint's weights alike
/// at compile time.
static Value packPanels(OpBuilder &b, Location loc, Value weight,
                        int64_t panel) {
  RankedTensorType type = tensorTypeOf(weight);
  int64_t n = type.getDimSize(0), k = type.getDimSize(1);
  int64_t panels = llvm::divideCeil(n, panel);
  Type elt = type.getElementType();
  Value init = emptyTensor(
      b, loc,
      {b.getIndexAttr(panels), b.getIndexAttr(k), b.getIndexAttr(panel)}, elt);
  MLIRContext *ctx = b.getContext();
  return b
      .create<linalg::GenericOp>(
          loc, init.getType(), ValueRange{}, ValueRange{init},
          ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(3, ctx)},
          parallel(3),
          [&](OpBuilder &nb, Location nl, ValueRange) {
            Value p = nb.create<linalg::IndexOp>(nl, 0);
            Value kk = nb.create<linalg::IndexOp>(nl, 1);
            Value j = nb.create<linalg::IndexOp>(nl, 2);
            Value row = nb.create<arith::AddIOp>(
                nl, nb.create<arith::MulIOp>(nl, p, indexConstant(nb, nl, panel)),
                j);
            Value last = indexConstant(nb, nl, n - 1);
            Value inside = nb.create<arith::CmpIOp>(
                nl, arith::CmpIPredicate::ule, row, last);
            Value clamped = nb.create<arith::MinUIOp>(nl, row, last);
            Value w = nb.create<tensor::ExtractOp>(nl, weight,
                                                   ValueRange{clamped, kk});
            nb.create<linalg::YieldOp>(
                nl, ValueRange{nb.create<arith::SelectOp>(
                        nl, inside, w, floatConstant(nb, nl, elt, 0.0))});
          })
      .getResult(0);
}

/// y[M, N] = act(x·Wᵀ + b) + r with W as panels Wp[Np, K, P] (P = 4 vectors
/// of L lanes). In parallel over panels p; in a panel, for each tile of R
/// rows and C vectors of columns (C·L floats from column c0), R·C vector
/// accumulators stay in registers over all of K:
///   acc[r][c] += broadcast(x[m0 + r, k]) · Wp[p, k, c0 + c·L : ... + L]
/// and the epilogue (bias, activation, residual) is applied to them before
/// the one store of y[m0 + r, p·P + c0 + c·L : ...]. Each panel is a
/// contiguous stream; the column groups of a tile read disjoint cache lines
/// of it, and later row tiles re-read it from cache.
static Value panelLinear(OpBuilder &b, Location loc, Value x, Value panels,
                         int64_t n, Value bias, Activation act,
                         Value residual) {
  RankedTensorType panelType = tensorTypeOf(panels);
  int64_t numPanels = panelType.getDimSize(0), k = panelType.getDimSize(1);
  int64_t width = panelType.getDimSize(2), lanes = width / 4;
  // Tiles of R rows by C vectors, the rest one row at a time. The
  // accumulators, a broadcast and the weight vectors fit the registers:
  // 4 x 4 of 32 zmm with AVX-512 (a beam of 4 reads each weight once). With
  // 16 ymm (AVX2), 2 x 4 for few rows, whose reads of the panel are
  // contiguous, and 4 x 2 (two column groups) for many, which reads each
  // weight vector for 4 rows. (Zen 3, 2 threads: 4 rows x 512->32000 from
  // DRAM 4.7 ms with 2 x 4, 6.9 ms with 4 x 2; 32 rows x 512->2048 at 117
  // GFLOP/s with 4 x 2, 107 with 2 x 4.)
  const int64_t fewTile[2] = {lanes >= 16 ? 4 : 2, 4};
  const int64_t manyTile[2] = {4, lanes >= 16 ? 4 : 2};
  // Rows of a panel per K block when there are at most kFewRows rows: 8 KiB
  // (AVX2) or 16 KiB (AVX-512), in L1. (4 rows from DRAM, Zen 3: 4 x
  // 512->2048 in 333 us with blocks against 386 without, 4 x 512->32000
  // in 5.0 ms against 5.5.)
  const int64_t kBlock = 64, kFewRows = 8;
  Type elt = panelType.getElementType();
  auto vecType = VectorType::get({lanes}, elt);
  // Columns past N (the last panel's zero rows) are computed and dropped;
  // reads of the bias and residual there are padded.
  bool whole = numPanels * width == n;
  Value m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  Value fzero = floatConstant(b, loc, elt, 0.0);
  Value out = emptyTensor(b, loc, {m, b.getIndexAttr(numPanels * width)}, elt);

  auto forall = b.create<scf::ForallOp>(
      loc, ArrayRef<OpFoldResult>{b.getIndexAttr(numPanels)}, ValueRange{out},
      std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = forall.getBody();
    b.setInsertionPointToStart(body);
    Value p = body->getArgument(0);
    Value n0 = b.create<arith::MulIOp>(loc, p, indexConstant(b, loc, width));
    SmallVector<OpFoldResult> tileOffsets = {b.getIndexAttr(0), n0};
    SmallVector<OpFoldResult> tileSizes = {m, b.getIndexAttr(width)};
    Value tile = b.create<tensor::ExtractSliceOp>(
        loc, body->getArguments().back(), tileOffsets, tileSizes,
        unitStrides(b, 2));

    // The R x C tile at rows m0.., columns c0.. of the panel over the K
    // block [kStart, kEnd): its accumulators start from the tile's sums so
    // far, and after the last block (`last`) get the epilogue.
    auto emitTile = [&](OpBuilder &lb, Location ll, Value m0, int64_t rows,
                        int64_t c0, int64_t vectors, Value t, Value kStart,
                        Value kEnd, Value last, bool fromZero) {
      SmallVector<Value> rowIndex;
      for (int64_t r = 0; r < rows; ++r)
        rowIndex.push_back(
            lb.create<arith::AddIOp>(ll, m0, indexConstant(lb, ll, r)));
      SmallVector<Value> acc0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < vectors; ++c)
          acc0.push_back(
              fromZero
                  ? floatConstant(lb, ll, vecType, 0.0)
                  : lb.create<vector::TransferReadOp>(
                        ll, vecType, t,
                        ValueRange{rowIndex[r],
                                   indexConstant(lb, ll, c0 + c * lanes)},
                        fzero, ArrayRef<bool>{true}));
      // acc[r][c] += x[m0 + r, k] · Wp[p, k, c0 + c·L ...] over the block
      auto kLoop = lb.create<scf::ForOp>(
          ll, kStart, kEnd, indexConstant(lb, ll, 1), acc0,
          [&](OpBuilder &kb, Location kl, Value kk, ValueRange acc) {
            SmallVector<Value> w;
            for (int64_t c = 0; c < vectors; ++c)
              w.push_back(kb.create<vector::TransferReadOp>(
                  kl, vecType, panels,
                  ValueRange{p, kk, indexConstant(kb, kl, c0 + c * lanes)},
                  fzero, ArrayRef<bool>{true}));
            SmallVector<Value> next;
            for (int64_t r = 0; r < rows; ++r) {
              Value xs = kb.create<tensor::ExtractOp>(
                  kl, x, ValueRange{rowIndex[r], kk});
              Value xb = kb.create<vector::BroadcastOp>(kl, vecType, xs);
              for (int64_t c = 0; c < vectors; ++c)
                next.push_back(kb.create<vector::FMAOp>(
                    kl, xb, w[c], acc[r * vectors + c]));
            }
            kb.create<scf::YieldOp>(kl, next);
          });
      // After the last block, the epilogue on the registers; one store per
      // vector.
      bool epilogue = bias || act != Activation::none || residual;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < vectors; ++c) {
          int64_t column = c0 + c * lanes;
          Value y = kLoop.getResult(r * vectors + c);
          if (epilogue) {
            Value col = lb.create<arith::AddIOp>(
                ll, n0, indexConstant(lb, ll, column));
            Value biasVec, residualVec;
            if (bias)
              biasVec = lb.create<vector::TransferReadOp>(
                  ll, vecType, bias, ValueRange{col}, fzero,
                  ArrayRef<bool>{whole});
            if (residual)
              residualVec = lb.create<vector::TransferReadOp>(
                  ll, vecType, residual, ValueRange{rowIndex[r], col}, fzero,
                  ArrayRef<bool>{whole});
            y = lb.create<arith::SelectOp>(
                ll, last,
                linearEpilogue(lb, ll, y, biasVec, act, residualVec), y);
          }
          t = lb.create<vector::TransferWriteOp>(
                    ll, y, t,
                    ValueRange{rowIndex[r], indexConstant(lb, ll, column)},
                    ArrayRef<bool>{true})
                  .getResult();
        }
      return t;
    };
    // Rows [lo, hi) in tiles of `rows` rows and `vectors` vectors.
    auto rowLoop = [&](OpBuilder &bb, Location bl, Value lo, Value hi,
                       int64_t rows, int64_t vectors, Value init,
                       Value kStart, Value kEnd, Value last, bool fromZero) {
      auto loop = bb.create<scf::ForOp>(
          bl, lo, hi, indexConstant(bb, bl, rows), ValueRange{init},
          [&](OpBuilder &lb, Location ll, Value m0, ValueRange tileIter) {
            Value t = tileIter[0];
            for (int64_t c0 = 0; c0 < width; c0 += vectors * lanes)
              t = emitTile(lb, ll, m0, rows, c0, vectors, t, kStart, kEnd,
                           last, fromZero);
            lb.create<scf::YieldOp>(ll, t);
          });
      return loop.getResult(0);
    };
    // All rows, in tiles of R x C then single rows, over K in blocks of
    // `block` rows of the panel.
    auto allRows = [&](OpBuilder &bb, Location bl, Value t, int64_t block,
                       int64_t rows, int64_t vectors) {
      Value full = bb.create<arith::MulIOp>(
          bl, bb.create<arith::DivUIOp>(bl, m, indexConstant(bb, bl, rows)),
          indexConstant(bb, bl, rows));
      Value kTotal = indexConstant(bb, bl, k);
      if (block >= k) {
        // One block: the sums start at zero and end in the epilogue.
        Value yes = bb.create<arith::ConstantIntOp>(bl, 1, 1);
        t = rowLoop(bb, bl, indexConstant(bb, bl, 0), full, rows, vectors, t,
                    indexConstant(bb, bl, 0), kTotal, yes, true);
        return rowLoop(bb, bl, full, m, 1, 4, t, indexConstant(bb, bl, 0),
                       kTotal, yes, true);
      }
      t = bb.create<linalg::FillOp>(bl, fzero, t).getResult(0);
      auto blocks = bb.create<scf::ForOp>(
          bl, indexConstant(bb, bl, 0), kTotal, indexConstant(bb, bl, block),
          ValueRange{t},
          [&](OpBuilder &kb, Location kl, Value kStart, ValueRange iter) {
            Value kEnd = kb.create<arith::MinUIOp>(
                kl,
                kb.create<arith::AddIOp>(kl, kStart,
                                         indexConstant(kb, kl, block)),
                kTotal);
            Value last = kb.create<arith::CmpIOp>(
                kl, arith::CmpIPredicate::eq, kEnd, kTotal);
            Value u = rowLoop(kb, kl, indexConstant(kb, kl, 0), full, rows,
                              vectors, iter[0], kStart, kEnd, last, false);
            u = rowLoop(kb, kl, full, m, 1, 4, u, kStart, kEnd, last, false);
            kb.create<scf::YieldOp>(kl, u);
          });
      return blocks.getResult(0);
    };
    // With few rows (decoding), blocks of K: a block of the panel (kBlock
    // rows of P floats) is read from memory by the first row tile and from
    // L1 by the others, so the stream of weights pauses only briefly; tiles
    // over the whole panel, whose reads are contiguous. With many, one
    // block: the sums stay in registers over all of K.
    Value few = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ule, m,
                                        indexConstant(b, loc, kFewRows));
    auto choice = b.create<scf::IfOp>(
        loc, few,
        [&](OpBuilder &bb, Location bl) {
          bb.create<scf::YieldOp>(
              bl, allRows(bb, bl, tile, kBlock, fewTile[0], fewTile[1]));
        },
        [&](OpBuilder &bb, Location bl) {
          bb.create<scf::YieldOp>(
              bl, allRows(bb, bl, tile, k, manyTile[0], manyTile[1]));
        });
    tile = choice.getResult(0);

    b.setInsertionPointToStart(forall.getTerminator().getBody());
    b.create<tensor::ParallelInsertSliceOp>(loc, tile,
                                            body->getArguments().back(),
                                            tileOffsets, tileSizes,
                                            unitStrides(b, 2));
  }
  Value y = forall.getResult(0);
  if (!whole)
    y = b.create<tensor::ExtractSliceOp>(
        loc, y, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{m, b.getIndexAttr(n)}, unitStrides(b, 2));
  return y;
}

/// act(x·Wᵀ + b) + r: [.., K] collapses to [M, K], the product runs on the
/// weight's panels (packed in the weights file, or here), expand back.
static Value lowerLinear(OpBuilder &b, Location loc, RankedTensorType type,
                         Value input, Value weight, Value bias,
                         Activation act, Value residual, int64_t lanes) {
  Value x = collapseLeading(b, loc, input, 1);
  Value flatResidual =
      residual ? collapseLeading(b, loc, residual, 1) : Value();
  RankedTensorType weightType = tensorTypeOf(weight);
  Value y;
  // A weight stored in panels: the tfm.weight stays (legal) until here.
  auto packed = weight.getDefiningOp<WeightOp>();
  if (packed && packed->hasAttr(kPanelWidthAttr)) {
    Value view = panelsOf(b, packed);
    Value panels = b.create<bufferization::ToTensorOp>(
        loc,
        RankedTensorType::get(cast<MemRefType>(view.getType()).getShape(),
                              weightType.getElementType()),
        view, /*restrict=*/true, /*writable=*/false);
    y = panelLinear(b, loc, x, panels, weightType.getDimSize(0), bias, act,
                    flatResidual);
  } else if (weightType.hasStaticShape()) {
    Value panels = packPanels(b, loc, weight, 4 * lanes);
    y = panelLinear(b, loc, x, panels, weightType.getDimSize(0), bias, act,
                    flatResidual);
  } else {
    y = linearOfDynamicWeight(b, loc, x, weight, bias, act, flatResidual);
  }
  Value result = expandLeading(b, loc, y, type, input);
  return result.getType() == type ? result
                                  : b.create<tensor::CastOp>(loc, type, result);
}

/// Linears and fused linears; `lanes`: floats per vector of the target, so
/// weights packed here get panels of 4 vectors.
template <typename OpTy>
struct LinearLoweringBase : public OpConversionPattern<OpTy> {
  LinearLoweringBase(MLIRContext *ctx, int64_t lanes)
      : OpConversionPattern<OpTy>(ctx), lanes(lanes) {}
  int64_t lanes;
};

struct LinearLowering : public LinearLoweringBase<LinearOp> {
  using LinearLoweringBase::LinearLoweringBase;

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerLinear(rewriter, op.getLoc(), op.getType(),
                                       adaptor.getInput(), adaptor.getWeight(),
                                       adaptor.getBias(), Activation::none,
                                       Value(), lanes));
    return success();
  }
};

struct FusedLinearLowering : public LinearLoweringBase<FusedLinearOp> {
  using LinearLoweringBase::LinearLoweringBase;

  LogicalResult
  matchAndRewrite(FusedLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerLinear(rewriter, op.getLoc(), op.getType(),
                                       adaptor.getInput(), adaptor.getWeight(),
                                       adaptor.getBias(), op.getActivation(),
                                       adaptor.getResidual(), lanes));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions and normalization
//===----------------------------------------------------------------------===//

static Value maxCombine(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::MaximumFOp>(l, args[0], args[1]);
}
static Value addCombine(OpBuilder &b, Location l, ValueRange args) {
  return b.create<arith::AddFOp>(l, args[0], args[1]);
}

/// The size of the last axis of `v`, as a float of `elt`.
static Value lastDimAsFloat(OpBuilder &b, Location loc, Value v, Type elt) {
  int64_t last = tensorTypeOf(v).getRank() - 1;
  Value n = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, v, last));
  Value i64 = b.create<arith::IndexCastOp>(loc, b.getI64Type(), n);
  return b.create<arith::SIToFPOp>(loc, elt, i64);
}

/// softmax over the last axis: e = exp(x - max x); e / sum e
static Value softmaxLastAxis(OpBuilder &b, Location loc, Value x) {
  Value max = reduceLastAxis(b, loc, x, -INFINITY, maxCombine);
  Value exp = withRowValue(b, loc, x, max, expOfDifference);
  Value sum = reduceLastAxis(b, loc, exp, 0.0, addCombine);
  return withRowValue(b, loc, exp, sum, quotient);
}

struct SoftmaxLowering : public OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<int64_t> perm;
    Value x = axisLast(rewriter, loc, adaptor.getInput(), op.getAxis(), perm);
    Value y = undoAxisLast(rewriter, loc, softmaxLastAxis(rewriter, loc, x),
                           perm);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), y);
    return success();
  }
};

/// mean = sum / n over the axis, which stays with size 1.
struct MeanLowering : public OpConversionPattern<MeanOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MeanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elt = op.getType().getElementType();
    SmallVector<int64_t> perm;
    Value x = axisLast(rewriter, loc, adaptor.getInput(), op.getAxis(), perm);
    Value sum = reduceLastAxis(rewriter, loc, x, 0.0, addCombine);
    Value n = lastDimAsFloat(rewriter, loc, x, elt);
    auto sumType = tensorTypeOf(sum);
    Value mean = elementwise(rewriter, loc, sumType, ValueRange{sum},
                             [&](OpBuilder &b, Location l, ValueRange args) {
                               return b.create<arith::DivFOp>(l, args[0], n);
                             });
    // Put the reduced axis back, with size 1, where it was: the last two
    // dimensions of the kept shape come from the last of the reduced one
    // (none for a reduction to a scalar).
    int64_t rank = op.getType().getRank();
    SmallVector<ReassociationIndices> groups;
    if (rank > 1) {
      for (int64_t d = 0; d < rank - 2; ++d)
        groups.push_back({d});
      groups.push_back({rank - 2, rank - 1});
    }
    SmallVector<OpFoldResult> shape = sizesOf(rewriter, loc, mean);
    shape.push_back(rewriter.getIndexAttr(1));
    SmallVector<int64_t> staticShape(sumType.getShape());
    staticShape.push_back(1);
    auto keptType = RankedTensorType::get(staticShape, elt);
    Value kept = rewriter.create<tensor::ExpandShapeOp>(loc, keptType, mean,
                                                        groups, shape);
    Value result = undoAxisLast(rewriter, loc, kept, perm);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), result);
    return success();
  }
};

/// Over the last axis, with x = input (+ residual):
///   stats: S1 = sum(x - x0), S2 = sum((x - x0)^2) with x0 = x[.., 0]
///          (a shift that keeps the one-pass variance accurate)
///   mean = x0 + S1/n,  var = (S2 - S1²/n) / n
///   y = (x - mean) · rsqrt(var + eps) · γ + β
struct LayerNormLowering : public OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    int64_t rank = type.getRank();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput(), residual = adaptor.getResidual();
    Value gamma = adaptor.getScale(), beta = adaptor.getBias();

    AffineMap full = rewriter.getMultiDimIdentityMap(rank);
    AffineMap row = full.dropResult(rank - 1);
    SmallVector<AffineExpr> firstExprs(row.getResults());
    firstExprs.push_back(getAffineConstantExpr(0, ctx));
    AffineMap first = AffineMap::get(rank, 0, firstExprs, ctx);

    SmallVector<Value> rowInputs = {input};
    SmallVector<AffineMap> rowMaps = {full};
    if (residual) {
      rowInputs.push_back(residual);
      rowMaps.push_back(full);
    }
    // x0 = x[.., 0]
    SmallVector<Value> statInputs(rowInputs);
    SmallVector<AffineMap> statMaps(rowMaps);
    statInputs.append(rowInputs.begin(), rowInputs.end());
    for (size_t n = 0; n < rowInputs.size(); ++n)
      statMaps.push_back(first);
    SmallVector<OpFoldResult> rowSizes = sizesOf(rewriter, loc, input);
    rowSizes.pop_back();
    Value s1 = filled(rewriter, loc, rowSizes, elt, 0.0);
    Value s2 = filled(rewriter, loc, rowSizes, elt, 0.0);
    statMaps.append({row, row});
    SmallVector<IteratorType> iters = parallel(rank);
    iters.back() = IteratorType::reduction;
    bool hasResidual = bool(residual);
    auto stats = rewriter.create<linalg::GenericOp>(
        loc, TypeRange{s1.getType(), s2.getType()}, statInputs,
        ValueRange{s1, s2}, statMaps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], x0 = args[hasResidual ? 2 : 1];
          if (hasResidual) {
            x = b.create<arith::AddFOp>(l, x, args[1]);
            x0 = b.create<arith::AddFOp>(l, x0, args[3]);
          }
          Value d = b.create<arith::SubFOp>(l, x, x0);
          unsigned acc = hasResidual ? 4 : 2;
          Value n1 = b.create<arith::AddFOp>(l, args[acc], d);
          Value n2 = b.create<arith::AddFOp>(
              l, args[acc + 1], b.create<arith::MulFOp>(l, d, d));
          b.create<linalg::YieldOp>(l, ValueRange{n1, n2});
        });

    Value n = lastDimAsFloat(rewriter, loc, input, elt);
    Value eps = floatConstant(rewriter, loc, elt,
                              op.getEpsilon().convertToDouble());
    SmallVector<Value> normInputs(statInputs);
    SmallVector<AffineMap> normMaps(rowMaps);
    normMaps.append(rowInputs.size(), first);
    normInputs.append({stats.getResult(0), stats.getResult(1)});
    normMaps.append({row, row});
    AffineMap channel = AffineMap::get(
        rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
    if (gamma) {
      normInputs.push_back(gamma);
      normMaps.push_back(channel);
    }
    if (beta) {
      normInputs.push_back(beta);
      normMaps.push_back(channel);
    }
    normMaps.push_back(full);
    Value init = emptyTensor(rewriter, loc, sizesOf(rewriter, loc, input), elt);
    bool hasGamma = bool(gamma), hasBeta = bool(beta);
    auto norm = rewriter.create<linalg::GenericOp>(
        loc, TypeRange{type}, normInputs, ValueRange{init}, normMaps,
        parallel(rank), [&](OpBuilder &b, Location l, ValueRange args) {
          unsigned next = 0;
          Value x = args[next++];
          if (hasResidual)
            x = b.create<arith::AddFOp>(l, x, args[next++]);
          Value x0 = args[next++];
          if (hasResidual)
            x0 = b.create<arith::AddFOp>(l, x0, args[next++]);
          Value s1v = args[next++], s2v = args[next++];
          // mean = x0 + S1/n; var = (S2 - S1·S1/n) / n
          Value s1n = b.create<arith::DivFOp>(l, s1v, n);
          Value mean = b.create<arith::AddFOp>(l, x0, s1n);
          Value var = b.create<arith::DivFOp>(
              l, b.create<arith::SubFOp>(l, s2v,
                                         b.create<arith::MulFOp>(l, s1v, s1n)),
              n);
          Value inv = b.create<math::RsqrtOp>(
              l, b.create<arith::AddFOp>(l, var, eps));
          Value y = b.create<arith::MulFOp>(
              l, b.create<arith::SubFOp>(l, x, mean), inv);
          if (hasGamma)
            y = b.create<arith::MulFOp>(l, y, args[next++]);
          if (hasBeta)
            y = b.create<arith::AddFOp>(l, y, args[next++]);
          b.create<linalg::YieldOp>(l, y);
        });
    rewriter.replaceOp(op, norm.getResult(0));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// scores[.., i, j] = -inf where j > i + Sk - Sq
struct CausalMaskLowering : public OpConversionPattern<CausalMaskOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CausalMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    Value scores = adaptor.getScores();
    Value sq = getValueOrCreateConstantIndexOp(
        rewriter, loc, dimOf(rewriter, loc, scores, rank - 2));
    Value sk = getValueOrCreateConstantIndexOp(
        rewriter, loc, dimOf(rewriter, loc, scores, rank - 1));
    Value shift = rewriter.create<arith::SubIOp>(loc, sk, sq);
    Value ninf = floatConstant(rewriter, loc, type.getElementType(), -INFINITY);
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, type, ValueRange{scores},
                        [&](OpBuilder &b, Location l, ValueRange args) {
                          Value i = b.create<linalg::IndexOp>(l, rank - 2);
                          Value j = b.create<linalg::IndexOp>(l, rank - 1);
                          Value last = b.create<arith::AddIOp>(l, i, shift);
                          Value hidden = b.create<arith::CmpIOp>(
                              l, arith::CmpIPredicate::sgt, j, last);
                          return b.create<arith::SelectOp>(l, hidden, ninf,
                                                           args[0]);
                        }));
    return success();
  }
};

/// scores[b, .., j] = -inf where j >= lengths[b]
struct KeyPaddingMaskLowering : public OpConversionPattern<KeyPaddingMaskOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KeyPaddingMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    MLIRContext *ctx = rewriter.getContext();
    Value scores = adaptor.getScores();
    Value init = emptyTensor(rewriter, loc, sizesOf(rewriter, loc, scores),
                             type.getElementType());
    AffineMap full = rewriter.getMultiDimIdentityMap(rank);
    AffineMap batch = AffineMap::get(rank, 0, {getAffineDimExpr(0, ctx)}, ctx);
    Value ninf = floatConstant(rewriter, loc, type.getElementType(), -INFINITY);
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(
        op, TypeRange{type}, ValueRange{scores, adaptor.getLengths()},
        ValueRange{init}, ArrayRef<AffineMap>{full, batch, full},
        parallel(rank), [&](OpBuilder &b, Location l, ValueRange args) {
          Value j = b.create<linalg::IndexOp>(l, rank - 1);
          Value len = b.create<arith::IndexCastOp>(l, b.getIndexType(),
                                                   args[1]);
          Value hidden =
              b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, j, len);
          b.create<linalg::YieldOp>(
              l, b.create<arith::SelectOp>(l, hidden, ninf, args[0])
                     .getResult());
        });
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Heads and caches
//===----------------------------------------------------------------------===//

/// [B, S, H·Dh] -> expand [B, S, H, Dh] -> transpose [B, H, S, Dh]
struct SplitHeadsLowering : public OpConversionPattern<SplitHeadsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SplitHeadsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value x = adaptor.getInput();
    int64_t heads = type.getDimSize(1), headDim = type.getDimSize(3);
    auto expandedType = RankedTensorType::get(
        {tensorTypeOf(x).getDimSize(0), tensorTypeOf(x).getDimSize(1), heads,
         headDim},
        type.getElementType());
    SmallVector<OpFoldResult> shape = {dimOf(rewriter, loc, x, 0),
                                       dimOf(rewriter, loc, x, 1),
                                       rewriter.getIndexAttr(heads),
                                       rewriter.getIndexAttr(headDim)};
    Value expanded = rewriter.create<tensor::ExpandShapeOp>(
        loc, expandedType, x, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}},
        shape);
    SmallVector<OpFoldResult> outSizes = {shape[0], shape[2], shape[1],
                                          shape[3]};
    Value init = emptyTensor(rewriter, loc, outSizes, type.getElementType());
    Value t = rewriter
                  .create<linalg::TransposeOp>(loc, expanded, init,
                                               ArrayRef<int64_t>{0, 2, 1, 3})
                  ->getResult(0);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, type, t);
    return success();
  }
};

/// [B, H, S, Dh] -> transpose [B, S, H, Dh] -> collapse [B, S, H·Dh]
struct MergeHeadsLowering : public OpConversionPattern<MergeHeadsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MergeHeadsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, x);
    SmallVector<OpFoldResult> outSizes = {sizes[0], sizes[2], sizes[1],
                                          sizes[3]};
    Value init = emptyTensor(rewriter, loc, outSizes,
                             op.getType().getElementType());
    Value t = rewriter
                  .create<linalg::TransposeOp>(loc, x, init,
                                               ArrayRef<int64_t>{0, 2, 1, 3})
                  ->getResult(0);
    Value merged = rewriter.create<tensor::CollapseShapeOp>(
        loc, t, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), merged);
    return success();
  }
};

struct CacheUpdateLowering : public OpConversionPattern<CacheUpdateOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CacheUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value update = adaptor.getUpdate();
    int64_t rank = tensorTypeOf(update).getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    offsets[op.getAxis()] = adaptor.getOffset();
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, update, adaptor.getCache(), offsets,
        sizesOf(rewriter, loc, update), unitStrides(rewriter, rank));
    return success();
  }
};

struct SliceLowering : public OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    int64_t rank = tensorTypeOf(input).getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
    offsets[op.getAxis()] = adaptor.getOffset();
    sizes[op.getAxis()] = adaptor.getSize();
    Value slice = rewriter.create<tensor::ExtractSliceOp>(
        loc, input, offsets, sizes, unitStrides(rewriter, rank));
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), slice);
    return success();
  }
};

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

/// FlashAttention on [N, Sq, D] x [N, Sk, D] x [N, Sk, Dv]: for each batch
/// row n and block of queries, visit key blocks [k0, k0 + bk) in turn:
///   S = scale · Q_blk·K_blkᵀ (causal: -inf where k0 + j > q0 + i + Sk - Sq)
///   m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m')
///   l' = l·c + rowsum P;    O' = O·c + P·V_blk
/// and finally O / l. Key padding ends the key loop at lengths[b]; causal
/// attention ends it after the block's last visible key.
struct AttentionLowering : public OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, int64_t queryBlock, int64_t keyBlock)
      : OpConversionPattern(ctx), queryBlock(queryBlock), keyBlock(keyBlock) {}

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
    // Rows of the flattened batch per row of the first batch dimension.
    Value rowsPerBatch = indexConstant(rewriter, loc, 1);
    for (int64_t dim = 1; dim < rank - 2; ++dim)
      rowsPerBatch = rewriter.create<arith::MulIOp>(
          loc, rowsPerBatch,
          idx(dimOf(rewriter, loc, adaptor.getQuery(), dim)));
    Value shift = rewriter.create<arith::SubIOp>(loc, sk, sq);
    Value bq = indexConstant(rewriter, loc, queryBlock);
    Value bk = indexConstant(rewriter, loc, keyBlock);
    Value zero = indexConstant(rewriter, loc, 0);
    Value queryBlocks = rewriter.create<arith::CeilDivUIOp>(loc, sq, bq);

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
      Value kEnd = sk;
      if (lengths) {
        Value b = rewriter.create<arith::DivUIOp>(loc, row, rowsPerBatch);
        Value len = rewriter.create<arith::IndexCastOp>(
            loc, rewriter.getIndexType(),
            rewriter.create<tensor::ExtractOp>(loc, lengths, ValueRange{b}));
        kEnd = rewriter.create<arith::MinUIOp>(loc, kEnd, len);
      }
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
      Value tile = withRowValue(rewriter, loc, loop.getResult(2),
                                loop.getResult(1), quotient);
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
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertTfmToLinalgPass
    : public tfm::impl::ConvertTfmToLinalgPassBase<ConvertTfmToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Functions that read weights take the weights file as a leading
    // argument: memref<?xi8>, 64-byte aligned by the runtime.
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || func.getBody().getOps<WeightOp>().empty())
        continue;
      auto bytes = MemRefType::get({ShapedType::kDynamic},
                                   IntegerType::get(ctx, 8));
      func.insertArgument(0, bytes,
                          DictionaryAttr::get(ctx, {NamedAttribute(
                                                   StringAttr::get(ctx, "tfm.name"),
                                                   StringAttr::get(ctx, "weights"))}),
                          func.getLoc());
    }

    ConversionTarget target(*ctx);
    target.addIllegalDialect<TfmDialect>();
    // Weights in panels are read by the linears' lowering, then erased.
    target.addDynamicallyLegalOp<WeightOp>(
        [](WeightOp op) { return op->hasAttr(kPanelWidthAttr); });
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, memref::MemRefDialect,
                           bufferization::BufferizationDialect,
                           func::FuncDialect, vector::VectorDialect>();
    RewritePatternSet patterns(ctx);
    if (vectorWidth < 1 || (vectorWidth & (vectorWidth - 1))) {
      module.emitError() << "vector-width must be a power of two, found "
                         << int64_t(vectorWidth);
      return signalPassFailure();
    }
    populateTfmToLinalgPatterns(patterns, queryBlock, keyBlock, vectorWidth);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    WalkResult unread = module.walk([](WeightOp op) {
      if (!op->use_empty()) {
        op.emitOpError("is stored in panels for linears but read by ")
            << (*op->user_begin())->getName();
        return WalkResult::interrupt();
      }
      op.erase();
      return WalkResult::advance();
    });
    if (unread.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::tfm::populateTfmToLinalgPatterns(RewritePatternSet &patterns,
                                            int64_t queryBlock,
                                            int64_t keyBlock,
                                            int64_t vectorWidth) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<AddOpLowering, SubOpLowering, MulOpLowering, DivOpLowering,
               RsqrtOpLowering, SqrtOpLowering, ReluOpLowering, GeluOpLowering,
               SiluOpLowering, SelectOpLowering, ScaleOpLowering,
               WeightLowering, EmbeddingLowering, PositionEncodingLowering,
               MatmulLowering,
               SoftmaxLowering, MeanLowering, LayerNormLowering,
               CausalMaskLowering, KeyPaddingMaskLowering, SplitHeadsLowering,
               MergeHeadsLowering, CacheUpdateLowering, SliceLowering>(ctx);
  patterns.add<AttentionLowering>(ctx, queryBlock, keyBlock);
  patterns.add<LinearLowering, FusedLinearLowering>(ctx, vectorWidth);
}
