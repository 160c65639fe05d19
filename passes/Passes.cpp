//===- Passes.cpp - tfm pass registration and pipelines -----------*- C++ -*-===//

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void tfm::buildFusionPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createTfmFuseLayerNormPass());
  pm.addPass(createTfmFuseAttentionPass());
  pm.addPass(createTfmFuseLinearEpiloguePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void tfm::registerAllTfmPasses() {
  registerTfmPasses();
  PassPipelineRegistration<>(
      "tfm-fusion-pipeline",
      "Fuse attention blocks, layer norms and linear epilogues, then clean up",
      buildFusionPipeline);
}
