//===- TfmLayers.cpp - Layers as functions, weights bound per call --------===//

#include "dialects/Tfm/IR/TfmLayers.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::tfm;

StringAttr mlir::tfm::weightsPrefix(func::CallOp call) {
  return call->getAttrOfType<StringAttr>(kWeightsPrefixAttr);
}

void mlir::tfm::forEachBoundWeight(
    ModuleOp module, llvm::function_ref<void(WeightOp, StringRef)> fn) {
  SymbolTable symbols(module);
  for (auto func : module.getOps<func::FuncOp>()) {
    if (isLayer(func))
      continue;
    func.walk([&](Operation *op) {
      if (auto weight = dyn_cast<WeightOp>(op))
        return fn(weight, "");
      auto call = dyn_cast<func::CallOp>(op);
      StringAttr prefix = call ? weightsPrefix(call) : StringAttr();
      if (!prefix)
        return;
      if (auto layer = symbols.lookup<func::FuncOp>(call.getCallee()))
        layer.walk([&](WeightOp weight) { fn(weight, prefix.getValue()); });
    });
  }
}

bool mlir::tfm::areEqualLayers(func::FuncOp a, func::FuncOp b) {
  return isLayer(a) && isLayer(b) &&
         a.getFunctionType() == b.getFunctionType() &&
         a.getArgAttrsAttr() == b.getArgAttrsAttr() &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

int64_t mlir::tfm::mergeEqualLayers(ModuleOp module) {
  SmallVector<func::FuncOp> kept;
  llvm::DenseMap<StringAttr, func::FuncOp> replacement;
  for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (!isLayer(func))
      continue;
    auto equal = llvm::find_if(
        kept, [&](func::FuncOp other) { return areEqualLayers(other, func); });
    if (equal == kept.end()) {
      kept.push_back(func);
      continue;
    }
    replacement[func.getSymNameAttr()] = *equal;
  }
  module.walk([&](func::CallOp call) {
    if (func::FuncOp into = replacement.lookup(call.getCalleeAttr().getAttr()))
      call.setCallee(into.getSymName());
  });
  for (auto &[name, into] : replacement)
    SymbolTable::lookupSymbolIn(module, name)->erase();
  return replacement.size();
}

SmallVector<std::string> mlir::tfm::boundTensorNames(WeightOp weight,
                                                     StringRef prefix) {
  return llvm::map_to_vector(weight.getTensorNames(), [&](StringRef name) {
    return (prefix + name).str();
  });
}

std::string mlir::tfm::boundWeightName(WeightOp weight, StringRef prefix) {
  if (prefix.empty())
    return weight.getName().str();
  if (!weight.getParts())
    return (prefix + weight.getName()).str();
  return llvm::join(boundTensorNames(weight, prefix), "+");
}
