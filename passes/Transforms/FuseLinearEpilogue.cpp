//===- FuseLinearEpilogue.cpp - Fold epilogues into linears -----*- C++ -*-===//
//
// residual + act(x·Wᵀ + b): follows the single use of a tfm.linear through a
// bias add, an activation and a residual add, in that order, and replaces the
// chain with one tfm.fused_linear.
//
//===----------------------------------------------------------------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"
#include "passes/Transforms/PatternUtils.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMFUSELINEAREPILOGUEPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {

static std::optional<Activation> activationOf(Operation *op) {
  if (isa<ReluOp>(op))
    return Activation::relu;
  if (isa<GeluOp>(op))
    return Activation::gelu;
  if (isa<SiluOp>(op))
    return Activation::silu;
  if (isa<GeluTanhOp>(op))
    return Activation::gelu_tanh;
  return std::nullopt;
}

struct FuseLinearEpiloguePattern : public OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp linear,
                                PatternRewriter &rewriter) const override {
    Operation *root = linear;
    Value bias = linear.getBias(), residual;
    Activation activation = Activation::none;
    int64_t outFeatures = linear.getWeight().getType().getDimSize(0);

    // + b, with b an [N] vector or [1, .., 1, N] (a checkpoint's
    // final_logits_bias) that does not widen the result, when the linear
    // has no bias of its own
    if (auto add = dyn_cast_or_null<AddOp>(soleUser(root)); add && !bias) {
      Value b = otherOperand(add, root->getResult(0));
      auto t = b ? dyn_cast<RankedTensorType>(b.getType()) : nullptr;
      if (t && add.getType() == root->getResult(0).getType() &&
          t.getRank() >= 1 && t.getShape().back() == outFeatures &&
          llvm::all_of(t.getShape().drop_back(),
                       [](int64_t size) { return size == 1; })) {
        bias = b;
        if (t.getRank() > 1) {
          rewriter.setInsertionPoint(add);
          SmallVector<ReassociationIndices> all(1);
          for (int64_t d = 0; d < t.getRank(); ++d)
            all[0].push_back(d);
          bias = rewriter.create<tensor::CollapseShapeOp>(add.getLoc(), b, all);
        }
        root = add;
      }
    }
    // act(...)
    if (Operation *user = soleUser(root))
      if (std::optional<Activation> act = activationOf(user)) {
        activation = *act;
        root = user;
      }
    // ... + residual, of the same shape
    if (auto add = dyn_cast_or_null<AddOp>(soleUser(root))) {
      Value r = otherOperand(add, root->getResult(0));
      if (r && r.getType() == add.getType()) {
        residual = r;
        root = add;
      }
    }
    if (root == linear.getOperation())
      return rewriter.notifyMatchFailure(linear, "no epilogue to fuse");

    rewriter.replaceOpWithNewOp<FusedLinearOp>(
        root, root->getResult(0).getType(), activation, linear.getInput(),
        linear.getWeight(), bias, residual);
    return success();
  }
};

struct TfmFuseLinearEpiloguePass
    : public tfm::impl::TfmFuseLinearEpiloguePassBase<
          TfmFuseLinearEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t before = countOps<FusedLinearOp>(getOperation());
    RewritePatternSet patterns(&getContext());
    populateFuseLinearEpiloguePatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    recordPassStatistic(getName(), "linears-fused",
                        "Number of linears given a fused epilogue",
                        countOps<FusedLinearOp>(getOperation()) - before);
  }
};

} // namespace

void mlir::tfm::populateFuseLinearEpiloguePatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseLinearEpiloguePattern>(patterns.getContext());
}
