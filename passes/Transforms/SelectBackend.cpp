//===- SelectBackend.cpp - LLVM code or oneDNN, per op ----------*- C++ -*-===//

#include "passes/Passes.h"

#include "passes/Conversion/TfmToLinalg/TfmToLinalg.h"
#include "passes/Conversion/TfmToOneDnn/TfmToOneDnn.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMSELECTBACKENDPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

// What `auto` chooses; the measurements behind each choice are in
// docs/Design/BackendSelection.md.
// - Linears: ours, the register-tiled kernel over weights packed in panels
//   at compile time, at every precision: it matches or beats oneDNN's
//   matmul at the shapes translation runs, and one layout then serves
//   every row count with one copy of each matrix in the weights file.
// - Attention: ours, fused, wherever the vector FlashAttention kernels take
//   it (f32, static head sizes: every model's); other attention ops are
//   spelled out so that oneDNN runs their products.
// - Layer norm: ours where its last axis is static f32 (every
//   checkpoint's); a dynamic or non-f32 last axis takes our generic
//   lowering, which oneDNN's layer_normalization beats: those go to it.
// - Softmax, masks, elementwise: ours, with no call and no copy into a
//   primitive's layout.
static Backend autoBackend(Operation *op) {
  if (auto attention = dyn_cast<AttentionOp>(op))
    return hasVectorAttentionKernel(attention) ? Backend::Llvm
                                               : Backend::OneDnn;
  if (isa<MatmulOp>(op))
    return Backend::OneDnn;
  if (auto norm = dyn_cast<LayerNormOp>(op))
    return hasVectorLayerNormKernel(norm) ? Backend::Llvm : Backend::OneDnn;
  // The scale of a product rides on oneDNN's matmul as a post-op.
  if (auto scale = dyn_cast<ScaleOp>(op)) {
    auto product = scale.getInput().getDefiningOp<MatmulOp>();
    if (product && product->hasOneUse())
      return Backend::OneDnn;
  }
  return Backend::Llvm;
}

namespace {
/// What the pass chose: one line per op kind, operand types and backend,
/// in program order, with its count.
class ChoiceRecord {
public:
  void add(Operation *op, const Twine &backend) {
    std::string line;
    llvm::raw_string_ostream os(line);
    os << op->getName() << " ";
    llvm::interleaveComma(op->getOperandTypes(), os);
    os << " -> " << backend;
    auto [it, isNew] = lineIndex.try_emplace(line, lines.size());
    if (isNew)
      lines.push_back({line, 0});
    ++lines[it->second].second;
  }

  std::string text() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    for (auto &[line, count] : lines)
      os << line << " (" << count << (count == 1 ? " op" : " ops") << ")\n";
    return text;
  }

private:
  SmallVector<std::pair<std::string, int64_t>> lines;
  llvm::StringMap<size_t> lineIndex;
};

struct TfmSelectBackendPass
    : public tfm::impl::TfmSelectBackendPassBase<TfmSelectBackendPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The options' names, parsed once: the rest of the pass takes enums.
    llvm::Expected<Backend> chosen = parseBackend(backend, "backend");
    if (!chosen) {
      module.emitError(llvm::toString(chosen.takeError()));
      return signalPassFailure();
    }
    llvm::Expected<Precision> linears = parsePrecision(precision, "precision");
    if (!linears) {
      module.emitError(llvm::toString(linears.takeError()));
      return signalPassFailure();
    }
    // Int4 weights are our kernels' layout only: oneDNN 2.6's matmul
    // takes no 4-bit weights (auto gives every linear to ours anyway).
    if (*chosen == Backend::OneDnn && *linears == Precision::Int4) {
      module.emitError("the onednn backend has no int4 linears (oneDNN 2.6's "
                       "matmul takes no 4-bit weights): use the llvm or auto "
                       "backend");
      return signalPassFailure();
    }
    ChoiceRecord record;
    if (failed(spellOutFusedOps(*chosen, record)))
      return signalPassFailure();
    // bf16 and int8 linears may run on oneDNN (the same arithmetic as
    // ours; convert-tfm-to-onednn reads the precision from the module).
    setModulePrecision(module, *linears);
    giveBackends(*chosen, record);
    std::string text = record.text();
    module->setAttr("tfm.backend_choice",
                    StringAttr::get(module.getContext(), text));
    if (report)
      llvm::errs() << "backend " << backendName(*chosen) << ":\n" << text;
  }

  /// oneDNN 2.6 has no fused attention; auto spells out the attention ops
  /// our vector kernels cannot take (matmul, scale, masks, softmax,
  /// matmul), and the pieces are chosen by giveBackends. The fused ones run
  /// our code whatever the backend. A gated linear (both halves in one
  /// kernel) is ours too; the onednn backend spells it out so that oneDNN
  /// runs the stacked product.
  LogicalResult spellOutFusedOps(Backend chosen, ChoiceRecord &record) {
    SmallVector<Operation *> fusedOps;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp>(op))
        fusedOps.push_back(op);
      if (auto linear = dyn_cast<FusedLinearOp>(op);
          linear && linear.getGated())
        fusedOps.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : fusedOps) {
      bool spelledOut =
          isa<AttentionOp>(op)
              ? chosen == Backend::Auto && autoBackend(op) == Backend::OneDnn
              : chosen == Backend::OneDnn;
      if (!spelledOut) {
        record.add(op, "llvm");
        continue;
      }
      record.add(op, "decomposed, onednn");
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values =
          cast<linalg::AggregatedOpInterface>(op).decomposeOperation(rewriter);
      if (failed(values))
        return op->emitOpError("cannot be decomposed");
      rewriter.replaceOp(op, *values);
    }
    return success();
  }

  /// Gives each op oneDNN can run to `chosen` (with auto: autoBackend's
  /// choice for it).
  void giveBackends(Backend chosen, ChoiceRecord &record) {
    getOperation().walk([&](Operation *op) {
      // A linear over rows its caller chose (tfm.caller_rows) reads our
      // panels: ours on every backend.
      if (isa<LinearOp, FusedLinearOp>(op) &&
          op->getOperand(1).getDefiningOp<CallerRowsOp>())
        record.add(op, "llvm (rows chosen by the caller)");
      if (!isOneDnnCandidate(op))
        return;
      Backend given = chosen == Backend::Auto ? autoBackend(op) : chosen;
      setOpBackend(op, given);
      record.add(op, backendName(given));
    });
  }
};
} // namespace
