//===- Elementwise.cpp - Lower elementwise tfm ops and masks ----*- C++ -*-===//
//
// Elementwise ops and masks become linalg.generic ops over the result,
// operands broadcast NumPy-style.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

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
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(), type, adaptor.getOperands(),
                        [&](OpBuilder &b, Location loc, ValueRange args) {
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
TFM_ELEMENTWISE(ReluOp,
                return applyActivation(b, loc, Activation::relu, args[0]);)
TFM_ELEMENTWISE(GeluOp,
                return applyActivation(b, loc, Activation::gelu, args[0]);)
TFM_ELEMENTWISE(SiluOp,
                return applyActivation(b, loc, Activation::silu, args[0]);)
TFM_ELEMENTWISE(GeluTanhOp,
                return applyActivation(b, loc, Activation::gelu_tanh, args[0]);)
TFM_ELEMENTWISE(SelectOp, return b.create<arith::SelectOp>(loc, args[0],
                                                           args[1], args[2]);)
TFM_ELEMENTWISE(ScaleOp, {
  Value factor = floatConstant(b, loc, args[0].getType(),
                               op.getFactor().convertToDouble());
  return b.create<arith::MulFOp>(loc, args[0], factor);
})
#undef TFM_ELEMENTWISE

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

/// scores[b, .., j] = -inf where `j hidden bounds[b]` (`hidden` compares
/// key index j with its batch row's bound).
static Value maskByBatchRow(OpBuilder &rewriter, Location loc,
                            RankedTensorType type, Value scores, Value bounds,
                            arith::CmpIPredicate hidden) {
  int64_t rank = type.getRank();
  MLIRContext *ctx = rewriter.getContext();
  Value init = emptyTensor(rewriter, loc, sizesOf(rewriter, loc, scores),
                           type.getElementType());
  AffineMap full = rewriter.getMultiDimIdentityMap(rank);
  AffineMap batch = AffineMap::get(rank, 0, {getAffineDimExpr(0, ctx)}, ctx);
  Value ninf = floatConstant(rewriter, loc, type.getElementType(), -INFINITY);
  return rewriter
      .create<linalg::GenericOp>(
          loc, TypeRange{type}, ValueRange{scores, bounds}, ValueRange{init},
          ArrayRef<AffineMap>{full, batch, full}, parallel(rank),
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value j = b.create<linalg::IndexOp>(l, rank - 1);
            Value bound =
                b.create<arith::IndexCastOp>(l, b.getIndexType(), args[1]);
            Value isHidden = b.create<arith::CmpIOp>(l, hidden, j, bound);
            b.create<linalg::YieldOp>(
                l, b.create<arith::SelectOp>(l, isHidden, ninf, args[0])
                       .getResult());
          })
      .getResult(0);
}

/// scores[b, .., j] = -inf where j >= lengths[b]
struct KeyPaddingMaskLowering : public OpConversionPattern<KeyPaddingMaskOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KeyPaddingMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       maskByBatchRow(rewriter, op.getLoc(), op.getType(),
                                      adaptor.getScores(), adaptor.getLengths(),
                                      arith::CmpIPredicate::sge));
    return success();
  }
};

/// scores[b, .., j] = -inf where j < starts[b]
struct KeyStartMaskLowering : public OpConversionPattern<KeyStartMaskOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KeyStartMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       maskByBatchRow(rewriter, op.getLoc(), op.getType(),
                                      adaptor.getScores(), adaptor.getStarts(),
                                      arith::CmpIPredicate::slt));
    return success();
  }
};

} // namespace

void mlir::tfm::lowering::populateElementwiseLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AddOpLowering, SubOpLowering, MulOpLowering, DivOpLowering,
               RsqrtOpLowering, SqrtOpLowering, ReluOpLowering, GeluOpLowering,
               GeluTanhOpLowering, SiluOpLowering, SelectOpLowering,
               ScaleOpLowering, CausalMaskLowering, KeyPaddingMaskLowering,
               KeyStartMaskLowering>(patterns.getContext());
}
