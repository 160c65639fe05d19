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
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

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

/// The names a location gives, outermost first: the tfm op's kind that its
/// lowering put there, then the model's names (`lm_head`, `self_attn`, the
/// last part of `model.decoder.layers.0.encoder_attn`); a fused location's
/// first part.
void collectNames(Location loc, SmallVectorImpl<std::string> &names) {
  if (auto named = dyn_cast<NameLoc>(loc)) {
    StringRef name = named.getName().getValue().rsplit('.').second;
    if (name.empty())
      name = named.getName().getValue();
    names.push_back(name.str());
    collectNames(named.getChildLoc(), names);
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (!fused.getLocations().empty())
      collectNames(fused.getLocations().front(), names);
  } else if (auto site = dyn_cast<CallSiteLoc>(loc)) {
    collectNames(site.getCallee(), names);
  }
}

/// What a kernel's name says of the loop it holds: "linear_lm_head" (its
/// op's kind, then where in the model); `withPlace` false, the kind alone.
std::string describe(Location loc, bool withPlace) {
  SmallVector<std::string> names;
  collectNames(loc, names);
  std::string text;
  for (const std::string &name : ArrayRef(names).take_front(withPlace ? 2 : 1))
    text += "_" + name;
  for (char &c : text)
    if (!llvm::isAlnum(c))
      c = '_';
  return text;
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

func::FuncOp declareRuntimeFunction(OpBuilder &b, ModuleOp module,
                                    StringRef name, FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  auto function = b.create<func::FuncOp>(module.getLoc(), name, type);
  function.setPrivate();
  return function;
}

/// memref.global "private" constant @<kernel>_name: the kernel's name, for
/// the runtime's profile.
memref::GlobalOp nameGlobal(OpBuilder &b, ModuleOp module, StringRef kernel) {
  auto type = MemRefType::get({int64_t(kernel.size())}, b.getI8Type());
  auto bytes = DenseElementsAttr::get(
      RankedTensorType::get(type.getShape(), b.getI8Type()),
      ArrayRef(reinterpret_cast<const int8_t *>(kernel.data()), kernel.size()));
  return b.create<memref::GlobalOp>(module.getLoc(), (kernel + "_name").str(),
                                    b.getStringAttr("private"), type, bytes,
                                    /*constant=*/true, /*alignment=*/nullptr);
}

/// Each kernel call between the runtime's clock and tfm_kernel_ended(began,
/// the kernel's name): what a translator compiled with --profile-kernels
/// reports of each kernel.
void timeKernelCalls(ModuleOp module, ArrayRef<func::CallOp> calls) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Type i64 = b.getI64Type();
  auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  func::FuncOp clock = declareRuntimeFunction(b, module, "tfm_kernel_clock",
                                              b.getFunctionType({}, {i64}));
  func::FuncOp ended = declareRuntimeFunction(
      b, module, "tfm_kernel_ended", b.getFunctionType({i64, bytes}, {}));
  llvm::StringMap<memref::GlobalOp> names;
  for (func::CallOp call : calls) {
    memref::GlobalOp &name = names[call.getCallee()];
    if (!name)
      name = nameGlobal(b, module, call.getCallee());
    Location loc = call.getLoc();
    OpBuilder at(call);
    Value began =
        at.create<func::CallOp>(loc, clock, ValueRange{}).getResult(0);
    at.setInsertionPointAfter(call);
    Value text =
        at.create<memref::GetGlobalOp>(loc, name.getType(), name.getSymName());
    at.create<func::CallOp>(
        loc, ended,
        ValueRange{began, at.create<memref::CastOp>(loc, bytes, text)});
  }
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
    DenseMap<func::FuncOp, std::string> numberedNames;
    SmallVector<func::CallOp> calls;
    // Kernels whose body several places share, by their number's name.
    llvm::MapVector<func::FuncOp, std::string> sharedByPlaces;
    for (Operation *loop : loops) {
      SmallVector<Value> arguments, constants;
      for (Value value : capturedValues(loop))
        (isConstant(value) ? constants : arguments).push_back(value);
      std::string numbered = "tfm_kernel_" + std::to_string(outlined);
      std::string place = describe(loop->getLoc(), /*withPlace=*/true);
      func::FuncOp kernel =
          outline(loop, arguments, constants, numbered + place, moduleBuilder);
      func::FuncOp twin;
      for (func::FuncOp other : kernels[kernel.getFunctionType()])
        if (OperationEquivalence::isRegionEquivalentTo(
                &kernel.getBody(), &other.getBody(),
                OperationEquivalence::IgnoreLocations)) {
          twin = other;
          break;
        }
      if (twin) {
        // One body for several places: its name keeps only the kind.
        if (place != describe(twin.getLoc(), /*withPlace=*/true))
          sharedByPlaces.insert({twin, numberedNames.lookup(twin)});
        kernel.erase();
        kernel = twin;
        ++shared;
      } else {
        symbols.insert(kernel); // renamed if the name is taken
        kernels[kernel.getFunctionType()].push_back(kernel);
        numberedNames[kernel] = numbered;
        ++outlined;
      }
      OpBuilder b(loop);
      calls.push_back(
          b.create<func::CallOp>(loop->getLoc(), kernel, arguments));
      loop->erase();
    }
    for (auto &[kernel, numbered] : sharedByPlaces) {
      std::string kind = describe(kernel.getLoc(), /*withPlace=*/false);
      if (failed(symbols.rename(kernel, numbered + kind)))
        return signalPassFailure();
    }
    if (profile)
      timeKernelCalls(module, calls);
    tfm::recordPassStatistic(getName(), "kernels-outlined",
                             "Distinct loop nests outlined", outlined);
    tfm::recordPassStatistic(getName(), "loops-sharing-a-kernel",
                             "Loop nests that call an equivalent kernel",
                             shared);
  }
};

} // namespace
