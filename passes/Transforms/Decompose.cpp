//===- Decompose.cpp - Fused ops back to primitive ops --------------*- C++ -*-===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMDECOMPOSEPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {
struct TfmDecomposePass
    : public tfm::impl::TfmDecomposePassBase<TfmDecomposePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::AggregatedOpInterface> fused;
    getOperation()->walk([&](linalg::AggregatedOpInterface op) {
      if (isa<TfmDialect>(op->getDialect()))
        fused.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::AggregatedOpInterface op : fused) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values = op.decomposeOperation(rewriter);
      if (failed(values)) {
        op->emitOpError("cannot be decomposed");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *values);
    }
    recordPassStatistic(getName(), "ops-decomposed",
                        "Number of fused ops decomposed", fused.size());
  }
};
} // namespace
