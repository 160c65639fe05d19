//===- TfmToLinalg.h - convert-tfm-to-linalg's API --------------*- C++ -*-===//
//
// What the conversion to linalg, tensor, scf and vector offers beyond its
// pass: its patterns, and which ops it lowers to its vector kernels (which
// tfm-select-backend asks when it chooses).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CONVERSION_TFMTOLINALG_TFMTOLINALG_H
#define TFM_PASSES_CONVERSION_TFMTOLINALG_TFMTOLINALG_H

#include "dialects/Tfm/IR/TfmOps.h"
#include "passes/KernelConfig.h"

namespace mlir {
class RewritePatternSet;
namespace tfm {

/// The patterns of convert-tfm-to-linalg, building the kernels of
/// `config`.
void populateTfmToLinalgPatterns(RewritePatternSet &patterns,
                                 const KernelConfig &config);

/// Whether convert-tfm-to-linalg lowers `op` to its vector FlashAttention
/// kernel: f32, static head sizes, no additive mask but a relative position
/// bias (finite, added to the scores in the kernel).
bool hasVectorAttentionKernel(AttentionOp op);

/// Whether convert-tfm-to-linalg lowers `op` to its vector layer norm
/// kernel: f32, a static last axis, rank 2 or more.
bool hasVectorLayerNormKernel(LayerNormOp op);

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_CONVERSION_TFMTOLINALG_TFMTOLINALG_H
