//===- Importer.h - Checkpoint to tfm IR ------------------------*- C++ -*-===//
//
// Turns a Hugging Face checkpoint directory of a supported family
// (config.json and its tensors; ModelConfig.h) or a Marian .npz release
// into a module in primitive `tfm` form with two entry points, `encode` and
// `decode_step`, which call each distinct layer's function once per layer
// (dialects/Tfm/IR/TfmLayers.h). Only the safetensors header is read:
// weights stay in the file and the IR names them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_IMPORTER_H
#define TFM_COMPILER_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace tfm {

struct ImportOptions {
  /// Checkpoint tensors that the model does not read are an error (the
  /// config does not describe the checkpoint: fewer layers, a renamed
  /// tensor); with this they are listed on `warnings` instead.
  bool allowUnusedTensors = false;
};

/// Imports the checkpoint in `modelDir`. Every problem with the directory,
/// config or tensors comes back as an error naming the file and the key or
/// tensor; the returned module verifies. Warnings go to `warnings`.
llvm::Expected<OwningOpRef<ModuleOp>>
importModel(MLIRContext &context, llvm::StringRef modelDir,
            const ImportOptions &options = {},
            llvm::raw_ostream &warnings = llvm::errs());

/// A human-readable overview of an imported module: the model's config,
/// entry-point signatures, weights and op counts.
void printModelSummary(ModuleOp module, llvm::raw_ostream &os);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_IMPORTER_H
