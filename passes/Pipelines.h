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
#include "passes/LoweringChoices.h"

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
/// `llvm.emit_c_interface`. `backend` chooses who runs the ops oneDNN can
/// run (tfm-select-backend, convert-tfm-to-onednn); `precision` is the
/// linears' (tfm-layout-weights). The caller builds `kernels` for its
/// target once (KernelConfig::forTarget). `profileKernels`: each kernel
/// call timed through the runtime's kernel profile.
void buildLoweringPipeline(OpPassManager &pm, Backend backend,
                           bool reportBackends, const KernelConfig &kernels,
                           Precision precision = Precision::Fp32,
                           bool profileKernels = false);

/// Dialects and interface implementations (bufferization, LLVM conversion)
/// that the lowering pipeline needs in the context.
void registerCodegenDialects(DialectRegistry &registry);

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_PIPELINES_H
