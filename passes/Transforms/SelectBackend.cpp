//===- SelectBackend.cpp - LLVM code or oneDNN, per op ----------*- C++ -*-===//

#include "passes/Passes.h"

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

// What `auto` chooses, from measurements on this project's machines (2
// threads unless said; README.md, "Benchmarks", has the commands and
// tables):
// - Linears: ours, the register-tiled kernel over weights packed in panels
//   at compile time (`tfm-bench`, AMD Zen 5, 2 threads, GFLOP/s ours vs
//   oneDNN 2.6's matmul, bench/results/2026-12-03-zen5-kblocks.md:
//   1x512->2048 86.8 vs 86.3, 4x512->2048 274 vs 313, 32x512->2048 416
//   vs 412, 32x2048->512 409 vs 411, 32x512->32000 366 vs 369,
//   1024x512->2048 437 vs 443, 1024x2048->512 437 vs 438; only
//   1024x512->32000, which no translation runs, trails: 366 vs 399; on
//   an AVX2 Zen 3 host, 2026-12-01-zen3-tiles.md, ours won up to 128
//   rows). One layout then serves every row count, and the weights file
//   holds one copy of each matrix. So too at bf16 (`tfm-bench
//   --precisions=fp32,bf16`, Zen 5, ours vs oneDNN's bf16 matmul, GFLOP/s:
//   1x512->2048 137 vs 120, 4x512->2048 440 vs 354, 32x512->2048 665 vs
//   623, 32x2048->512 575 vs 544; oneDNN ahead at 1024x512->2048, 694 vs
//   764, and 32x512->32000, 512 vs 598, which would keep the output
//   projection f32 in the weights file). And at int8 (`--precisions=int8`,
//   ours vs oneDNN's u8 x s8 matmul with our epilogue, GOP/s: 1x512->2048
//   228 vs 172, 4x512->2048 534 vs 450, 32x512->2048 1203 vs 915,
//   32x512->32000 1596 vs 1264, 1024x512->2048 1511 vs 1382; at
//   32x2048->512 oneDNN's led, 1044 vs 929, until the input's quantization
//   took compares and selects and many rows' quantization went parallel:
//   1040 vs 1020 in bench/results/2026-12-03-zen5-siblings.md).
// - Attention: ours, fused, wherever the vector FlashAttention kernels
//   take it (f32, static head sizes: every model's). `tfm-bench`, AMD Zen
//   5, 2 threads, GFLOP/s fused vs spelled out on oneDNN's batched
//   matmuls (bench/results/2026-12-03-zen5-kblocks.md): encoder
//   self-attention over 32 tokens 191 vs 50.3, 64 tokens 254 vs 89.9, 256
//   tokens 341 vs 157, 512 tokens 359 vs 149, 32 tokens x 32 sentences 250
//   vs 105, 64 x 32 294 vs 125; a decoder step over a cache of 32 15 vs
//   3.48, of 256 70.2 vs 15.9, of 32 x 32 sentences 62.4 vs 20.4. Other
//   attention ops (dynamic head sizes) are spelled out so that oneDNN runs
//   their products.
// - Layer norm: ours where its last axis is static f32 (every checkpoint's):
//   the vector kernel (per row mean, centered variance and the normalized
//   row in vectors; a few rows without threads) against oneDNN's
//   layer_normalization (`tfm-bench --layer-norm=...`, AMD EPYC, AVX2,
//   2 threads, a peer's build running, best of 3, GB/s ours vs oneDNN
//   [vs the read bandwidth it measured]: 1x512 25.1 vs 0.4, 4x512 27.9 vs
//   1.5, 32x512 19.7 vs 8.3, 1024x512 27.7 vs 20.7 [19.8]). A dynamic or
//   non-f32 last axis takes our generic lowering, two scalar linalg.generic
//   ops that oneDNN's beats 2.5-9x (32x512 2.8 vs 7.8, 1024x512 2.2 vs
//   19.5): those stay on oneDNN.
// - Softmax, masks, elementwise: ours, with no call and no copy into a
//   primitive's layout; oneDNN's softmax in the spelled-out attention cost
//   5% more CPU end to end (7.7 s against 7.4 s).
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
    SmallVector<AttentionOp> attentions;
    module.walk([&](AttentionOp op) { attentions.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : attentions) {
      if (backend != "auto" || autoBackend(op) != "onednn") {
        record(op, "llvm");
        continue;
      }
      record(op, "decomposed, onednn");
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values =
          cast<linalg::AggregatedOpInterface>(op.getOperation())
              .decomposeOperation(rewriter);
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
      if (!isOneDnnCandidate(op))
        return;
      StringRef chosen = backend == "auto" ? autoBackend(op) : StringRef(backend);
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
