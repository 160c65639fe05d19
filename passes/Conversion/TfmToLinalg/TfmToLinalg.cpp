//===- TfmToLinalg.cpp - Lower tfm to linalg, tensor and scf ----*- C++ -*-===//
//
// Each tfm op becomes tensor-level upstream ops that the codegen pipeline
// tiles, vectorizes, bufferizes and lowers to LLVM. Shapes stay dynamic in
// batch and sequence; sizes come from tensor.dim of the operands.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

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

struct ConvertTfmToLinalgPass
    : public tfm::impl::ConvertTfmToLinalgPassBase<ConvertTfmToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Functions that read weights take the weights file as a leading
    // argument: memref<?xi8>, 64-byte aligned by the runtime.
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || func.getBody().getOps<WeightOp>().empty())
        continue;
      auto bytes = MemRefType::get({ShapedType::kDynamic},
                                   IntegerType::get(ctx, 8));
      func.insertArgument(0, bytes,
                          DictionaryAttr::get(ctx, {NamedAttribute(
                                                   StringAttr::get(ctx, "tfm.name"),
                                                   StringAttr::get(ctx, "weights"))}),
                          func.getLoc());
      // The rows callers choose (tfm.caller_rows): an argument of bytes
      // each, after the others, in order of first use.
      SmallVector<StringRef> chosen;
      func.walk([&](CallerRowsOp op) {
        if (!llvm::is_contained(chosen, op.getFrom()))
          chosen.push_back(op.getFrom());
      });
      for (StringRef name : chosen)
        func.insertArgument(
            func.getNumArguments(), bytes,
            DictionaryAttr::get(
                ctx, {NamedAttribute(StringAttr::get(ctx, "tfm.name"),
                                     StringAttr::get(ctx, name))}),
            func.getLoc());
    }

    ConversionTarget target(*ctx);
    target.addIllegalDialect<TfmDialect>();
    // Weights in panels are read by the linears' lowering, then erased.
    target.addDynamicallyLegalOp<WeightOp>(
        [](WeightOp op) { return op->hasAttr(kPanelWidthAttr); });
    target.addDynamicallyLegalOp<CallerRowsOp>([](CallerRowsOp op) {
      return op.getInput().getDefiningOp()->hasAttr(kPanelWidthAttr);
    });
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, memref::MemRefDialect,
                           bufferization::BufferizationDialect,
                           func::FuncDialect, vector::VectorDialect,
                           LLVM::LLVMDialect>();
    RewritePatternSet patterns(ctx);
    if (vectorWidth < 1 || (vectorWidth & (vectorWidth - 1))) {
      module.emitError() << "vector-width must be a power of two, found "
                         << int64_t(vectorWidth);
      return signalPassFailure();
    }
    populateTfmToLinalgPatterns(patterns, queryBlock, keyBlock, vectorWidth,
                                bf16Dot, int8Dot);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    WalkResult unreadRows = module.walk([](CallerRowsOp op) {
      if (!op->use_empty()) {
        op.emitOpError("chooses rows of panels for linears but is read by ")
            << (*op->user_begin())->getName();
        return WalkResult::interrupt();
      }
      op.erase();
      return WalkResult::advance();
    });
    if (unreadRows.wasInterrupted())
      return signalPassFailure();
    WalkResult unread = module.walk([](WeightOp op) {
      if (!op->use_empty()) {
        op.emitOpError("is stored in panels for linears but read by ")
            << (*op->user_begin())->getName();
        return WalkResult::interrupt();
      }
      op.erase();
      return WalkResult::advance();
    });
    if (unread.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::tfm::populateTfmToLinalgPatterns(RewritePatternSet &patterns,
                                            int64_t queryBlock,
                                            int64_t keyBlock,
                                            int64_t vectorWidth,
                                            bool bf16Dot, bool int8Dot) {
  lowering::populateElementwiseLoweringPatterns(patterns);
  lowering::populateDataMovementLoweringPatterns(patterns, vectorWidth);
  lowering::populateLinearLoweringPatterns(patterns, vectorWidth, bf16Dot,
                                           int8Dot);
  lowering::populateNormalizationLoweringPatterns(patterns, vectorWidth);
  lowering::populateAttentionLoweringPatterns(patterns, queryBlock, keyBlock,
                                              vectorWidth);
}
