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
      // Matrices get zero rows up to a multiple of 16, so that a linear
      // reading them as [N, K] tiles into whole vectorized 16-row tiles.
      int64_t rows = type.getRank() == 2 ? type.getDimSize(0) : 0;
      int64_t paddedRows = (rows + 15) / 16 * 16;
      auto [it, inserted] = offsets.try_emplace(weight.getName(), 0);
      if (inserted) {
        // offset = end rounded up to the alignment
        it->second = (end + alignment - 1) / alignment * alignment;
        int64_t elements = type.getNumElements();
        if (paddedRows != rows)
          elements = elements / rows * paddedRows;
        end = it->second + elements * 4;
        SmallVector<NamedAttribute> entry = {
            b.getNamedAttr("name", weight.getNameAttr()),
            b.getNamedAttr("offset", b.getI64IntegerAttr(it->second)),
            b.getNamedAttr("shape", b.getDenseI64ArrayAttr(type.getShape())),
        };
        if (paddedRows != rows)
          entry.push_back(
              b.getNamedAttr("padded_rows", b.getI64IntegerAttr(paddedRows)));
        layout.push_back(b.getDictionaryAttr(entry));
      }
      weight.setOffsetAttr(b.getI64IntegerAttr(it->second));
      if (paddedRows != rows)
        weight->setAttr("tfm.padded_rows", b.getI64IntegerAttr(paddedRows));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    module->setAttr("tfm.weights_layout", b.getArrayAttr(layout));
    module->setAttr("tfm.weights_size", b.getI64IntegerAttr(end));
  }
};
} // namespace
