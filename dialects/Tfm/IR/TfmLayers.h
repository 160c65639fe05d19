//===- TfmLayers.h - Layers as functions, calls bind weights ----*- C++ -*-===//
//
// A model repeats its layers: every encoder layer is the same computation
// over other weights, and so is every decoder layer. The importer emits
// each distinct layer once, as a private func.func marked `tfm.layer` whose
// tfm.weight names are relative, and calls it once per layer; each call
// carries `tfm.weights_prefix`, the checkpoint prefix that binds the
// layer's names for that call ("self_attn.q_proj.weight" under
// "model.encoder.layers.3." is the tensor
// "model.encoder.layers.3.self_attn.q_proj.weight"). tfm-layout-weights
// gives each call's weights one block of the weights file, in the layer's
// one layout, at the call's `tfm.weights_offset`; the lowering hands the
// layer a view of the weights file from there.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_DIALECTS_TFM_IR_TFMLAYERS_H
#define TFM_DIALECTS_TFM_IR_TFMLAYERS_H

#include "dialects/Tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir {
namespace tfm {

/// On a private func.func: a layer, whose tfm.weight names are relative to
/// the prefix of the call that runs it.
constexpr llvm::StringLiteral kLayerAttr = "tfm.layer";
/// On a func.call of a layer: the checkpoint prefix of its tensors.
constexpr llvm::StringLiteral kWeightsPrefixAttr = "tfm.weights_prefix";
/// On such a call, after tfm-layout-weights: the byte offset of its block of
/// the weights file, where the layer's offsets start.
constexpr llvm::StringLiteral kWeightsOffsetAttr = "tfm.weights_offset";

inline bool isLayer(func::FuncOp func) { return func->hasAttr(kLayerAttr); }

/// The prefix a call binds its layer's weights with, or null if it calls
/// no layer.
StringAttr weightsPrefix(func::CallOp call);

/// Calls `fn(weight, prefix)` for every weight as it is read: a weight of a
/// function that is not a layer once with prefix "", a weight of a layer
/// once per call of it, with that call's prefix (in the order of the calls,
/// then of the layer's weights).
void forEachBoundWeight(ModuleOp module,
                        llvm::function_ref<void(WeightOp, StringRef)> fn);

/// Whether one function can serve as both layers: the same signature and
/// the same ops over the same relative weight names (locations aside).
bool areEqualLayers(func::FuncOp a, func::FuncOp b);

/// Makes each call of a layer equal to an earlier layer call that one and
/// erases the layer; returns how many layers went.
int64_t mergeEqualLayers(ModuleOp module);

/// The checkpoint tensors `weight` stands for under `prefix`.
SmallVector<std::string> boundTensorNames(WeightOp weight, StringRef prefix);

/// The key of `weight` in the weights file under `prefix`: its name, or
/// for a stack its parts joined by '+', each prefixed.
std::string boundWeightName(WeightOp weight, StringRef prefix);

} // namespace tfm
} // namespace mlir

#endif // TFM_DIALECTS_TFM_IR_TFMLAYERS_H
