//===- Decompose.cpp - Fused ops back to primitive ops ----------*- C++ -*-===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "mlir/IR/Matchers.h"
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

/// The linears a stacked one was made of (tfm-fuse-sibling-linears): when
/// its weight (and bias) stack parts and its results are slices of its last
/// axis, one per part in order, that tile it, part k's weight, bias and
/// linear take the place of slice k: the new weights where the stacked ones
/// were, each linear before the first user of its slice. Returns whether it
/// did.
bool unstack(LinearOp linear, IRRewriter &rewriter) {
  auto weight = linear.getWeight().getDefiningOp<WeightOp>();
  if (!weight || !weight.getParts())
    return false;
  ArrayAttr parts = *weight.getParts();
  WeightOp bias;
  if (linear.getBias()) {
    bias = linear.getBias().getDefiningOp<WeightOp>();
    if (!bias || !bias.getParts() || bias.getParts()->size() != parts.size())
      return false;
  }
  int64_t axis = linear.getType().getRank() - 1;
  SmallVector<std::pair<int64_t, SliceOp>> slices;
  for (Operation *user : linear->getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    APInt offset;
    if (!slice || int64_t(slice.getAxis()) != axis ||
        !matchPattern(slice.getOffset(), m_ConstantInt(&offset)))
      return false;
    slices.push_back({offset.getSExtValue(), slice});
  }
  llvm::sort(slices, [](auto &a, auto &b) { return a.first < b.first; });
  if (slices.size() != parts.size())
    return false;
  int64_t end = 0;
  SmallVector<int64_t> rows;
  for (auto &[offset, slice] : slices) {
    APInt size;
    if (offset != end || !matchPattern(slice.getSize(), m_ConstantInt(&size)))
      return false;
    rows.push_back(size.getSExtValue());
    end += rows.back();
  }
  if (end != weight.getType().getDimSize(0))
    return false;

  RankedTensorType weightType = weight.getType();
  for (auto [k, entry] : llvm::enumerate(slices)) {
    SliceOp slice = entry.second;
    rewriter.setInsertionPoint(weight);
    SmallVector<int64_t> shape(weightType.getShape());
    shape[0] = rows[k];
    auto partWeight =
        rewriter.create<WeightOp>(weight.getLoc(), weightType.clone(shape),
                                  cast<StringAttr>(parts[k]).getValue());
    Value partBias;
    if (bias) {
      rewriter.setInsertionPoint(weight);
      partBias = rewriter.create<WeightOp>(
          bias.getLoc(), bias.getType().clone({rows[k]}),
          cast<StringAttr>((*bias.getParts())[k]).getValue());
    }
    // Before the first user of the slice in its block, else the slice.
    Operation *at = slice;
    for (Operation *user : slice->getUsers())
      if (user->getBlock() == slice->getBlock() &&
          (at == slice.getOperation() || user->isBeforeInBlock(at)))
        at = user;
    rewriter.setInsertionPoint(at);
    Value part =
        rewriter.create<LinearOp>(linear.getLoc(), slice.getType(),
                                  linear.getInput(), partWeight, partBias);
    rewriter.replaceOp(slice, part);
  }
  rewriter.eraseOp(linear);
  for (WeightOp stacked : {weight, bias})
    if (stacked && stacked->use_empty())
      rewriter.eraseOp(stacked);
  return true;
}

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
    SmallVector<LinearOp> linears;
    getOperation()->walk([&](LinearOp linear) { linears.push_back(linear); });
    int64_t unstacked = 0;
    for (LinearOp linear : linears)
      unstacked += unstack(linear, rewriter);
    recordPassStatistic(getName(), "ops-decomposed",
                        "Number of fused ops decomposed", fused.size());
    recordPassStatistic(getName(), "linears-unstacked",
                        "Number of stacked linears split back", unstacked);
  }
};
} // namespace
