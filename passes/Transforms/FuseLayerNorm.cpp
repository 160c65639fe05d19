//===- FuseLayerNorm.cpp - Fuse layer normalization -------------*- C++ -*-===//
//
// Recognises, over the last axis,
//   mean = E[x];  c = x - mean;  var = E[c·c]  (or E[x·x] - mean·mean)
//   n = c · rsqrt(var + eps)   (or c / sqrt(var + eps))
//   y = n · γ + β              (γ, β optional, each a [D] vector)
// and the RMS norm, c = x and var = E[x·x] (T5's), anchored at n, and
// replaces it with tfm.layer_norm, folding x = a + b when the sum feeds
// nothing else.
//
//===----------------------------------------------------------------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"
#include "passes/Transforms/PatternUtils.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMFUSELAYERNORMPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// `mean(x)` over the last axis of x, or null.
static MeanOp lastAxisMean(Value v) {
  auto mean = v.getDefiningOp<MeanOp>();
  if (!mean || mean.getAxis() + 1 != uint64_t(mean.getType().getRank()))
    return {};
  return mean;
}

/// `v · v`, or null.
static MulOp squareOf(Value square, Value v) {
  auto mul = square.getDefiningOp<MulOp>();
  if (!mul || mul.getLhs() != v || mul.getRhs() != v)
    return {};
  return mul;
}

/// x from c and var, the ops of the statistics added to `chain`: c = x -
/// mean(x) with var = E[c·c] or E[x·x] - mean·mean (a layer norm), or c = x
/// with var = E[x·x] (`rms`).
static FailureOr<Value>
matchStatistics(Value centered, Value variance,
                llvm::SmallPtrSetImpl<Operation *> &chain, bool &rms) {
  auto sub = centered.getDefiningOp<SubOp>();
  MeanOp mean = sub ? lastAxisMean(sub.getRhs()) : MeanOp();
  MeanOp varMean = lastAxisMean(variance);
  if (!mean || mean.getInput() != sub.getLhs()) {
    MulOp square = varMean ? squareOf(varMean.getInput(), centered) : MulOp();
    if (!square || !varMean->hasOneUse() || !square->hasOneUse())
      return failure();
    chain.insert({varMean, square});
    rms = true;
    return centered;
  }
  Value x = sub.getLhs();
  chain.insert({sub, mean});
  if (varMean) {
    MulOp square = squareOf(varMean.getInput(), centered);
    if (!square || !varMean->hasOneUse() || !square->hasOneUse())
      return failure();
    chain.insert({varMean, square});
  } else if (auto diff = variance.getDefiningOp<SubOp>()) {
    MeanOp meanSq = lastAxisMean(diff.getLhs());
    MulOp xSquare = meanSq ? squareOf(meanSq.getInput(), x) : MulOp();
    MulOp meanSquare = squareOf(diff.getRhs(), mean);
    if (!xSquare || !meanSquare || !diff->hasOneUse() || !meanSq->hasOneUse() ||
        !xSquare->hasOneUse() || !meanSquare->hasOneUse())
      return failure();
    chain.insert({diff, meanSq, xSquare, meanSquare});
  } else {
    return failure();
  }
  if (!onlyUsedBy(centered, chain) || !onlyUsedBy(mean, chain))
    return failure();
  return x;
}

template <typename NormalizeOp>
struct FuseLayerNormPattern : public OpRewritePattern<NormalizeOp> {
  using OpRewritePattern<NormalizeOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(NormalizeOp normalize,
                                PatternRewriter &rewriter) const override {
    // n = c · rsqrt(d)  or  n = c / sqrt(d)
    Value centered, shifted;
    Operation *invStd = nullptr;
    if constexpr (std::is_same_v<NormalizeOp, MulOp>) {
      for (auto [c, r] : {std::pair(normalize.getLhs(), normalize.getRhs()),
                          std::pair(normalize.getRhs(), normalize.getLhs())})
        if (auto rsqrt = r.template getDefiningOp<RsqrtOp>()) {
          centered = c;
          shifted = rsqrt.getInput();
          invStd = rsqrt;
          break;
        }
    } else {
      if (auto sqrt = normalize.getRhs().template getDefiningOp<SqrtOp>()) {
        centered = normalize.getLhs();
        shifted = sqrt.getInput();
        invStd = sqrt;
      }
    }
    if (!invStd || !invStd->hasOneUse())
      return failure();

    // d = var + eps
    auto addEps = shifted.getDefiningOp<AddOp>();
    if (!addEps || !addEps->hasOneUse())
      return failure();
    Value variance;
    std::optional<double> eps;
    for (auto [v, e] : {std::pair(addEps.getLhs(), addEps.getRhs()),
                        std::pair(addEps.getRhs(), addEps.getLhs())})
      if ((eps = getSplatValue(e)) && v.getType() == addEps.getType()) {
        variance = v;
        break;
      }
    if (!variance || !(*eps > 0.0))
      return rewriter.notifyMatchFailure(addEps, "no positive epsilon");

    llvm::SmallPtrSet<Operation *, 8> chain = {normalize, invStd, addEps};
    bool rms = false;
    FailureOr<Value> matched = matchStatistics(centered, variance, chain, rms);
    if (failed(matched))
      return rewriter.notifyMatchFailure(normalize,
                                         "no mean and variance of one x");
    Value x = *matched;
    auto xType = cast<RankedTensorType>(x.getType());
    if (centered.getType() != xType || normalize.getType() != xType)
      return rewriter.notifyMatchFailure(normalize, "shapes change");

    // y = n · γ + β, each optional and a [D] vector.
    int64_t dim = xType.getShape().back();
    auto isVector = [&](Value v) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      return v && t && t.getRank() == 1 && dim != ShapedType::kDynamic &&
             t.getDimSize(0) == dim;
    };
    Operation *root = normalize;
    Value gamma, beta;
    if (auto mul = dyn_cast_or_null<MulOp>(soleUser(root))) {
      Value g = otherOperand(mul, root->getResult(0));
      if (isVector(g)) {
        gamma = g;
        root = mul;
      }
    }
    if (auto add = dyn_cast_or_null<AddOp>(soleUser(root))) {
      Value b = otherOperand(add, root->getResult(0));
      if (isVector(b)) {
        beta = b;
        root = add;
      }
    }

    // x = input + residual, when x serves this norm alone.
    Value input = x, residual;
    if (auto add = x.getDefiningOp<AddOp>())
      if (add.getLhs().getType() == xType && add.getRhs().getType() == xType &&
          onlyUsedBy(x, chain)) {
        input = add.getLhs();
        residual = add.getRhs();
      }

    rewriter.replaceOpWithNewOp<LayerNormOp>(
        root, input, residual, gamma, beta, rewriter.getF64FloatAttr(*eps),
        rms ? rewriter.getUnitAttr() : UnitAttr());
    return success();
  }
};

struct TfmFuseLayerNormPass
    : public tfm::impl::TfmFuseLayerNormPassBase<TfmFuseLayerNormPass> {
  using Base::Base;

  void runOnOperation() override {
    auto withResidual = [](LayerNormOp op) { return bool(op.getResidual()); };
    int64_t before = countOps<LayerNormOp>(getOperation()),
            residualsBefore =
                countOps<LayerNormOp>(getOperation(), withResidual);
    RewritePatternSet patterns(&getContext());
    populateFuseLayerNormPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    recordPassStatistic(getName(), "layer-norms-fused",
                        "Number of layer norms fused into tfm.layer_norm",
                        countOps<LayerNormOp>(getOperation()) - before);
    recordPassStatistic(getName(), "residuals-folded",
                        "Number of residual adds folded into tfm.layer_norm",
                        countOps<LayerNormOp>(getOperation(), withResidual) -
                            residualsBefore);
  }
};

} // namespace

void mlir::tfm::populateFuseLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseLayerNormPattern<MulOp>, FuseLayerNormPattern<DivOp>>(
      patterns.getContext());
}
