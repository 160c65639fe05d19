//===- Jit.h - Lowered tfm code run in-process ------------------*- C++ -*-===//
//
// What tfm-run and tfm-bench share to run, in their own process, the code
// that tfmc would compile: a context with the dialects of the whole
// pipeline and their translations to LLVM IR, and an execution engine that
// resolves the runtime's functions the code calls, as a translator's link
// does.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_JIT_H
#define TFM_COMPILER_JIT_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace mlir {
namespace tfm {

/// The dialects of the lowering pipeline, with the translations of the
/// LLVM-dialect module to LLVM IR.
DialectRegistry jitRegistry();

/// An engine for `module`, lowered to the LLVM dialect, with the symbols
/// that a translator links from the runtime: memrefCopy and the oneDNN
/// backend's kernels (tfm/abi/OneDnnAbi.h).
llvm::Expected<std::unique_ptr<ExecutionEngine>>
createJit(ModuleOp module, const ExecutionEngineOptions &options);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_JIT_H
