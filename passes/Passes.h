//===- Passes.h - tfm passes and pipelines ----------------------*- C++ -*-===//

#ifndef TFM_PASSES_PASSES_H
#define TFM_PASSES_PASSES_H

#include "dialects/Tfm/IR/TfmOps.h"
#include "passes/KernelConfig.h"
#include "passes/LoweringChoices.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
class RewritePatternSet;
namespace tfm {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// convert-tfm-to-linalg building the kernels of `config` (the lowering
/// pipeline's; its options show the config's target and attention blocks).
std::unique_ptr<Pass> createConvertTfmToLinalgPass(const KernelConfig &config);

/// Rewrite patterns, for use outside the passes too.
void populateFuseAttentionPatterns(RewritePatternSet &patterns);
void populateFuseLayerNormPatterns(RewritePatternSet &patterns);
void populateFuseLinearEpiloguePatterns(RewritePatternSet &patterns);

/// On a tfm.weight that linears read: the weights file holds the matrix
/// [N, K] as panels [ceil(N / P), K, P] of P output features with K
/// contiguous, zero-padded: panels[p, k, j] = W[p·P + j, k].
constexpr llvm::StringLiteral kPanelWidthAttr = "tfm.panel_width";

/// On such a weight, if its panels are not f32: their element type (bf16
/// with `--precision bf16`), which the kernel widens to f32 as it reads.
constexpr llvm::StringLiteral kPanelElementTypeAttr = "tfm.panel_element_type";

/// On a tfm.weight that a oneDNN linear reads with `--precision bf16`: the
/// kernel rounds it to bf16 as it packs it, so the weights file refuses a
/// value that rounds to an infinity, as it does for bf16 panels.
constexpr llvm::StringLiteral kBf16ProductsAttr = "tfm.bf16_products";

/// On the module, set by tfm-layout-weights: the weights file's entries in
/// order (name, offset, shape; parts, panel_width, element_type,
/// bf16_products where they apply), which the compiler writes the file by.
constexpr llvm::StringLiteral kWeightsLayoutAttr = "tfm.weights_layout";

/// On the module, set by tfm-layout-weights: the bytes of the weights
/// file's data (the end of its last entry).
constexpr llvm::StringLiteral kWeightsSizeAttr = "tfm.weights_size";

/// Registers every tfm pass and the `tfm-fusion-pipeline` and
/// `tfm-lower-to-llvm` pipelines.
void registerAllTfmPasses();

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_PASSES_H
