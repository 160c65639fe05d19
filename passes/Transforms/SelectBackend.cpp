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
static StringRef autoBackend(Operation *op) {
  if (auto attention = dyn_cast<AttentionOp>(op))
    return hasVectorAttentionKernel(attention) ? "llvm" : "onednn";
  if (isa<MatmulOp>(op))
    return "onednn";
  if (auto norm = dyn_cast<LayerNormOp>(op))
    return hasVectorLayerNormKernel(norm) ? "llvm" : "onednn";
  // The scale of a product rides on oneDNN's matmul as a post-op.
  if (auto scale = dyn_cast<ScaleOp>(op)) {
    auto product = scale.getInput().getDefiningOp<MatmulOp>();
    if (product && product->hasOneUse())
      return "onednn";
  }
  return "llvm";
}

namespace {
struct TfmSelectBackendPass
    : public tfm::impl::TfmSelectBackendPassBase<TfmSelectBackendPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (backend != "llvm" && backend != "onednn" && backend != "auto") {
      module.emitError() << "unknown backend '" << backend
                         << "': expected llvm, onednn or auto";
      return signalPassFailure();
    }
    if (precision != "fp32" && precision != "bf16" && precision != "int8") {
      module.emitError() << "unknown precision '" << precision
                         << "': expected fp32, bf16 or int8";
      return signalPassFailure();
    }
    // One line per op kind, operand types and backend, in program order.
    SmallVector<std::pair<std::string, int64_t>> choices;
    llvm::StringMap<size_t> lineIndex;
    auto record = [&](Operation *op, const Twine &chosen) {
      std::string line;
      llvm::raw_string_ostream os(line);
      os << op->getName() << " ";
      llvm::interleaveComma(op->getOperandTypes(), os);
      os << " -> " << chosen;
      auto [it, isNew] = lineIndex.try_emplace(line, choices.size());
      if (isNew)
        choices.push_back({line, 0});
      ++choices[it->second].second;
    };
    // oneDNN 2.6 has no fused attention; auto spells out the attention ops
    // our vector kernels cannot take (matmul, scale, masks, softmax,
    // matmul), and the pieces are chosen below. The fused ones run our code
    // whatever the backend.
    // A gated linear (both halves in one kernel) is ours too; the onednn
    // backend spells it out so that oneDNN runs the stacked product.
    SmallVector<Operation *> fusedOps;
    module.walk([&](Operation *op) {
      if (isa<AttentionOp>(op))
        fusedOps.push_back(op);
      if (auto linear = dyn_cast<FusedLinearOp>(op);
          linear && linear.getGated())
        fusedOps.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : fusedOps) {
      bool spelledOut = isa<AttentionOp>(op)
                            ? backend == "auto" && autoBackend(op) == "onednn"
                            : backend == "onednn";
      if (!spelledOut) {
        record(op, "llvm");
        continue;
      }
      record(op, "decomposed, onednn");
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values =
          cast<linalg::AggregatedOpInterface>(op).decomposeOperation(rewriter);
      if (failed(values)) {
        op->emitOpError("cannot be decomposed");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *values);
    }
    // bf16 and int8 linears may run on oneDNN (the same arithmetic as
    // ours; convert-tfm-to-onednn reads the precision from the module).
    module->setAttr("tfm.precision",
                    StringAttr::get(module.getContext(), precision));
    module.walk([&](Operation *op) {
      // A linear over rows its caller chose (tfm.caller_rows) reads our
      // panels: ours on every backend.
      if (isa<LinearOp, FusedLinearOp>(op) &&
          op->getOperand(1).getDefiningOp<CallerRowsOp>())
        record(op, "llvm (rows chosen by the caller)");
      if (!isOneDnnCandidate(op))
        return;
      StringRef chosen =
          backend == "auto" ? autoBackend(op) : StringRef(backend);
      op->setAttr(kBackendAttr, StringAttr::get(op->getContext(), chosen));
      record(op, chosen);
    });
    std::string text;
    llvm::raw_string_ostream os(text);
    for (auto &[line, count] : choices)
      os << line << " (" << count << (count == 1 ? " op" : " ops") << ")\n";
    module->setAttr("tfm.backend_choice",
                    StringAttr::get(module.getContext(), text));
    if (report)
      llvm::errs() << "backend " << backend << ":\n" << text;
  }
};
} // namespace
