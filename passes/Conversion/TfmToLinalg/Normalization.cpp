//===- Normalization.cpp - Lower softmax, mean and layer norm ---*- C++ -*-===//
//
// Reductions over the last axis and the normalizations built on them.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Reductions and normalization
//===----------------------------------------------------------------------===//

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

} // namespace

void mlir::tfm::lowering::populateNormalizationLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering, MeanLowering, LayerNormLowering>(
      patterns.getContext());
}
