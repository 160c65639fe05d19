//===- FuseAttention.cpp - Fuse the attention block -------------*- C++ -*-===//
//
// Recognises softmax(scale · Q·Kᵀ + M) · V, walking back from the P·V matmul
// through the softmax and the chain of scales and masks that produced the
// scores, and replaces the block with one tfm.attention.
//
//===----------------------------------------------------------------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"
#include "passes/Transforms/PatternUtils.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMFUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// If `v` is `x · c` or `x / c` for a constant c (tfm.scale, or mul/div by a
/// splat that keeps the shape), returns x and multiplies `factor` by c or 1/c.
static Value peelScale(Value v, double &factor) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return {};
  if (auto scale = dyn_cast<ScaleOp>(op)) {
    factor *= scale.getFactor().convertToDouble();
    return scale.getInput();
  }
  if (auto mul = dyn_cast<MulOp>(op)) {
    for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())})
      if (std::optional<double> k = getSplatValue(c);
          k && x.getType() == mul.getType()) {
        factor *= *k;
        return x;
      }
    return {};
  }
  if (auto div = dyn_cast<DivOp>(op)) {
    std::optional<double> k = getSplatValue(div.getRhs());
    if (k && *k != 0.0 && div.getLhs().getType() == div.getType()) {
      factor /= *k;
      return div.getLhs();
    }
  }
  return {};
}

/// If K and V are read through the same tfm.cache_rows along their
/// positions' axis, returns its rows and replaces K and V by what it reads:
/// the attention then reads each key in its row (key_rows), no gather.
static Value peelCacheRows(Value &key, Value &value, int64_t rank) {
  auto keyRows = key.getDefiningOp<CacheRowsOp>();
  auto valueRows = value.getDefiningOp<CacheRowsOp>();
  if (!keyRows || !valueRows || keyRows.getRows() != valueRows.getRows() ||
      keyRows.getAxis() != uint64_t(rank - 2) ||
      valueRows.getAxis() != uint64_t(rank - 2))
    return {};
  key = keyRows.getInput();
  value = valueRows.getInput();
  return keyRows.getRows();
}

/// What the walk from the softmax back to Q·Kᵀ found.
struct AttentionParts {
  Value query, key;
  Value keyLengths, keyStarts;
  Value additiveMask;
  /// select(keep, scores, -inf): the additive mask select(keep, 0, -inf).
  Value keepCondition;
  bool causal = false;
  double scale = 1.0;
};

struct FuseAttentionPattern : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp probsTimesV,
                                PatternRewriter &rewriter) const override {
    if (probsTimesV.getTransposeLhs() || probsTimesV.getTransposeRhs())
      return rewriter.notifyMatchFailure(probsTimesV, "P·V is transposed");
    auto softmax = probsTimesV.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return rewriter.notifyMatchFailure(probsTimesV, "lhs is no softmax");
    if (!softmax->hasOneUse())
      return rewriter.notifyMatchFailure(softmax,
                                         "probabilities have other users");
    int64_t rank = softmax.getType().getRank();
    if (rank < 3 || softmax.getAxis() != uint64_t(rank - 1))
      return rewriter.notifyMatchFailure(softmax, "softmax is not over keys");

    AttentionParts parts;
    if (failed(matchScores(softmax.getInput(), parts, rewriter)))
      return failure();
    if (!std::isfinite(parts.scale) || parts.scale == 0.0)
      return rewriter.notifyMatchFailure(softmax,
                                         "scale is zero or not finite");

    Location loc = probsTimesV.getLoc();
    Value mask = parts.additiveMask;
    if (parts.keepCondition) {
      // select(keep, s, -inf) == s + select(keep, 0, -inf)
      Type elt = softmax.getType().getElementType();
      auto scalar = RankedTensorType::get({}, elt);
      auto constant = [&](double v) -> Value {
        return rewriter.create<arith::ConstantOp>(
            loc, DenseElementsAttr::get(scalar, rewriter.getFloatAttr(elt, v)));
      };
      mask = rewriter.create<SelectOp>(loc, parts.keepCondition, constant(0.0),
                                       constant(-INFINITY));
    }
    Value key = parts.key, value = probsTimesV.getRhs();
    Value keyRows = peelCacheRows(key, value, rank);
    rewriter.replaceOpWithNewOp<AttentionOp>(
        probsTimesV, probsTimesV.getType(), parts.query, key, value,
        parts.keyLengths, parts.keyStarts, keyRows, mask,
        parts.causal ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getF64FloatAttr(parts.scale));
    return success();
  }

private:
  /// Walks from the softmax input back to Q·Kᵀ. Program order is the reverse
  /// of the walk: a scale met before a mask in the walk comes after it.
  LogicalResult matchScores(Value scores, AttentionParts &parts,
                            PatternRewriter &rewriter) const {
    bool scaleAfter = false, negativeScaleAfter = false;
    while (true) {
      Operation *op = scores.getDefiningOp();
      if (!op)
        return failure();
      if (!scores.hasOneUse())
        return rewriter.notifyMatchFailure(op, "scores have other users");

      if (auto qk = dyn_cast<MatmulOp>(op))
        return matchQueryKey(qk, parts, rewriter);

      double factor = 1.0;
      if (Value input = peelScale(scores, factor)) {
        parts.scale *= factor;
        scaleAfter = true;
        negativeScaleAfter |= factor < 0.0;
        scores = input;
        continue;
      }
      // -inf masks commute with a later positive scale, not a negative one.
      if (isa<KeyPaddingMaskOp, KeyStartMaskOp, CausalMaskOp, SelectOp>(op) &&
          negativeScaleAfter)
        return rewriter.notifyMatchFailure(op, "negative scale after a mask");
      if (auto padding = dyn_cast<KeyPaddingMaskOp>(op)) {
        if (parts.keyLengths)
          return rewriter.notifyMatchFailure(op, "two padding masks");
        parts.keyLengths = padding.getLengths();
        scores = padding.getScores();
        continue;
      }
      if (auto start = dyn_cast<KeyStartMaskOp>(op)) {
        if (parts.keyStarts)
          return rewriter.notifyMatchFailure(op, "two start masks");
        parts.keyStarts = start.getStarts();
        scores = start.getScores();
        continue;
      }
      if (auto causal = dyn_cast<CausalMaskOp>(op)) {
        parts.causal = true;
        scores = causal.getScores();
        continue;
      }
      if (auto select = dyn_cast<SelectOp>(op)) {
        std::optional<double> fill = getSplatValue(select.getFalseValue());
        if (!fill || !std::isinf(*fill) || *fill > 0 ||
            select.getTrueValue().getType() != select.getType() ||
            parts.keepCondition || parts.additiveMask)
          return rewriter.notifyMatchFailure(op, "not select(keep, s, -inf)");
        parts.keepCondition = select.getCondition();
        scores = select.getTrueValue();
        continue;
      }
      if (auto add = dyn_cast<AddOp>(op)) {
        // s + M: a scale after it would scale M too, which tfm.attention
        // does not do.
        if (scaleAfter || parts.additiveMask || parts.keepCondition)
          return rewriter.notifyMatchFailure(op, "unsupported additive mask");
        Value lhs = add.getLhs(), rhs = add.getRhs();
        bool lhsIsScores = lhs.getType() == add.getType() && isScoreChain(lhs);
        bool rhsIsScores = rhs.getType() == add.getType() && isScoreChain(rhs);
        if (lhsIsScores == rhsIsScores)
          return rewriter.notifyMatchFailure(op,
                                             "cannot tell scores from mask");
        scores = lhsIsScores ? lhs : rhs;
        parts.additiveMask = lhsIsScores ? rhs : lhs;
        continue;
      }
      return rewriter.notifyMatchFailure(op, "not part of an attention block");
    }
  }

  /// Ops that compute scores on the way from Q·Kᵀ to the softmax.
  static bool isScoreChain(Value v) {
    Operation *op = v.getDefiningOp();
    return op && isa<MatmulOp, ScaleOp, MulOp, DivOp, KeyPaddingMaskOp,
                     KeyStartMaskOp, CausalMaskOp, SelectOp, AddOp>(op);
  }

  /// Q·Kᵀ, with scales on Q or K (used nowhere else) taken into the scale.
  LogicalResult matchQueryKey(MatmulOp qk, AttentionParts &parts,
                              PatternRewriter &rewriter) const {
    if (qk.getTransposeLhs() || !qk.getTransposeRhs())
      return rewriter.notifyMatchFailure(qk, "scores are not Q·Kᵀ");
    parts.query = qk.getLhs();
    parts.key = qk.getRhs();
    for (Value *operand : {&parts.query, &parts.key}) {
      double factor = 1.0;
      if (operand->hasOneUse())
        if (Value input = peelScale(*operand, factor)) {
          parts.scale *= factor;
          *operand = input;
        }
    }
    return success();
  }
};

struct TfmFuseAttentionPass
    : public tfm::impl::TfmFuseAttentionPassBase<TfmFuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t before = countOps<AttentionOp>(getOperation());
    RewritePatternSet patterns(&getContext());
    populateFuseAttentionPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    recordPassStatistic(getName(), "attention-blocks-fused",
                        "Number of attention blocks fused into tfm.attention",
                        countOps<AttentionOp>(getOperation()) - before);
  }
};

} // namespace

void mlir::tfm::populateFuseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttentionPattern>(patterns.getContext());
}
