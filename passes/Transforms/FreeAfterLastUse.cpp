//===- FreeAfterLastUse.cpp - Free buffers at their last use ----*- C++ -*-===//
//
// Ownership-based buffer deallocation frees a buffer at the end of the block
// that owns it: in a function body, at the return. The encoder then holds
// every temporary of every layer until it ends (its peak memory is the sum
// of them, each touched once on fresh pages), and a decode step never
// reuses a buffer while it runs. Moving each `memref.dealloc` up to just
// after the last use of anything that may alias its buffer lets the
// allocator hand the same, cache-warm memory to the ops that follow.
//
//===----------------------------------------------------------------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMFREEAFTERLASTUSEPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

/// The last op of `block` before `dealloc` that is, or holds in its
/// regions, a use or the definition of a value aliasing the freed buffer;
/// null if some alias is used outside the block or after the dealloc
/// (then the dealloc stays where it is).
Operation *lastUseBefore(memref::DeallocOp dealloc,
                         const BufferViewFlowAnalysis &aliasing) {
  Block *block = dealloc->getBlock();
  // Every value sharing the allocation: the buffers it was derived from,
  // and everything derived from those (views, casts, branch results).
  llvm::SmallPtrSet<Value, 16> aliases;
  for (Value root : aliasing.resolveReverse(dealloc.getMemref()))
    for (Value alias : aliasing.resolve(root))
      aliases.insert(alias);

  Operation *last = nullptr;
  auto consider = [&](Operation *op) {
    Operation *inBlock = block->findAncestorOpInBlock(*op);
    if (!inBlock || dealloc->isBeforeInBlock(inBlock))
      return false;
    if (!last || last->isBeforeInBlock(inBlock))
      last = inBlock;
    return true;
  };
  for (Value alias : aliases) {
    if (Operation *def = alias.getDefiningOp())
      if (!consider(def))
        return nullptr;
    for (Operation *user : alias.getUsers())
      if (user != dealloc.getOperation() && !consider(user))
        return nullptr;
  }
  return last;
}

struct FreeAfterLastUsePass
    : tfm::impl::TfmFreeAfterLastUsePassBase<FreeAfterLastUsePass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    BufferViewFlowAnalysis aliasing(root);
    SmallVector<memref::DeallocOp> deallocs;
    root->walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    int64_t moved = 0;
    for (memref::DeallocOp dealloc : deallocs) {
      Operation *last = lastUseBefore(dealloc, aliasing);
      if (!last || last->getNextNode() == dealloc.getOperation())
        continue;
      dealloc->moveAfter(last);
      ++moved;
    }
    tfm::recordPassStatistic(getName(), "deallocs-moved",
                             "frees moved up to the buffer's last use", moved);
  }
};

} // namespace
