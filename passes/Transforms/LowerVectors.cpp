//===- LowerVectors.cpp - Vector ops for convert-vector-to-llvm -*- C++ -*-===//
//
// The lowering of vector ops to what convert-vector-to-llvm takes, written
// as a transform-dialect script that the pass parses and applies to the
// module (the pitfalls it avoids: docs/Design/MLIR19Codegen.md).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMLOWERVECTORSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

constexpr const char *kLowerVectors = R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %hoisted = transform.structured.hoist_redundant_vector_transfers %funcs
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_broadcast
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_shape_cast
    } : !transform.any_op
    transform.yield
  }
}
)mlir";

/// Parses `script` and applies its @__transform_main to `root`.
LogicalResult applyScript(Operation *root, StringRef script, StringRef name) {
  MLIRContext *ctx = root->getContext();
  ParserConfig config(ctx);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(script, config, name);
  if (!module)
    return root->emitError() << "cannot parse the " << name << " script";
  Operation *entry = transform::detail::findTransformEntryPoint(
      *module, ModuleOp(), "__transform_main");
  if (!entry)
    return root->emitError() << "no entry point in the " << name << " script";
  transform::TransformOptions options;
  return transform::applyTransformNamedSequence(root, entry, *module, options);
}

struct TfmLowerVectorsPass
    : public tfm::impl::TfmLowerVectorsPassBase<TfmLowerVectorsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyScript(getOperation(), kLowerVectors, "lower-vectors")))
      signalPassFailure();
  }
};

} // namespace
