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

/// Builds tfm-lower-to-llvm from its options' text: the names of the
/// backend and precision parsed here, where they come in, and an unknown
/// one refused through `errorHandler`.
static LogicalResult buildLoweringFromOptions(
    OpPassManager &pm, StringRef text,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  LoweringPipelineOptions options;
  if (failed(options.parseFromString(text)))
    return failure();
  llvm::Expected<tfm::Backend> backend =
      tfm::parseBackend(options.backend, "backend");
  if (!backend)
    return errorHandler(llvm::toString(backend.takeError()));
  llvm::Expected<tfm::Precision> precision =
      tfm::parsePrecision(options.precision, "precision");
  if (!precision)
    return errorHandler(llvm::toString(precision.takeError()));
  tfm::KernelConfig kernels = tfm::KernelConfig::forTarget(
      {options.vectorWidth, options.bf16Dot, options.int8Dot});
  tfm::buildLoweringPipeline(pm, *backend, /*reportBackends=*/false, kernels,
                             *precision);
  return success();
}

void tfm::registerAllTfmPasses() {
  registerTfmPasses();
  PassPipelineRegistration<>(
      "tfm-fusion-pipeline",
      "Fuse attention blocks, layer norms and linear epilogues, then clean up",
      buildFusionPipeline);
  // PassPipelineRegistration's builder cannot fail: registered by hand, so
  // that a bad name is an error.
  registerPassPipeline(
      "tfm-lower-to-llvm",
      "Lower fused tfm IR to the LLVM dialect (linalg or oneDNN calls, "
      "bufferization, loops)",
      buildLoweringFromOptions,
      [](function_ref<void(const mlir::detail::PassOptions &)> optionsHandler) {
        optionsHandler(LoweringPipelineOptions());
      });
}
