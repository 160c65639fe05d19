//===- Pipelines.h - The fusion and lowering pipelines ----------*- C++ -*-===//
//
// The passes in the order tfmc runs them: fusion (tfm to fused tfm) and
// lowering (fused tfm to the LLVM dialect), and what the lowering needs
// registered in the context.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_PIPELINES_H
#define TFM_PASSES_PIPELINES_H

#include "passes/KernelConfig.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace tfm {

/// canonicalize -> fuse layer norm -> fuse attention -> fuse linear epilogue
/// -> canonicalize -> cse. Layer norms go first so that post-norm residual
/// adds fold into the norm, not into the linear before it.
void buildFusionPipeline(OpPassManager &pm);

/// fused tfm -> LLVM dialect: backend choice, oneDNN calls, weight layout
/// (linears' weights in panels of `kernels.panelWidth()` features),
/// convert-tfm-to-linalg building the kernels of `kernels`,
/// one-shot bufferization with the entry points' results as out-params and
/// caches updated in place, loops, and the LLVM conversions. Entry points get
/// `llvm.emit_c_interface`. `backend` (llvm, onednn, auto) chooses who runs
/// the ops oneDNN can run (tfm-select-backend, convert-tfm-to-onednn).
/// `precision` (fp32, bf16, int8) is the linears' (tfm-layout-weights).
void buildLoweringPipeline(OpPassManager &pm, StringRef backend,
                           bool reportBackends, const KernelConfig &kernels,
                           StringRef precision = "fp32");

/// The lowering pipeline with the kernels of `target`
/// (KernelConfig::forTarget).
void buildLoweringPipeline(OpPassManager &pm, StringRef backend = "llvm",
                           bool reportBackends = false,
                           VectorTarget target = {},
                           StringRef precision = "fp32");

/// Dialects and interface implementations (bufferization, LLVM conversion)
/// that the lowering pipeline needs in the context.
void registerCodegenDialects(DialectRegistry &registry);

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_PIPELINES_H
