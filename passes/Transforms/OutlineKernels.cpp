//===- OutlineKernels.cpp - One function per distinct loop nest -----------===//
//
// A model repeats the same layer many times, and lowering gives each layer's
// ops the same loop nests over other weight views (memref.view of the
// weights buffer at another offset: the same type). Outlining each
// outermost loop nest (parallel or not, or a branch between them) into a
// function whose arguments are those views, and keeping one function per
// equivalent body, leaves the rest of the lowering and LLVM a kernel per
// distinct loop nest instead of one per layer.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Tfm/IR/TfmLayers.h"
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

/// What becomes a kernel: a loop nest (parallel or not) or a branch of
/// them, with no results to hand back.
bool isKernel(Operation *op) {
  return isa<scf::ParallelOp, scf::ForOp, scf::IfOp>(op) &&
         op->getNumResults() == 0;
}

/// Values the op reads from above it: its own operands (bounds, steps,
/// conditions) and what its regions use. Constants among them are not
/// arguments: cloned into the kernel, they keep bounds and offsets static.
SetVector<Value> capturedValues(Operation *op) {
  SetVector<Value> captured(op->getOperands().begin(), op->getOperands().end());
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  return captured;
}

bool isConstant(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         matchPattern(value, m_Constant());
}

/// func.func private @<name>(captured non-constants) { constants; loop }.
func::FuncOp outline(Operation *loop, ArrayRef<Value> arguments,
                     ArrayRef<Value> constants, StringRef name,
                     OpBuilder &moduleBuilder) {
  SmallVector<Type> types;
  for (Value value : arguments)
    types.push_back(value.getType());
  auto kernel = moduleBuilder.create<func::FuncOp>(
      loop->getLoc(), name, moduleBuilder.getFunctionType(types, {}));
  kernel.setPrivate();
  kernel->setAttr(
      "llvm.linkage",
      LLVM::LinkageAttr::get(kernel.getContext(), LLVM::Linkage::Internal));
  Block *body = kernel.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(body);
  IRMapping mapping;
  for (auto [value, argument] : llvm::zip(arguments, body->getArguments()))
    mapping.map(value, argument);
  for (Value value : constants)
    mapping.map(value, b.clone(*value.getDefiningOp())->getResult(0));
  b.clone(*loop, mapping);
  b.create<func::ReturnOp>(loop->getLoc());
  return kernel;
}

struct TfmOutlineKernelsPass
    : public tfm::impl::TfmOutlineKernelsPassBase<TfmOutlineKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> loops;
    for (auto func : module.getOps<func::FuncOp>()) {
      if ((!func.isPublic() && !tfm::isLayer(func)) || func.isExternal())
        continue;
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (!isKernel(op))
          return WalkResult::advance();
        loops.push_back(op);
        return WalkResult::skip(); // what it holds is part of its kernel
      });
    }

    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    SymbolTable symbols(module);
    // Kernels so far, by type: a new body equivalent to one of them calls
    // that one instead.
    DenseMap<Type, SmallVector<func::FuncOp>> kernels;
    int64_t outlined = 0, shared = 0;
    for (Operation *loop : loops) {
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
      b.create<func::CallOp>(loop->getLoc(), kernel, arguments);
      loop->erase();
    }
    tfm::recordPassStatistic(getName(), "kernels-outlined",
                             "Distinct loop nests outlined", outlined);
    tfm::recordPassStatistic(getName(), "loops-sharing-a-kernel",
                             "Loop nests that call an equivalent kernel",
                             shared);
  }
};

} // namespace
