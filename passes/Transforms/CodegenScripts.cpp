//===- CodegenScripts.cpp - Transform-dialect codegen steps --------*- C++ -*-===//
//
// The vectorization of the linears is written as transform-dialect scripts
// (upstream's tiling and vectorization, no hand-written loops); each pass
// parses its script and applies it to the module. The schedules follow the
// measurements in shared/notes/mlir19-cpu-codegen.md.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMVECTORIZELINEARSPASS
#define GEN_PASS_DEF_TFMLOWERVECTORSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {

// x·Wᵀ, [M, K] x [N, K], for the matmuls tagged `tfm.chunk = {0}`: chunks
// of {0} output features run in parallel (scf.forall); in each, for each 16
// features (outer), for each row: 16 partial dot products in 16 lanes each
// over K in steps of 16, then one reduction.
constexpr const char *kVectorizeLinears = R"mlir(
module attributes {{transform.with_named_sequence} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}) {{
    %mm = transform.structured.match ops{{["linalg.matmul_transpose_b"]}
        attributes {{tfm.chunk = {0} : i64} in %root
        : (!transform.any_op) -> !transform.any_op
    %chunk, %forall = transform.structured.tile_using_forall %mm tile_sizes [0, {0}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled, %features, %rows = transform.structured.tile_using_for %chunk
        tile_sizes [1, 16, 0] interchange = [1, 0, 2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %fill, %partial, %combine, %kloop = transform.structured.tile_reduction_using_for %tiled
        by tile_sizes = [0, 0, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %funcs = transform.structured.match ops{{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %funcs : !transform.any_op {{
    ^bb0(%func: !transform.any_op):
      %vectorized = transform.structured.vectorize_children_and_apply_patterns %func
          : (!transform.any_op) -> !transform.any_op
      transform.apply_patterns to %vectorized {{
        transform.apply_patterns.canonicalization
        transform.apply_patterns.linalg.tiling_canonicalization
      } : !transform.any_op
      transform.apply_cse to %vectorized : !transform.any_op
      %loops = transform.structured.match ops{{["scf.for"]} in %vectorized
          : (!transform.any_op) -> !transform.any_op
      transform.apply_licm to %loops : !transform.any_op
      transform.loop.hoist_loop_invariant_subsets %loops : !transform.any_op
    }
    transform.yield
  }
}
)mlir";

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

struct TfmVectorizeLinearsPass
    : public tfm::impl::TfmVectorizeLinearsPassBase<TfmVectorizeLinearsPass> {
  using Base::Base;
  void runOnOperation() override {
    // Tag each matmul with its parallel chunk of output features: the
    // largest of 256..16 that divides N, so every tile has a static shape
    // and vectorizes. Others (N not a multiple of 16) keep scalar loops.
    std::set<int64_t> chunks;
    Builder b(&getContext());
    getOperation().walk([&](linalg::MatmulTransposeBOp mm) {
      int64_t n = cast<ShapedType>(mm.getInputs()[1].getType()).getDimSize(0);
      int64_t k = cast<ShapedType>(mm.getInputs()[1].getType()).getDimSize(1);
      if (ShapedType::isDynamic(n) || k % 16 != 0)
        return;
      for (int64_t chunk : {256, 128, 64, 32, 16})
        if (n % chunk == 0) {
          mm->setAttr("tfm.chunk", b.getI64IntegerAttr(chunk));
          chunks.insert(chunk);
          return;
        }
    });
    for (int64_t chunk : chunks)
      if (failed(applyScript(getOperation(),
                             llvm::formatv(kVectorizeLinears, chunk).str(),
                             "vectorize-linears")))
        return signalPassFailure();
  }
};

struct TfmLowerVectorsPass
    : public tfm::impl::TfmLowerVectorsPassBase<TfmLowerVectorsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyScript(getOperation(), kLowerVectors, "lower-vectors")))
      signalPassFailure();
  }
};

} // namespace
