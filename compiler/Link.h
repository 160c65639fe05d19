//===- Link.h - A translator linked from the model's objects ----*- C++ -*-===//
//
// The last step of `tfmc compile`: the model's object files (Codegen.h)
// linked with the runtime into the translator, an executable, and into
// libtranslator.so, the runtime's C API (tfm/runtime.h) for programs that
// load a model, such as the Python module. The runtime's libraries are
// found beside an installed tfmc, else in the build tree it came from.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_LINK_H
#define TFM_COMPILER_LINK_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
namespace tfm {

/// Whether the compiled module calls oneDNN kernels (convert-tfm-to-onednn):
/// its objects then link with oneDNN too.
bool callsOneDnn(ModuleOp module);

/// What the model's objects are linked into.
enum class LinkedOutput {
  /// An executable: the translator's main, its command line.
  Translator,
  /// A shared library exporting the runtime's C API.
  SharedLibrary,
};

/// Links `objectPaths` with the runtime (and oneDNN, `withOneDnn`) into
/// `outputPath`, by the C++ compiler driver on PATH.
llvm::Error linkTranslator(llvm::ArrayRef<std::string> objectPaths,
                           llvm::StringRef outputPath, bool withOneDnn,
                           LinkedOutput kind);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_LINK_H
