//===- Passes.cpp - tfm pass and pipeline registration ----------*- C++ -*-===//

#include "passes/Passes.h"

#include "passes/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
struct LoweringPipelineOptions
    : public PassPipelineOptions<LoweringPipelineOptions> {
  Option<std::string> backend{*this, "backend",
                              llvm::cl::desc("llvm, onednn or auto"),
                              llvm::cl::init("llvm")};
  Option<int64_t> vectorWidth{*this, "vector-width",
                              llvm::cl::desc("Floats per SIMD register"),
                              llvm::cl::init(16)};
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("fp32, bf16 or int8 linears"),
                                llvm::cl::init("fp32")};
  Option<bool> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("bf16 linears through AVX512-BF16's vdpbf16ps"),
      llvm::cl::init(false)};
  Option<bool> int8Dot{
      *this, "int8-dot",
      llvm::cl::desc("int8 linears through AVX512-VNNI's vpdpbusd"),
      llvm::cl::init(false)};
};
} // namespace

void tfm::registerAllTfmPasses() {
  registerTfmPasses();
  PassPipelineRegistration<>(
      "tfm-fusion-pipeline",
      "Fuse attention blocks, layer norms and linear epilogues, then clean up",
      buildFusionPipeline);
  PassPipelineRegistration<LoweringPipelineOptions>(
      "tfm-lower-to-llvm",
      "Lower fused tfm IR to the LLVM dialect (linalg or oneDNN calls, "
      "bufferization, loops)",
      [](OpPassManager &pm, const LoweringPipelineOptions &options) {
        buildLoweringPipeline(
            pm, options.backend, /*reportBackends=*/false,
            VectorTarget{options.vectorWidth, options.bf16Dot, options.int8Dot},
            options.precision);
      });
}
