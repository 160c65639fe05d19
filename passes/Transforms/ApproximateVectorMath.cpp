//===- ApproximateVectorMath.cpp - Polynomial exp on vectors ---*- C++ -*-===//
//
// The vectorized kernels (attention's online softmax, activation epilogues)
// take exp of whole vectors. LLVM has no vector exp on x86 and would call
// libm once per lane; MLIR's polynomial approximation keeps it in vector
// registers. Only vector exps are rewritten, so scalar code keeps libm.
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
    SmallVector<Operation *> exps;
    getOperation().walk([&](math::ExpOp op) {
      auto type = dyn_cast<VectorType>(op.getType());
      if (type && type.getElementType().isF32())
        exps.push_back(op);
    });
    if (exps.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    // Only the ops listed (and what their rewrites create) are rewritten.
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(exps, std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
