//===- ResolveTensorDims.cpp - Sizes from where they are made -*- C++ -*-===//
//
// Each lowered kernel reads its row count as `tensor.dim` of its input, the
// result of the kernel before it: an scf.if (serial or parallel rows) that
// yields an scf.forall or scf.for whose destination is a tensor.empty of the
// previous kernel's row count. One-shot bufferization compares slice sizes
// with ValueBoundsConstraintSet, which follows such a size back through
// every kernel of the model and, at each scf.if, compares its two branches
// with a Presburger solve over everything behind them: the cost grew about
// threefold per pre-norm layer. Here each `tensor.dim` whose size provably
// comes from one earlier value (an operand of a tensor.empty, a slice's
// size, or the dim of a tensor no rule sees through, such as an argument)
// is replaced by that value, so the sizes of all kernels read the model's
// inputs directly and the analysis stops there.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMRESOLVETENSORDIMSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

/// Where one dynamic size comes from: an index value, or else dimension
/// `dim` of `tensor`, which no rule below sees through.
struct SizeSource {
  Value index;
  Value tensor;
  int64_t dim = 0;

  bool operator==(const SizeSource &other) const {
    return index == other.index && tensor == other.tensor && dim == other.dim;
  }
};

/// The source of dynamic dimension `dim` of `value`, following the ops our
/// kernels build: destinations (linalg, insert_slice, transfer_write),
/// scf.forall and scf.for results (their inits, a loop only when every
/// iteration keeps the size), scf.if results (when both branches agree),
/// tensor.empty and tensor.extract_slice sizes, and casts.
SizeSource sourceOf(Value value, int64_t dim) {
  SizeSource opaque{Value(), value, dim};
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return opaque;
  Operation *def = result.getOwner();
  unsigned index = result.getResultNumber();
  if (auto empty = dyn_cast<tensor::EmptyOp>(def))
    return {empty.getDynamicSize(dim), Value(), 0};
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
    if (slice.getSourceType().getRank() != slice.getType().getRank())
      return opaque;
    OpFoldResult size = slice.getMixedSizes()[dim];
    if (auto sizeValue = dyn_cast<Value>(size))
      return {sizeValue, Value(), 0};
    return opaque;
  }
  if (auto cast = dyn_cast<tensor::CastOp>(def)) {
    if (cast.getSource().getType().isDynamicDim(dim))
      return sourceOf(cast.getSource(), dim);
    return opaque;
  }
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(def))
    return sourceOf(dps.getDpsInitOperand(index)->get(), dim);
  if (auto forall = dyn_cast<scf::ForallOp>(def))
    return sourceOf(forall.getOutputs()[index], dim);
  if (auto loop = dyn_cast<scf::ForOp>(def)) {
    Value carried = loop.getRegionIterArgs()[index];
    Value yielded = loop.getYieldedValues()[index];
    if (!(sourceOf(yielded, dim) == SizeSource{Value(), carried, dim}))
      return opaque;
    return sourceOf(loop.getInitArgs()[index], dim);
  }
  if (auto branch = dyn_cast<scf::IfOp>(def)) {
    if (branch.getElseRegion().empty())
      return opaque;
    SizeSource thenSource = sourceOf(branch.thenYield().getOperand(index), dim);
    if (thenSource == sourceOf(branch.elseYield().getOperand(index), dim))
      return thenSource;
  }
  return opaque;
}

struct ResolveTensorDims
    : tfm::impl::TfmResolveTensorDimsPassBase<ResolveTensorDims> {
  void runOnOperation() override {
    DominanceInfo dominance(getOperation());
    SmallVector<tensor::DimOp> dims;
    getOperation()->walk([&](tensor::DimOp op) { dims.push_back(op); });
    for (tensor::DimOp op : dims)
      resolve(op, dominance);
  }

  /// Replaces `op` by its size's source where the source is visible there.
  void resolve(tensor::DimOp op, DominanceInfo &dominance) {
    std::optional<int64_t> dim = op.getConstantIndex();
    auto type = dyn_cast<RankedTensorType>(op.getSource().getType());
    if (!dim || !type || *dim < 0 || *dim >= type.getRank() ||
        !type.isDynamicDim(*dim))
      return;
    SizeSource source = sourceOf(op.getSource(), *dim);
    if (source.index) {
      if (dominance.properlyDominates(source.index, op)) {
        op.replaceAllUsesWith(source.index);
        op.erase();
      }
      return;
    }
    if (source.tensor == op.getSource() ||
        !dominance.properlyDominates(source.tensor, op))
      return;
    op.getSourceMutable().assign(source.tensor);
  }
};

} // namespace
