//===- Pipelines.cpp - The fusion and lowering pipelines --------*- C++ -*-===//

#include "passes/Pipelines.h"

#include "passes/Passes.h"

#include "dialects/Tfm/IR/TfmLayers.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/TransformOps/BufferizationTransformOps.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/TransformOps/FuncTransformOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/TransformOps/DialectExtension.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/TransformOps/MemRefTransformOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/TransformOps/SCFTransformOps.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/TransformOps/TensorTransformOps.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/LoopExtension/LoopExtension.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/TransformOps/VectorTransformOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void tfm::buildFusionPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createTfmFuseLayerNormPass());
  pm.addPass(createTfmFuseAttentionPass());
  pm.addPass(createTfmFuseLinearEpiloguePass());
  pm.addPass(createTfmFuseSiblingLinearsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

// The canonicalizations of the lowering run per function, so that MLIR runs
// them on the entry points (encode, decode_step) in parallel threads.
void tfm::buildLoweringPipeline(OpPassManager &pm, Backend backend,
                                bool reportBackends,
                                const KernelConfig &kernels,
                                Precision precision, bool profileKernels) {
  // The passes take the choices as options (which tfm-opt spells and a
  // printed pipeline shows): their names, which each pass parses back.
  TfmSelectBackendPassOptions selection;
  selection.backend = backendName(backend).str();
  selection.report = reportBackends;
  selection.precision = precisionName(precision).str();
  pm.addPass(createTfmSelectBackendPass(selection));
  pm.addPass(createConvertTfmToOneDnnPass());
  // After the oneDNN calls: weights that only our linears read go in
  // panels, those a call reads stay plain.
  TfmLayoutWeightsPassOptions layout;
  layout.panelWidth = kernels.panelWidth();
  layout.precision = precisionName(precision).str();
  pm.addPass(createTfmLayoutWeightsPass(layout));
  pm.addPass(createConvertTfmToLinalgPass(kernels));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createTfmResolveTensorDimsPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());

  // Tensors -> buffers. Function arguments and results become memrefs with
  // identity layouts; results equivalent to an argument (the updated KV
  // caches) are dropped, the rest become caller-allocated out-params, in
  // which the ops that make them write directly.
  bufferization::OneShotBufferizationOptions bufferization;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  bufferization.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
  // Its constants' globals get names by the order it visited functions in,
  // which varies from run to run: named by their first use instead.
  pm.addPass(createTfmNameConstantGlobalsPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  // Layers keep their results: a call cannot allocate an out-param of a
  // dynamic shape (the layer allocates it and hands it over instead).
  bufferization::BufferResultsToOutParamsOpts outParams;
  outParams.filterFn = [](func::FuncOp *func) { return !isLayer(*func); };
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createTfmWriteResultsInPlacePass());

  // Loops; scf.forall becomes scf.parallel, which runs on OpenMP threads.
  pm.addPass(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());

  // Temporaries stay on the heap: allocas inside loops that cannot be
  // hoisted grow the stack every iteration. Hoist what can be, then free
  // each buffer after its last use (not at the end of its block), so the
  // allocator reuses it while it is still in cache.
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferLoopHoistingPass());
  // A layer hands over its result with a flag saying whether the caller
  // owns it (a view of a buffer it does not own is not cloned).
  bufferization::BufferDeallocationPipelineOptions deallocation;
  deallocation.privateFunctionDynamicOwnership = true;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);
  pm.addPass(createTfmFreeAfterLastUsePass());

  // One function per distinct loop nest: what follows, and LLVM, see each
  // layer's kernels once.
  TfmOutlineKernelsPassOptions outline;
  outline.profile = profileKernels;
  pm.addPass(createTfmOutlineKernelsPass(outline));

  // To the LLVM dialect.
  pm.addPass(createTfmLowerVectorsPass());
  pm.addPass(createTfmApproximateVectorMathPass());
  // Unrolled: the loop form stages each vector in a stack slot per
  // iteration.
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addPass(createTfmMarkEntryPointsPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(createTfmInlineAllocaScopesPass());
  // Conversions that need nothing outside a function run per function, on
  // the entry points in parallel; the others (declarations, the memref
  // descriptors' helpers) on the module.
  OpPassManager &perFunction = pm.nest<func::FuncOp>();
  perFunction.addPass(memref::createExpandStridedMetadataPass());
  perFunction.addPass(createLowerAffinePass());
  perFunction.addPass(createConvertSCFToCFPass());
  // With bf16: extf as a 16-bit shift, truncf rounding to nearest even.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  perFunction.addPass(arith::createArithExpandOpsPass(expand));
  perFunction.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addNestedPass<func::FuncOp>(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addNestedPass<func::FuncOp>(createArithToLLVMConversionPass());
  pm.addNestedPass<func::FuncOp>(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // No canonicalization of the LLVM dialect: it took a third of the MLIR
  // pipeline's time on the base model, and LLVM's -O3 does the same.
}

namespace {
/// The caches, which memref.prefetch fills: a resource of its own, so that
/// writing it aliases no memory.
struct CacheResource : public SideEffects::Resource::Base<CacheResource> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CacheResource)
  StringRef getName() final { return "tfm.cache"; }
};

/// memref.prefetch reads its memref and writes the caches. Upstream
/// declares no effects, which buffer deallocation refuses; with only the
/// read, canonicalization would erase it as dead. The linears prefetch the
/// next panel of weights.
struct PrefetchMemoryEffects
    : public MemoryEffectOpInterface::ExternalModel<PrefetchMemoryEffects,
                                                    memref::PrefetchOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    effects.emplace_back(MemoryEffects::Read::get(), &op->getOpOperand(0),
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(), CacheResource::get());
  }
};

/// llvm.call_intrinsic declares no effects, which buffer deallocation
/// refuses. The linears call one that computes on registers only (AVX512-
/// BF16's dot product); any other may read and write anything.
struct CallIntrinsicMemoryEffects
    : public MemoryEffectOpInterface::ExternalModel<CallIntrinsicMemoryEffects,
                                                    LLVM::CallIntrinsicOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    if (cast<LLVM::CallIntrinsicOp>(op).getIntrin() ==
        "llvm.x86.avx512bf16.dpbf16ps.512")
      return;
    effects.emplace_back(MemoryEffects::Read::get());
    effects.emplace_back(MemoryEffects::Write::get());
  }
};
} // namespace

void tfm::registerCodegenDialects(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, memref::MemRefDialect *) {
    memref::PrefetchOp::attachInterface<PrefetchMemoryEffects>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, LLVM::LLVMDialect *) {
    LLVM::CallIntrinsicOp::attachInterface<CallIntrinsicMemoryEffects>(*ctx);
  });
  registry.insert<omp::OpenMPDialect>();
  registry.insert<TfmDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  // Tiling, value bounds and subsets, for the transform scripts.
  linalg::registerAllDialectInterfaceImplementations(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
  // The transform dialect and the extensions the codegen scripts use.
  registry.insert<transform::TransformDialect, vector::VectorDialect>();
  bufferization::registerTransformDialectExtension(registry);
  func::registerTransformDialectExtension(registry);
  linalg::registerTransformDialectExtension(registry);
  memref::registerTransformDialectExtension(registry);
  scf::registerTransformDialectExtension(registry);
  tensor::registerTransformDialectExtension(registry);
  vector::registerTransformDialectExtension(registry);
  transform::registerLoopExtension(registry);
}
