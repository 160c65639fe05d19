//===- Pipelines.h - The fusion and lowering pipelines ----------*- C++ -*-===//
//
// The passes in the order tfmc runs them: fusion (tfm to fused tfm) and
// lowering (fused tfm to the LLVM dialect), and what the lowering needs
// registered in the context.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_PIPELINES_H
#define TFM_PASSES_PIPELINES_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace tfm {

/// canonicalize -> fuse layer norm -> fuse attention -> fuse linear epilogue
/// -> canonicalize -> cse. Layer norms go first so that post-norm residual
/// adds fold into the norm, not into the linear before it.
void buildFusionPipeline(OpPassManager &pm);

/// What the lowering needs to know of the target's vector unit.
struct VectorTarget {
  /// Floats per SIMD register: 16 with AVX-512, 8 with AVX2.
  int64_t width = 16;
  /// AVX512-BF16's dot product of bf16 pairs (vdpbf16ps).
  bool bf16Dot = false;
  /// AVX512-VNNI's dot product of byte quads (vpdpbusd).
  bool int8Dot = false;
};

/// fused tfm -> LLVM dialect: backend choice, oneDNN calls, weight layout
/// (linears' weights in panels of 4 vectors of `target.width` floats),
/// convert-tfm-to-linalg,
/// one-shot bufferization with the entry points' results as out-params and
/// caches updated in place, loops, and the LLVM conversions. Entry points get
/// `llvm.emit_c_interface`. `backend` (llvm, onednn, auto) chooses who runs
/// the ops oneDNN can run (tfm-select-backend, convert-tfm-to-onednn).
/// `precision` (fp32, bf16, int8) is the linears' (tfm-layout-weights).
void buildLoweringPipeline(OpPassManager &pm, StringRef backend = "llvm",
                           bool reportBackends = false,
                           VectorTarget target = {},
                           StringRef precision = "fp32");

/// This host's vector unit.
VectorTarget hostVectorTarget();

/// Dialects and interface implementations (bufferization, LLVM conversion)
/// that the lowering pipeline needs in the context.
void registerCodegenDialects(DialectRegistry &registry);

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_PIPELINES_H
