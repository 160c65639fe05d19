//===- LayoutWeights.cpp - Offsets and layouts in the weights file --------===//

#include "passes/Passes.h"

#include "dialects/Tfm/IR/TfmLayers.h"

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
/// Offsets of tensors (by name and panel width) in a run of the weights
/// file, in order of first use, each aligned.
struct OffsetTable {
  llvm::MapVector<std::pair<StringRef, int64_t>, int64_t> offsets;
  int64_t end = 0;
};

int64_t panelOf(WeightOp weight) {
  auto width = weight->getAttrOfType<IntegerAttr>(kPanelWidthAttr);
  return width ? width.getInt() : 0;
}

/// The element type of the panels at `precision`.
Type panelElementType(Builder &b, Precision precision) {
  switch (precision) {
  case Precision::Fp32:
    return b.getF32Type();
  case Precision::Bf16:
    return b.getBF16Type();
  case Precision::Int8:
    return b.getI8Type();
  case Precision::Int4:
    return b.getIntegerType(4);
  }
  llvm_unreachable("a Precision has a panel type");
}

/// Bytes the weights file holds for the weight in its layout: f32, or
/// panels (bf16 ones pair K, int8 ones group it in quads and add each
/// feature's scale and sum, int4 ones pack eight k a word with a scale per
/// group and a correction per feature, tfm/abi/Panels.h).
int64_t storedBytes(WeightOp weight, Type panelType) {
  RankedTensorType type = weight.getType();
  int64_t panel = panelOf(weight);
  if (!panel)
    return type.getNumElements() * 4;
  if (panelType.isInteger(8))
    return tfm_runtime::int8PanelsBytes(type.getDimSize(0), type.getDimSize(1),
                                        panel);
  if (panelType.isInteger(4))
    return tfm_runtime::int4PanelsBytes(type.getDimSize(0), type.getDimSize(1),
                                        panel);
  return tfm_runtime::panelsSize(type.getDimSize(0), type.getDimSize(1), panel,
                                 panelType.isBF16()) *
         panelType.getIntOrFloatBitWidth() / 8;
}

struct TfmLayoutWeightsPass
    : public tfm::impl::TfmLayoutWeightsPassBase<TfmLayoutWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Precision> linears = checkOptions();
    if (failed(linears))
      return signalPassFailure();
    Builder b(&getContext());
    panelType = panelElementType(b, *linears);
    WalkResult typed = module.walk([&](WeightOp weight) {
      if (weight.getType().getElementType().isF32())
        return WalkResult::advance();
      weight.emitOpError("weights files hold f32 tensors, found ")
          << weight.getType().getElementType();
      return WalkResult::interrupt();
    });
    if (typed.wasInterrupted() || failed(checkLayerCalls()) ||
        failed(checkNames()))
      return signalPassFailure();
    module.walk([&](WeightOp weight) {
      if (panelWidth)
        splitPanelUses(weight);
    });
    module.walk([&](WeightOp weight) {
      if (panelOf(weight) && !panelType.isF32())
        weight->setAttr(kPanelElementTypeAttr, TypeAttr::get(panelType));
    });
    // Tensors a bf16 oneDNN linear reads (see kBf16ProductsAttr).
    forEachBoundWeight(module, [&](WeightOp weight, StringRef prefix) {
      if (weight->hasAttr(kBf16ProductsAttr))
        bf16Products.insert(boundWeightName(weight, prefix));
    });
    layOut();
    recordChosenRows();
    setModulePrecision(module, *linears);
    module->setAttr(kWeightsLayoutAttr, b.getArrayAttr(layout));
    module->setAttr(kWeightsSizeAttr, b.getI64IntegerAttr(file.end));
  }

  /// The options checked, and the precision parsed from its name.
  FailureOr<Precision> checkOptions() {
    ModuleOp module = getOperation();
    if (alignment <= 0 || (alignment & (alignment - 1)))
      return module.emitError()
             << "alignment must be a power of two, found " << alignment;
    // A panel is a whole number of the kernel's vectors.
    int64_t vectors = PanelKernelConfig().vectors;
    if (panelWidth < 0 || (panelWidth && panelWidth % vectors))
      return module.emitError() << "panel-width must be 0 or a multiple of "
                                << vectors << ", found " << int64_t(panelWidth);
    llvm::Expected<Precision> linears = parsePrecision(precision, "precision");
    if (!linears)
      return module.emitError(llvm::toString(linears.takeError()));
    return *linears;
  }

  /// Every call of a layer says which layer's weights it binds.
  LogicalResult checkLayerCalls() {
    SymbolTable symbols(getOperation());
    WalkResult result = getOperation().walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || !isLayer(callee) || weightsPrefix(call))
        return WalkResult::advance();
      call.emitOpError("calls the layer @")
          << call.getCallee() << " without '" << kWeightsPrefixAttr
          << "': its weights are bound to no checkpoint tensors";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// A name is the weights file's key: one name, one tensor (the same
  /// parts, or none), wherever and under whatever prefix it is read.
  LogicalResult checkNames() {
    llvm::StringMap<SmallVector<std::string>> partsByName;
    bool clash = false;
    forEachBoundWeight(getOperation(), [&](WeightOp weight, StringRef prefix) {
      std::string name = boundWeightName(weight, prefix);
      SmallVector<std::string> parts;
      if (weight.getParts())
        parts = boundTensorNames(weight, prefix);
      auto [named, first] = partsByName.try_emplace(name, parts);
      if (first || named->second == parts || clash)
        return;
      weight.emitOpError("names '")
          << name << "' as another tfm.weight does, but with other parts";
      clash = true;
    });
    return failure(clash);
  }

  /// Lays out, in order of first use, the weights of the functions that
  /// are not layers, one entry per tensor and layout, and for each call of
  /// a layer a block of its weights: every block of a layer in that
  /// layer's one layout, whose offsets its tfm.weight ops get.
  void layOut() {
    Builder b(&getContext());
    llvm::DenseMap<Operation *, int64_t> layerSizes;
    llvm::DenseMap<std::pair<Operation *, Attribute>, int64_t> blocks;
    SymbolTable symbols(getOperation());
    auto placeCall = [&](func::CallOp call) {
      auto layer = symbols.lookup<func::FuncOp>(call.getCallee());
      auto [size, first] = layerSizes.try_emplace(layer, 0);
      if (first)
        size->second = layOutLayer(layer);
      auto [block, inserted] =
          blocks.try_emplace({layer, weightsPrefix(call)}, 0);
      if (inserted) {
        block->second = alignUp(file.end);
        recordBlock(layer, weightsPrefix(call).getValue(), block->second);
        file.end = block->second + size->second;
      }
      call->setAttr(kWeightsOffsetAttr, b.getI64IntegerAttr(block->second));
    };
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (isLayer(func))
        continue;
      func.walk([&](Operation *op) {
        if (auto weight = dyn_cast<WeightOp>(op)) {
          size_t known = file.offsets.size();
          int64_t offset = offsetIn(file, weight);
          if (file.offsets.size() != known)
            layout.push_back(entry(weight, "", offset));
          weight.setOffsetAttr(b.getI64IntegerAttr(offset));
        } else if (auto call = dyn_cast<func::CallOp>(op)) {
          if (weightsPrefix(call))
            placeCall(call);
        }
      });
    }
  }

  /// Gives the layer's weights their offsets in its block; returns the
  /// block's size.
  int64_t layOutLayer(func::FuncOp layer) {
    Builder b(&getContext());
    OffsetTable block;
    layer.walk([&](WeightOp weight) {
      weight.setOffsetAttr(b.getI64IntegerAttr(offsetIn(block, weight)));
    });
    return block.end;
  }

  /// The entries of a block of the layer's weights bound with `prefix`.
  void recordBlock(func::FuncOp layer, StringRef prefix, int64_t base) {
    llvm::DenseSet<std::pair<StringRef, int64_t>> seen;
    layer.walk([&](WeightOp weight) {
      if (seen.insert({weight.getName(), panelOf(weight)}).second)
        layout.push_back(entry(weight, prefix, base + *weight.getOffset()));
    });
  }

  int64_t alignUp(int64_t offset) const {
    return (offset + alignment - 1) / alignment * alignment;
  }

  /// The weight's offset in `table`: a new one at its end, aligned, if its
  /// tensor and layout have none yet.
  int64_t offsetIn(OffsetTable &table, WeightOp weight) {
    auto [it, inserted] =
        table.offsets.insert({{weight.getName(), panelOf(weight)}, int64_t(0)});
    if (inserted) {
      it->second = alignUp(table.end);
      table.end = it->second + storedBytes(weight, panelType);
    }
    return it->second;
  }

  /// The layout's entry of the weight bound with `prefix`, at `offset`.
  DictionaryAttr entry(WeightOp weight, StringRef prefix, int64_t offset) {
    Builder b(&getContext());
    std::string name = boundWeightName(weight, prefix);
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("name", b.getStringAttr(name)),
        b.getNamedAttr("offset", b.getI64IntegerAttr(offset)),
        b.getNamedAttr("shape",
                       b.getDenseI64ArrayAttr(weight.getType().getShape())),
    };
    // A stack of checkpoint tensors (tfm-fuse-sibling-linears).
    if (weight.getParts()) {
      SmallVector<std::string> parts = boundTensorNames(weight, prefix);
      fields.push_back(b.getNamedAttr(
          "parts", b.getStrArrayAttr(llvm::to_vector_of<StringRef>(parts))));
    }
    int64_t panel = panelOf(weight);
    if (!panel && bf16Products.contains(name))
      fields.push_back(b.getNamedAttr("bf16_products", b.getUnitAttr()));
    if (panel) {
      fields.push_back(
          b.getNamedAttr("panel_width", b.getI64IntegerAttr(panel)));
      if (!panelType.isF32())
        fields.push_back(
            b.getNamedAttr("element_type", TypeAttr::get(panelType)));
    }
    return b.getDictionaryAttr(fields);
  }

  Type panelType;
  /// The weights file: its entries, the offsets of the tensors outside
  /// layers, and its end (layers' blocks included).
  SmallVector<Attribute> layout;
  OffsetTable file;
  llvm::StringSet<> bf16Products;

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
