//===- OutlineKernels.cpp - One function per distinct parallel loop -*- C++ -*-===//
//
// A model repeats the same layer many times, and lowering gives each layer's
// ops the same loop nests over other weight views (memref.view of the
// weights buffer at another offset: the same type). Outlining each parallel
// loop into a function whose arguments are those views, and keeping one
// function per equivalent body, leaves the rest of the lowering and LLVM a
// kernel per distinct loop instead of one per layer.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/PassStatistics.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMOUTLINEKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

/// Values the loop reads from above it: its own operands (bounds, steps)
/// and what its body uses. Constants among them are not arguments: cloned
/// into the kernel, they keep the bounds and offsets static.
SetVector<Value> capturedValues(scf::ParallelOp loop) {
  SetVector<Value> captured(loop->getOperands().begin(),
                            loop->getOperands().end());
  getUsedValuesDefinedAbove(loop.getRegion(), captured);
  return captured;
}

bool isConstant(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         matchPattern(value, m_Constant());
}

/// func.func private @<name>(captured non-constants) { constants; loop }.
func::FuncOp outline(scf::ParallelOp loop, ArrayRef<Value> arguments,
                     ArrayRef<Value> constants, StringRef name,
                     OpBuilder &moduleBuilder) {
  SmallVector<Type> types;
  for (Value value : arguments)
    types.push_back(value.getType());
  auto kernel = moduleBuilder.create<func::FuncOp>(
      loop.getLoc(), name, moduleBuilder.getFunctionType(types, {}));
  kernel.setPrivate();
  kernel->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(kernel.getContext(),
                                         LLVM::Linkage::Internal));
  Block *body = kernel.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(body);
  IRMapping mapping;
  for (auto [value, argument] : llvm::zip(arguments, body->getArguments()))
    mapping.map(value, argument);
  for (Value value : constants)
    mapping.map(value, b.clone(*value.getDefiningOp())->getResult(0));
  b.clone(*loop, mapping);
  b.create<func::ReturnOp>(loop.getLoc());
  return kernel;
}

struct TfmOutlineKernelsPass
    : public tfm::impl::TfmOutlineKernelsPassBase<TfmOutlineKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      func.walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
        if (loop.getNumResults() == 0)
          loops.push_back(loop);
        return WalkResult::skip(); // a nested loop is part of its kernel
      });
    }

    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    SymbolTable symbols(module);
    // Kernels so far, by type: a new body equivalent to one of them calls
    // that one instead.
    DenseMap<Type, SmallVector<func::FuncOp>> kernels;
    int64_t outlined = 0, shared = 0;
    for (scf::ParallelOp loop : loops) {
      SmallVector<Value> arguments, constants;
      for (Value value : capturedValues(loop))
        (isConstant(value) ? constants : arguments).push_back(value);
      std::string name = "tfm_kernel_" + std::to_string(outlined);
      func::FuncOp kernel =
          outline(loop, arguments, constants, name, moduleBuilder);
      func::FuncOp twin;
      for (func::FuncOp other : kernels[kernel.getFunctionType()])
        if (OperationEquivalence::isRegionEquivalentTo(
                &kernel.getBody(), &other.getBody(),
                OperationEquivalence::IgnoreLocations)) {
          twin = other;
          break;
        }
      if (twin) {
        kernel.erase();
        kernel = twin;
        ++shared;
      } else {
        symbols.insert(kernel); // renamed if the name is taken
        kernels[kernel.getFunctionType()].push_back(kernel);
        ++outlined;
      }
      OpBuilder b(loop);
      b.create<func::CallOp>(loop.getLoc(), kernel, arguments);
      loop.erase();
    }
    tfm::recordPassStatistic(getName(), "kernels-outlined",
                             "Distinct parallel loops outlined", outlined);
    tfm::recordPassStatistic(getName(), "loops-sharing-a-kernel",
                             "Parallel loops that call an equivalent kernel",
                             shared);
  }
};

} // namespace
