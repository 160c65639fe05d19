//===- LayoutWeights.cpp - Offsets of weights in the weights file --*- C++ -*-===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMLAYOUTWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {
struct TfmLayoutWeightsPass
    : public tfm::impl::TfmLayoutWeightsPassBase<TfmLayoutWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || (alignment & (alignment - 1))) {
      module.emitError() << "alignment must be a power of two, found "
                         << alignment;
      return signalPassFailure();
    }
    Builder b(&getContext());
    llvm::StringMap<int64_t> offsets;
    SmallVector<Attribute> layout;
    int64_t end = 0;
    WalkResult result = module.walk([&](WeightOp weight) {
      RankedTensorType type = weight.getType();
      if (!type.getElementType().isF32()) {
        weight.emitOpError("weights files hold f32 tensors, found ")
            << type.getElementType();
        return WalkResult::interrupt();
      }
      auto [it, inserted] = offsets.try_emplace(weight.getName(), 0);
      if (inserted) {
        // offset = end rounded up to the alignment
        it->second = (end + alignment - 1) / alignment * alignment;
        end = it->second + type.getNumElements() * 4;
        layout.push_back(b.getDictionaryAttr({
            b.getNamedAttr("name", weight.getNameAttr()),
            b.getNamedAttr("offset", b.getI64IntegerAttr(it->second)),
            b.getNamedAttr("shape", b.getDenseI64ArrayAttr(type.getShape())),
        }));
      }
      weight.setOffsetAttr(b.getI64IntegerAttr(it->second));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    module->setAttr("tfm.weights_layout", b.getArrayAttr(layout));
    module->setAttr("tfm.weights_size", b.getI64IntegerAttr(end));
  }
};
} // namespace
