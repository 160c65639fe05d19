//===- SelectBackend.cpp - LLVM code or oneDNN, per op -------------*- C++ -*-===//

#include "passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
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

/// What `auto` gives an op oneDNN can run. From the micro-benchmarks
/// (`bench/bench.py --micro`, 2 threads, AVX-512 host; see bench/README.md):
/// oneDNN's matmul (brgemm, weights packed once) beats our vectorized
/// linears at every measured shape, most at many rows, and its batched
/// matmul has no counterpart of ours; our layer norm, softmax and
/// elementwise loops need no copy into a primitive's layout and no call,
/// and win at the sizes of a translation step.
static StringRef autoBackend(Operation *op) {
  if (isa<LinearOp, FusedLinearOp, MatmulOp>(op))
    return "onednn";
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
    // One line per op kind, operand types and backend, in program order.
    SmallVector<std::pair<std::string, int64_t>> choices;
    llvm::StringMap<size_t> lineIndex;
    module.walk([&](Operation *op) {
      if (!isOneDnnCandidate(op))
        return;
      StringRef chosen = backend == "auto" ? autoBackend(op) : StringRef(backend);
      op->setAttr(kBackendAttr, StringAttr::get(op->getContext(), chosen));
      std::string line;
      llvm::raw_string_ostream os(line);
      os << op->getName() << " ";
      llvm::interleaveComma(op->getOperandTypes(), os);
      os << " -> " << chosen;
      auto [it, isNew] = lineIndex.try_emplace(line, choices.size());
      if (isNew)
        choices.push_back({line, 0});
      ++choices[it->second].second;
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
