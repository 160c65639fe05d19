//===- TfmToLinalg.cpp - Lower tfm to linalg, tensor and scf ----*- C++ -*-===//
//
// Each tfm op becomes tensor-level upstream ops that the codegen pipeline
// tiles, vectorizes, bufferizes and lowers to LLVM. Shapes stay dynamic in
// batch and sequence; sizes come from tensor.dim of the operands.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include "dialects/Tfm/IR/TfmLayers.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_CONVERTTFMTOLINALGPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Inserts a memref<?xi8> argument named `name` (tfm.name) at `index`.
void addBytesArgument(func::FuncOp func, unsigned index, StringRef name) {
  MLIRContext *ctx = func.getContext();
  auto bytes =
      MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8));
  NamedAttribute attr(StringAttr::get(ctx, "tfm.name"),
                      StringAttr::get(ctx, name));
  func.insertArgument(index, bytes, DictionaryAttr::get(ctx, {attr}),
                      func.getLoc());
}

/// Whether the function reads weights: its own, or through the layers it
/// calls.
bool readsWeights(func::FuncOp func) {
  if (!func.getBody().getOps<WeightOp>().empty())
    return true;
  WalkResult calls = func.walk([](func::CallOp call) {
    return call->hasAttr(kWeightsOffsetAttr) ? WalkResult::interrupt()
                                             : WalkResult::advance();
  });
  return calls.wasInterrupted();
}

/// Each call of a layer hands it its block of the weights: a view of the
/// caller's weights from the call's offset on, which the layer's weights'
/// offsets are relative to.
LogicalResult passLayerWeights(ModuleOp module) {
  SymbolTable symbols(module);
  WalkResult result = module.walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || !isLayer(callee) ||
        callee.getNumArguments() == call.getNumOperands())
      return WalkResult::advance();
    auto offset = call->getAttrOfType<IntegerAttr>(kWeightsOffsetAttr);
    if (!offset) {
      call.emitOpError("calls a layer that reads weights but has no ")
          << kWeightsOffsetAttr << "; run tfm-layout-weights first";
      return WalkResult::interrupt();
    }
    OpBuilder b(call);
    Location loc = call.getLoc();
    Value weights = call->getParentOfType<func::FuncOp>().getArgument(0);
    Value at = b.create<arith::ConstantIndexOp>(loc, offset.getInt());
    Value size = b.create<arith::SubIOp>(
        loc, b.create<memref::DimOp>(loc, weights, 0), at);
    Value block = b.create<memref::ViewOp>(loc, weights.getType(), weights, at,
                                           ValueRange{size});
    call->insertOperands(0, block);
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Erases the ops of type OpTy that the lowering left legal for the
/// linears to read (weights in panels, the rows chosen of them): once the
/// linears are lowered, nothing may read them; one that something does
/// is an error (`what`, then the reader's name).
template <typename OpTy>
LogicalResult eraseUnread(ModuleOp module, StringRef what) {
  WalkResult read = module.walk([&](OpTy op) {
    if (!op->use_empty()) {
      op.emitOpError(what) << (*op->user_begin())->getName();
      return WalkResult::interrupt();
    }
    op.erase();
    return WalkResult::advance();
  });
  return failure(read.wasInterrupted());
}

/// Every weight stored in panels has the kernels' panel width: the kernel
/// reads a panel as `config.panels.vectors` vectors of the target's.
LogicalResult checkPanelWidths(ModuleOp module, const KernelConfig &config) {
  WalkResult result = module.walk([&](WeightOp weight) {
    auto width = weight->getAttrOfType<IntegerAttr>(kPanelWidthAttr);
    if (!width || width.getInt() == config.panelWidth())
      return WalkResult::advance();
    weight.emitOpError("is stored in panels of ")
        << width.getInt() << " features, but the kernels take panels of "
        << config.panelWidth() << " (" << config.panels.vectors
        << " vectors of " << config.vectorWidth << " floats)";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

struct ConvertTfmToLinalgPass
    : public tfm::impl::ConvertTfmToLinalgPassBase<ConvertTfmToLinalgPass> {
  using Base::Base;

  /// The lowering pipeline's pass: the kernels of `config`, which its
  /// options show.
  explicit ConvertTfmToLinalgPass(const KernelConfig &config) : given(config) {
    vectorWidth = config.vectorWidth;
    bf16Dot = config.panels.bf16Dot;
    int8Dot = config.panels.int8Dot;
    queryBlock = config.attention.queryBlock;
    linalgKeyBlock = config.attention.linalgKeyBlock;
  }

  /// The configuration given, or the options' (tfm-opt): the target's,
  /// with the attention's blocks of the options.
  KernelConfig kernelConfig() const {
    if (given)
      return *given;
    KernelConfig config =
        KernelConfig::forTarget({vectorWidth, bf16Dot, int8Dot});
    config.attention.queryBlock = queryBlock;
    config.attention.linalgKeyBlock = linalgKeyBlock;
    return config;
  }

  /// Each tfm op's location gets its kind's name ("linear"): the loops
  /// lowered from it, and the kernels outlined from those, then say what
  /// they compute (tfm_kernel_7_linear_ffn in a profile).
  static void nameLocationsByKind(ModuleOp module) {
    module.walk([](Operation *op) {
      if (isa_and_nonnull<TfmDialect>(op->getDialect()))
        op->setLoc(NameLoc::get(
            StringAttr::get(op->getContext(), op->getName().stripDialect()),
            op->getLoc()));
    });
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Functions that read weights take the weights file as a leading
    // argument: memref<?xi8>, 64-byte aligned by the runtime; and the rows
    // callers choose (tfm.caller_rows) an argument of bytes each, after the
    // others, in order of first use.
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !readsWeights(func))
        continue;
      addBytesArgument(func, 0, "weights");
      SmallVector<StringRef> chosen;
      func.walk([&](CallerRowsOp op) {
        if (!llvm::is_contained(chosen, op.getFrom()))
          chosen.push_back(op.getFrom());
      });
      for (StringRef name : chosen)
        addBytesArgument(func, func.getNumArguments(), name);
    }
    if (failed(passLayerWeights(module)))
      return signalPassFailure();
    nameLocationsByKind(module);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<TfmDialect>();
    // Weights in panels are read by the linears' lowering, then erased.
    target.addDynamicallyLegalOp<WeightOp>(
        [](WeightOp op) { return op->hasAttr(kPanelWidthAttr); });
    target.addDynamicallyLegalOp<CallerRowsOp>([](CallerRowsOp op) {
      return op.getInput().getDefiningOp()->hasAttr(kPanelWidthAttr);
    });
    target.addLegalDialect<
        linalg::LinalgDialect, tensor::TensorDialect, arith::ArithDialect,
        math::MathDialect, scf::SCFDialect, memref::MemRefDialect,
        bufferization::BufferizationDialect, func::FuncDialect,
        vector::VectorDialect, LLVM::LLVMDialect>();
    RewritePatternSet patterns(ctx);
    if (vectorWidth < 1 || (vectorWidth & (vectorWidth - 1))) {
      module.emitError() << "vector-width must be a power of two, found "
                         << int64_t(vectorWidth);
      return signalPassFailure();
    }
    KernelConfig config = kernelConfig();
    if (failed(checkPanelWidths(module, config)))
      return signalPassFailure();
    populateTfmToLinalgPatterns(patterns, config);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    if (failed(eraseUnread<CallerRowsOp>(
            module, "chooses rows of panels for linears but is read by ")) ||
        failed(eraseUnread<WeightOp>(
            module, "is stored in panels for linears but read by ")))
      signalPassFailure();
  }

  std::optional<KernelConfig> given;
};

} // namespace

std::unique_ptr<Pass>
mlir::tfm::createConvertTfmToLinalgPass(const KernelConfig &config) {
  return std::make_unique<ConvertTfmToLinalgPass>(config);
}

void mlir::tfm::populateTfmToLinalgPatterns(RewritePatternSet &patterns,
                                            const KernelConfig &config) {
  lowering::populateElementwiseLoweringPatterns(patterns);
  lowering::populateDataMovementLoweringPatterns(patterns, config);
  lowering::populateLinearLoweringPatterns(patterns, config);
  lowering::populateNormalizationLoweringPatterns(patterns, config);
  lowering::populateAttentionLoweringPatterns(patterns, config);
}
