//===- WeightsFile.h - The weights file a translator maps -------*- C++ -*-===//
//
// tfmc writes the tensors a compiled model reads into one file: a header
// (tfm/abi/ModelInfo.h) then each tensor as f32 at the offset that
// tfm-layout-weights gave it, converted from the checkpoint's F32, F16 or
// BF16 (a linear's panels as bf16 or int8 with --precision bf16 or int8).
// A fingerprint of the layout, compiled into the code too, ties the two
// together. Why and how it is streamed: docs/Design/Checkpoints.md.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_WEIGHTSFILE_H
#define TFM_COMPILER_WEIGHTSFILE_H

#include "compiler/Checkpoint.h"
#include "passes/LoweringChoices.h"
#include "tfm/abi/ModelInfo.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace tfm {

/// A hash of the module's `tfm.weights_layout` and `tfm.model`.
uint64_t layoutFingerprint(ModuleOp module);

/// The runtime's code for `precision` (tfm_runtime::kPrecisionFp32,
/// kPrecisionBf16, kPrecisionInt8 or kPrecisionInt4).
uint64_t precisionCode(Precision precision);

/// The weights file's header (tfm/abi/ModelInfo.h) for `dataSize` bytes
/// of tensors followed by the region table `table`, of a layout with
/// `fingerprint` and linears at `precision`; its checksums filled in.
tfm_runtime::WeightsHeader weightsHeader(uint64_t fingerprint,
                                         Precision precision,
                                         llvm::ArrayRef<uint8_t> table,
                                         uint64_t dataSize);

struct WeightsFileOptions {
  /// About how many bytes of a tensor are converted and written at a time
  /// (at least one panel's worth): what the writer holds in memory.
  uint64_t chunkBytes = uint64_t(32) << 20;
};

/// Writes the weights file for a module that went through
/// tfm-layout-weights, reading the tensors from `checkpoint` a chunk at a
/// time and releasing what it has read (Checkpoint::release), so that
/// neither the checkpoint nor the weights file is ever held in memory. An
/// error names `path` or the tensor; the file is removed on failure.
llvm::Error writeWeightsFile(ModuleOp module, const Checkpoint &checkpoint,
                             llvm::StringRef path,
                             const WeightsFileOptions &options = {});

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_WEIGHTSFILE_H
