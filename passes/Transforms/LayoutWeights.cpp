//===- LayoutWeights.cpp - Offsets and layouts in the weights file -*- C++ -*-===//

#include "passes/Passes.h"

#include "tfm/abi/Panels.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMLAYOUTWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

/// Whether `use` is the weight operand of a linear that our code runs (the
/// oneDNN ones are calls by now) over a static matrix, or the rows a
/// caller chooses for linears only (tfm.caller_rows): the caller chooses
/// among the panels.
static bool readsPanels(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto chosen = dyn_cast<CallerRowsOp>(user))
    return chosen.getAxis() == 0 && !chosen->use_empty() &&
           llvm::all_of(chosen->getUses(), [](OpOperand &rowsUse) {
             return isa<LinearOp, FusedLinearOp>(rowsUse.getOwner()) &&
                    rowsUse.getOperandNumber() == 1;
           });
  if (!isa<LinearOp, FusedLinearOp>(user) || use.getOperandNumber() != 1)
    return false;
  auto type = cast<RankedTensorType>(use.get().getType());
  return type.getRank() == 2 && type.hasStaticShape();
}

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
    if (panelWidth < 0 || (panelWidth && panelWidth % 4)) {
      module.emitError() << "panel-width must be 0 or a multiple of 4, found "
                         << int64_t(panelWidth);
      return signalPassFailure();
    }
    if (precision != "fp32" && precision != "bf16" && precision != "int8") {
      module.emitError() << "unknown precision '" << precision
                         << "': expected fp32, bf16 or int8";
      return signalPassFailure();
    }
    Builder b(&getContext());
    // The panels' element type.
    Type panelType = precision == "bf16"   ? Type(b.getBF16Type())
                     : precision == "int8" ? Type(b.getI8Type())
                                           : Type(b.getF32Type());
    SmallVector<WeightOp> weights;
    module.walk([&](WeightOp weight) { weights.push_back(weight); });
    // A name is the weights file's key: one name, one tensor (the same
    // parts, or none).
    llvm::StringMap<ArrayAttr> partsByName;
    for (WeightOp weight : weights) {
      if (!weight.getType().getElementType().isF32()) {
        weight.emitOpError("weights files hold f32 tensors, found ")
            << weight.getType().getElementType();
        return signalPassFailure();
      }
      auto [named, first] =
          partsByName.try_emplace(weight.getName(), weight.getPartsAttr());
      if (!first && named->second != weight.getPartsAttr()) {
        weight.emitOpError("names '")
            << weight.getName()
            << "' as another tfm.weight does, but with other parts";
        return signalPassFailure();
      }
      if (panelWidth)
        splitPanelUses(weight);
    }

    // One entry per tensor and layout, in order of first use.
    llvm::MapVector<std::pair<StringRef, int64_t>, int64_t> offsets;
    // Tensors a bf16 oneDNN linear reads (see kBf16ProductsAttr).
    llvm::StringSet<> bf16Products;
    module.walk([&](WeightOp weight) {
      if (weight->hasAttr(kBf16ProductsAttr))
        bf16Products.insert(weight.getName());
    });
    SmallVector<Attribute> layout;
    int64_t end = 0;
    module.walk([&](WeightOp weight) {
      RankedTensorType type = weight.getType();
      auto width = weight->getAttrOfType<IntegerAttr>(kPanelWidthAttr);
      int64_t panel = width ? width.getInt() : 0;
      auto [it, inserted] =
          offsets.insert({{weight.getName(), panel}, int64_t(0)});
      if (inserted) {
        // offset = end rounded up to the alignment
        it->second = (end + alignment - 1) / alignment * alignment;
        int64_t bytes = type.getNumElements() * 4;
        // bf16 panels pair K, int8 ones group it in quads and add each
        // feature's scale and sum (tfm/abi/Panels.h).
        if (panel && panelType.isInteger(8))
          bytes =
              int8PanelsBytes(type.getDimSize(0), type.getDimSize(1), panel);
        else if (panel)
          bytes = panelsSize(type.getDimSize(0), type.getDimSize(1), panel,
                             panelType.isBF16()) *
                  panelType.getIntOrFloatBitWidth() / 8;
        end = it->second + bytes;
        SmallVector<NamedAttribute> entry = {
            b.getNamedAttr("name", weight.getNameAttr()),
            b.getNamedAttr("offset", b.getI64IntegerAttr(it->second)),
            b.getNamedAttr("shape", b.getDenseI64ArrayAttr(type.getShape())),
        };
        // A stack of checkpoint tensors (tfm-fuse-sibling-linears).
        if (std::optional<ArrayAttr> parts = weight.getParts())
          entry.push_back(b.getNamedAttr("parts", *parts));
        if (!panel && bf16Products.contains(weight.getName()))
          entry.push_back(b.getNamedAttr("bf16_products", b.getUnitAttr()));
        if (panel) {
          entry.push_back(b.getNamedAttr("panel_width", width));
          if (panelType != b.getF32Type())
            entry.push_back(
                b.getNamedAttr("element_type", TypeAttr::get(panelType)));
        }
        layout.push_back(b.getDictionaryAttr(entry));
      }
      weight.setOffsetAttr(b.getI64IntegerAttr(it->second));
      if (panel && panelType != b.getF32Type())
        weight->setAttr(kPanelElementTypeAttr, TypeAttr::get(panelType));
    });
    recordChosenRows();
    module->setAttr("tfm.precision", b.getStringAttr(precision));
    module->setAttr("tfm.weights_layout", b.getArrayAttr(layout));
    module->setAttr("tfm.weights_size", b.getI64IntegerAttr(end));
  }

  /// Where the rows that callers choose from are (tfm.caller_rows), for
  /// the runtime (tfm/abi/ModelInfo.h): per argument name, the offset of
  /// its weight and the width of its panels (0: stored plain).
  void recordChosenRows() {
    Builder b(&getContext());
    llvm::MapVector<StringRef, Attribute> chosen;
    getOperation().walk([&](CallerRowsOp op) {
      auto input = op.getInput().getDefiningOp<WeightOp>();
      auto width = input->getAttrOfType<IntegerAttr>(kPanelWidthAttr);
      chosen[op.getFrom()] = b.getDenseI64ArrayAttr(
          {int64_t(*input.getOffset()), width ? width.getInt() : 0});
    });
    if (chosen.empty())
      return;
    SmallVector<NamedAttribute> entries;
    for (auto &[name, where] : chosen)
      entries.push_back(b.getNamedAttr(name, where));
    getOperation()->setAttr("tfm.caller_rows", b.getDictionaryAttr(entries));
  }

  /// Marks `weight` as stored in panels if only linears read it; if other
  /// ops read it too, the linears get a packed twin and it stays plain.
  void splitPanelUses(WeightOp weight) {
    SmallVector<OpOperand *> panelUses;
    bool otherUses = false;
    for (OpOperand &use : weight->getUses()) {
      if (readsPanels(use))
        panelUses.push_back(&use);
      else
        otherUses = true;
    }
    if (panelUses.empty())
      return;
    Builder b(&getContext());
    WeightOp packed = weight;
    if (otherUses) {
      OpBuilder builder(weight);
      builder.setInsertionPointAfter(weight);
      packed = cast<WeightOp>(builder.clone(*weight));
      for (OpOperand *use : panelUses)
        use->set(packed.getResult());
    }
    packed->setAttr(kPanelWidthAttr, b.getI64IntegerAttr(panelWidth));
  }
};
} // namespace
