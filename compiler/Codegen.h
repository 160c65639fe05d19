//===- Codegen.h - tfm IR to a native object file ---------------*- C++ -*-===//
//
// The back half of the compiler: fused tfm IR -> linalg -> bufferized loops
// -> LLVM dialect -> LLVM IR -> an object file for the host (or a given)
// CPU, through LLVM's TargetMachine in-process.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_CODEGEN_H
#define TFM_COMPILER_CODEGEN_H

#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
namespace tfm {

/// The integer keys of the module's `tfm.model` that tfm_model_info
/// carries, in its field order (tfm/abi/ModelInfo.h).
constexpr const char *kModelInfoKeys[] = {
    "d_model",           "encoder_layers",        "decoder_layers",
    "encoder_heads",     "decoder_heads",         "source_vocab_size",
    "target_vocab_size", "max_positions",         "eos_token_id",
    "pad_token_id",      "decoder_start_token_id"};

struct CodegenOptions {
  /// LLVM CPU name; empty: the host's.
  std::string targetCpu;
  /// LLVM feature string ("+avx512f,..."); empty: the host's (or the CPU's).
  std::string targetFeatures;
  unsigned optLevel = 3;
  /// Modules optimized and emitted in parallel, one thread each.
  unsigned threads = 1;
};

/// The target's vector unit: 16 floats per register with AVX-512, else 8;
/// AVX512-BF16's and AVX512-VNNI's dot products.
llvm::Expected<VectorTarget> targetVectorUnit(const CodegenOptions &options);

/// Translates an LLVM-dialect module to LLVM IR, adds a packed wrapper
/// `tfm_<name>(void **args)` per entry point (each element points at one
/// argument: a memref descriptor or a scalar), splits it into
/// `options.threads` modules, optimizes them at `optLevel` and writes their
/// object files, `pathStem`.0.o, .1.o, ... (the paths are returned).
llvm::Expected<std::vector<std::string>>
emitObjectFiles(ModuleOp module, llvm::StringRef pathStem,
                const CodegenOptions &options);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_CODEGEN_H
