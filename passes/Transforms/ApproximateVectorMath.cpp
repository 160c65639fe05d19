//===- ApproximateVectorMath.cpp - Polynomial exp on vectors ---*- C++ -*-===//
//
// The vectorized kernels (attention's online softmax, the linears' SiLU and
// GELU epilogues, T5's tanh GELU) take exp, erf and tanh of whole vectors.
// LLVM has no vector exp, erf or tanh on x86 and would call libm once per
// lane; MLIR's polynomial approximations keep them in vector registers. Only
// vector ops are rewritten, so scalar code keeps libm.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMAPPROXIMATEVECTORMATHPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

struct TfmApproximateVectorMathPass
    : public tfm::impl::TfmApproximateVectorMathPassBase<
          TfmApproximateVectorMathPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (!isa<math::ExpOp, math::ErfOp, math::TanhOp>(op))
        return;
      auto type = dyn_cast<VectorType>(op->getResult(0).getType());
      if (type && type.getElementType().isF32())
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    // Only the ops listed (and what their rewrites create) are rewritten.
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(ops, std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
