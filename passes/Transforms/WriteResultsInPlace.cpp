//===- WriteResultsInPlace.cpp - Results in their out-params --*- C++ -*-===//
//
// Bufferization turns a function's results into out-params (buffers the
// caller passes) but computes each result in a temporary and copies it into
// its out-param at the return: the logits of a decode step were written
// once, copied, and copied again; a layer norm over 1024 rows spent as long
// on the copy as on itself. When the temporary is a plain allocation that
// nothing touches after the copy, the out-param can take its place.
//
//===----------------------------------------------------------------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMWRITERESULTSINPLACEPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

/// Views that keep the row-major order of the elements of a contiguous
/// buffer: element i of the view is element i of the buffer.
bool keepsElementOrder(Operation *op) {
  if (!isa<memref::ReshapeOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
           memref::CastOp>(op))
    return false;
  auto type = cast<MemRefType>(op->getResult(0).getType());
  return type.getLayout().isIdentity();
}

/// The allocations `value` may be, seen through order-keeping views and the
/// branches of an scf.if that allocate it (each branch its own buffer);
/// false if it may be anything else.
bool viewedAllocations(Value value, SmallVectorImpl<memref::AllocOp> &allocs) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (auto alloc = dyn_cast<memref::AllocOp>(def)) {
    if (!alloc.getType().getLayout().isIdentity())
      return false;
    if (!llvm::is_contained(allocs, alloc))
      allocs.push_back(alloc);
    return true;
  }
  if (keepsElementOrder(def))
    return viewedAllocations(def->getOperand(0), allocs);
  auto branch = dyn_cast<scf::IfOp>(def);
  if (!branch || branch.getElseRegion().empty())
    return false;
  unsigned index = cast<OpResult>(value).getResultNumber();
  for (Block *block : {branch.thenBlock(), branch.elseBlock()}) {
    Value yielded = block->getTerminator()->getOperand(index);
    auto alloc = yielded.getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != block ||
        !viewedAllocations(yielded, allocs))
      return false;
  }
  return true;
}

/// `out` seen with the shape of `alloc`: both are contiguous and row-major,
/// so the same elements, reinterpreted with the allocation's sizes and the
/// row-major strides stride[d] = size[d + 1] · stride[d + 1].
Value outParamAs(OpBuilder &b, memref::AllocOp alloc, Value out) {
  MemRefType type = alloc.getType();
  if (out.getType() == type)
    return out;
  Location loc = alloc.getLoc();
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes;
  auto dynamic = alloc.getDynamicSizes().begin();
  for (int64_t size : type.getShape())
    sizes.push_back(ShapedType::isDynamic(size) ? OpFoldResult(*dynamic++)
                                                : b.getIndexAttr(size));
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  for (int64_t d = rank - 2; d >= 0; --d) {
    std::optional<int64_t> next = getConstantIntValue(sizes[d + 1]);
    std::optional<int64_t> inner = getConstantIntValue(strides[d + 1]);
    if (next && inner) {
      strides[d] = b.getIndexAttr(*next * *inner);
      continue;
    }
    strides[d] =
        b.create<arith::MulIOp>(
             loc, getValueOrCreateConstantIndexOp(b, loc, sizes[d + 1]),
             getValueOrCreateConstantIndexOp(b, loc, strides[d + 1]))
            .getResult();
  }
  SmallVector<int64_t> staticStrides;
  for (OpFoldResult stride : strides)
    staticStrides.push_back(
        getConstantIntValue(stride).value_or(ShapedType::kDynamic));
  auto viewType =
      MemRefType::get(type.getShape(), type.getElementType(),
                      StridedLayoutAttr::get(b.getContext(), 0, staticStrides));
  Value view = b.create<memref::ReinterpretCastOp>(
      loc, viewType, out, b.getIndexAttr(0), sizes, strides);
  return b.create<memref::CastOp>(loc, type, view);
}

struct WriteResultsInPlacePass
    : tfm::impl::TfmWriteResultsInPlacePassBase<WriteResultsInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    // The copies into out-params at the return: after each, only more of
    // them (which read no temporary that the copies before write).
    SmallVector<memref::CopyOp> copies;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      auto copy = dyn_cast<memref::CopyOp>(op);
      auto out = copy ? dyn_cast<BlockArgument>(copy.getTarget()) : nullptr;
      if (!out || out.getOwner() != &body || !out.hasOneUse())
        break;
      copies.push_back(copy);
    }
    int64_t inPlace = 0;
    OpBuilder b(func.getContext());
    for (memref::CopyOp copy : copies) {
      SmallVector<memref::AllocOp> allocs;
      if (!viewedAllocations(copy.getSource(), allocs))
        continue;
      for (memref::AllocOp alloc : allocs) {
        b.setInsertionPoint(alloc);
        alloc.getResult().replaceAllUsesWith(
            outParamAs(b, alloc, copy.getTarget()));
        alloc.erase();
      }
      // The copy now moves the out-param's elements onto themselves.
      copy.erase();
      ++inPlace;
    }
    tfm::recordPassStatistic(getName(), "results-in-place",
                             "results computed in their out-params", inPlace);
  }
};

} // namespace
