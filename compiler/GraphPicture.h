//===- GraphPicture.h - The model graph as a Graphviz picture ---*- C++ -*-===//
//
// `tfmc graph` draws what the compiler did to a model: its functions'
// ops as nodes (with their result shapes and the weights they read),
// values as edges. Each layer function is drawn once; in the entry points
// its calls are one node with their count and a loop edge, and what is
// made per layer (arguments, cross-attention keys) likewise.
// A fused op is a cluster that lists the primitive ops it replaced (its
// decomposition); once backends are chosen each op is coloured by the one
// that runs it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_GRAPHPICTURE_H
#define TFM_COMPILER_GRAPHPICTURE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace tfm {

/// Writes `module` (tfm IR, primitive or fused, with or without
/// `tfm.backend` choices) as a DOT digraph titled `title`.
void writeGraphPicture(ModuleOp module, llvm::StringRef title,
                       llvm::raw_ostream &os);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_GRAPHPICTURE_H
