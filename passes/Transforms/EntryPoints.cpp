//===- EntryPoints.cpp - Entry points and parallel bodies -*- C++ -*-===//
//
// Two small steps of the lowering to the LLVM dialect:
// tfm-mark-entry-points and tfm-inline-alloca-scopes.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMMARKENTRYPOINTSPASS
#define GEN_PASS_DEF_TFMINLINEALLOCASCOPESPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

/// Public entry points get the C interface (`_mlir_ciface_<name>`).
struct TfmMarkEntryPointsPass
    : public tfm::impl::TfmMarkEntryPointsPassBase<TfmMarkEntryPointsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        func->setAttr("llvm.emit_c_interface", UnitAttr::get(&getContext()));
  }
};

/// A scope whose body allocates nothing on the stack is inlined in its
/// place (see the pass's description for why).
struct TfmInlineAllocaScopesPass
    : public tfm::impl::TfmInlineAllocaScopesPassBase<
          TfmInlineAllocaScopesPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation().walk([&](memref::AllocaScopeOp scope) {
      bool allocates =
          scope.getBodyRegion()
              .walk([](memref::AllocaOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
      if (!allocates)
        scopes.push_back(scope);
    });
    IRRewriter rewriter(&getContext());
    for (memref::AllocaScopeOp scope : scopes) {
      Block *body = &scope.getBodyRegion().front();
      auto yield = cast<memref::AllocaScopeReturnOp>(body->getTerminator());
      SmallVector<Value> results(yield.getResults());
      rewriter.eraseOp(yield);
      rewriter.inlineBlockBefore(body, scope);
      rewriter.replaceOp(scope, results);
    }
  }
};

} // namespace
