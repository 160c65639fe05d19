//===- NameConstantGlobals.cpp - Constants named by first use ---*- C++ -*-===//
//
// One-shot bufferization turns each dense tensor constant into a
// `memref.global` named `__constant_<type>`, with `_0`, `_1`, ... for
// further constants of the same type. It bufferizes functions in an order
// that follows pointer values (a DenseMap of functions), so two layers'
// constants of one type (T5's relative-position buckets of the encoder and
// of the decoder) swap names and places from one run to the next, and the
// generated code differs between runs of the same compiler. This pass
// renames them, and orders them, by their first use in the module's order.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMNAMECONSTANTGLOBALSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kConstantPrefix = "__constant_";

/// The name bufferization gave `name` before it made it unique: without
/// the `_N` it appends (a type never ends in `_` and digits).
StringRef baseName(StringRef name) {
  StringRef head = name.rtrim("0123456789");
  if (head.size() < name.size() && head.ends_with("_"))
    return head.drop_back();
  return name;
}

/// The bufferized constants in the order of their first use by a
/// `memref.get_global`, walking the module's functions in order; those
/// never used last, in the module's order.
SmallVector<memref::GlobalOp> constantsByFirstUse(ModuleOp module) {
  llvm::MapVector<StringRef, memref::GlobalOp> constants;
  for (auto global : module.getOps<memref::GlobalOp>())
    if (global.getSymName().starts_with(kConstantPrefix))
      constants[global.getSymName()] = global;
  llvm::SetVector<memref::GlobalOp> ordered;
  module.walk([&](memref::GetGlobalOp use) {
    auto found = constants.find(use.getName());
    if (found != constants.end())
      ordered.insert(found->second);
  });
  for (auto &[name, global] : constants)
    ordered.insert(global);
  return ordered.takeVector();
}

struct NameConstantGlobalsPass
    : tfm::impl::TfmNameConstantGlobalsPassBase<NameConstantGlobalsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<memref::GlobalOp> constants = constantsByFirstUse(module);
    if (constants.empty())
      return;
    // New names: a base's first constant keeps the base, the next get
    // _0, _1, ... as bufferization numbers them.
    llvm::StringMap<unsigned> usesOfBase;
    llvm::DenseMap<StringAttr, StringAttr> renamed;
    MLIRContext *context = module.getContext();
    for (memref::GlobalOp global : constants) {
      StringRef base = baseName(global.getSymName());
      unsigned seen = usesOfBase[base]++;
      std::string name =
          seen == 0 ? base.str() : (base + "_" + Twine(seen - 1)).str();
      renamed[global.getSymNameAttr()] = StringAttr::get(context, name);
    }
    module.walk([&](memref::GetGlobalOp use) {
      auto found = renamed.find(use.getNameAttr().getAttr());
      if (found != renamed.end())
        use.setNameAttr(FlatSymbolRefAttr::get(found->second));
    });
    // Renamed all at once (no name is taken while another waits for it),
    // then placed first in the module in their new order.
    for (memref::GlobalOp global : llvm::reverse(constants)) {
      global.setSymNameAttr(renamed[global.getSymNameAttr()]);
      Operation *first = &module.getBody()->front();
      if (first != global.getOperation())
        global->moveBefore(first);
    }
  }
};

} // namespace
