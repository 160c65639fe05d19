//===- WeightsFile.h - The weights file a translator maps -------*- C++ -*-===//
//
// tfmc writes the tensors a compiled model reads into one file: a header
// (tfm/abi/ModelInfo.h) then each tensor as f32 at the offset that
// tfm-layout-weights gave it, converted from the checkpoint's F32, F16 or
// BF16 (a linear's panels as bf16 with --precision bf16). A fingerprint of
// the layout, compiled into the code too, ties the two together.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_WEIGHTSFILE_H
#define TFM_COMPILER_WEIGHTSFILE_H

#include "compiler/Checkpoint.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace tfm {

/// A hash of the module's `tfm.weights_layout` and `tfm.model`.
uint64_t layoutFingerprint(ModuleOp module);

/// The module's `tfm.precision` as the runtime's code for it
/// (tfm_runtime::kPrecisionFp32 or kPrecisionBf16).
uint64_t precisionCode(ModuleOp module);

/// Writes the weights file for a module that went through
/// tfm-layout-weights, reading the tensors from `checkpoint`.
llvm::Error writeWeightsFile(ModuleOp module, const Checkpoint &checkpoint,
                             llvm::StringRef path);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_WEIGHTSFILE_H
