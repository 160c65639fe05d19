//===- StackTemporaries.cpp - Parallel bodies' scratch on the stack -*- C++
//-*-===//
//
// Bufferization gives a kernel's scratch tensors (the attention kernel's
// running maxima, sums and score tiles) a heap buffer allocated and freed
// in every iteration of its parallel loop: one malloc and free per buffer,
// row and head at every decoder step. Small buffers of a static shape that
// live and die within one iteration go on the stack instead; the
// iteration's alloca scope (convert-scf-to-openmp's, kept by
// tfm-inline-alloca-scopes as a stack save and restore) gives the space
// back when the iteration ends.
//
//===----------------------------------------------------------------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMSTACKTEMPORARIESPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

/// The scf.parallel whose iteration holds `op` with no loop between them
/// (an alloca inside an inner loop would grow the stack at each of its
/// iterations); null if there is none.
scf::ParallelOp iterationOf(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (auto parallel = dyn_cast<scf::ParallelOp>(parent))
      return parallel;
    if (isa<LoopLikeOpInterface, FunctionOpInterface>(parent))
      return {};
  }
  return {};
}

/// Its deallocs, if the buffer lives and dies within one iteration of
/// `loop`: every value that may alias it is used only inside the loop's
/// body, and only the buffer itself is freed (by at least one dealloc).
std::optional<SmallVector<memref::DeallocOp>>
deallocsWithin(memref::AllocOp alloc, scf::ParallelOp loop,
               const BufferViewFlowAnalysis &aliasing) {
  SmallVector<memref::DeallocOp> deallocs;
  for (Value alias : aliasing.resolve(alloc.getResult()))
    for (Operation *user : alias.getUsers()) {
      if (!loop->isProperAncestor(user))
        return std::nullopt;
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        if (alias != alloc.getResult())
          return std::nullopt;
        deallocs.push_back(dealloc);
      }
    }
  if (deallocs.empty())
    return std::nullopt;
  return deallocs;
}

struct StackTemporariesPass
    : tfm::impl::TfmStackTemporariesPassBase<StackTemporariesPass> {
  using Base::Base;

  void runOnOperation() override {
    Operation *root = getOperation();
    BufferViewFlowAnalysis aliasing(root);
    SmallVector<memref::AllocOp> allocs;
    root->walk([&](memref::AllocOp op) { allocs.push_back(op); });
    int64_t moved = 0;
    for (memref::AllocOp alloc : allocs) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          type.getNumElements() * type.getElementTypeBitWidth() / 8 > maxBytes)
        continue;
      scf::ParallelOp loop = iterationOf(alloc);
      if (!loop)
        continue;
      std::optional<SmallVector<memref::DeallocOp>> deallocs =
          deallocsWithin(alloc, loop, aliasing);
      if (!deallocs)
        continue;
      OpBuilder b(alloc);
      auto onStack = b.create<memref::AllocaOp>(alloc.getLoc(), type,
                                                alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(onStack.getResult());
      alloc.erase();
      for (memref::DeallocOp dealloc : *deallocs)
        dealloc.erase();
      ++moved;
    }
    tfm::recordPassStatistic(getName(), "buffers-on-stack",
                             "parallel iterations' buffers moved to the stack",
                             moved);
  }
};

} // namespace
