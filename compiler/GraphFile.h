//===- GraphFile.h - A tfm graph as compiler input --------------*- C++ -*-===//
//
// `tfmc compile model.mlir --weights MODEL_DIR` compiles a `tfm` graph
// (as `tfmc import` writes it, edited by hand, or after tfm-opt passes; in
// primitive or fused form) against the checkpoint whose tensors it names.
// The graph gets the checks an imported model gets by construction.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_GRAPHFILE_H
#define TFM_COMPILER_GRAPHFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace tfm {

/// Parses and verifies the graph in `graphPath` (diagnostics print with
/// their line), then checks it against what the translator's runtime calls
/// (tfm/abi/ModelInfo.h: `tfm.model`, `encode` and `decode_step` with
/// the arguments of its decoder layers) and every `tfm.weight` against
/// `modelDir`'s model.safetensors: the name present, a float dtype, the
/// same shape. Errors name the graph file's line and the tensor.
llvm::Expected<OwningOpRef<ModuleOp>> loadGraph(MLIRContext &context,
                                                llvm::StringRef graphPath,
                                                llvm::StringRef modelDir);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_GRAPHFILE_H
