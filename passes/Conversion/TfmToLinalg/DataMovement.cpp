//===- DataMovement.cpp - Lower weights, embeddings, heads, caches --*- C++ -*-===//
//
// Ops that move data: weights as views of the weights file, embedding
// lookups, position encodings, head split/merge, cache updates, slices.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

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

} // namespace

void mlir::tfm::lowering::populateDataMovementLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<WeightLowering, EmbeddingLowering, PositionEncodingLowering,
               SplitHeadsLowering, MergeHeadsLowering, CacheUpdateLowering,
               SliceLowering>(patterns.getContext());
}
