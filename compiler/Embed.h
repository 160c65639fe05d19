//===- Embed.h - The weights and files inside the translator ----*- C++ -*-===//
//
// `tfmc compile --embed-weights` makes the translator one file: its
// weights appended to the executable, page-aligned, then the tokenizer's
// files (and a vmap) with their table, then a trailer that the runtime
// finds at the end of its own executable (tfm/abi/ModelInfo.h's
// EmbedTrailer, tfm/abi/EmbeddedFiles.h's layout of the files).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_EMBED_H
#define TFM_COMPILER_EMBED_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
namespace tfm {

/// Appends the weights file at `weightsPath` and `files` to the translator
/// at `translatorPath`, then removes the weights file and those of `files`
/// that tfmc wrote beside the translator (tokenizer.tfm, a vocab.json made
/// from a Marian vocab.yml): they are inside it now.
llvm::Error embedInTranslator(llvm::StringRef translatorPath,
                              llvm::StringRef weightsPath,
                              llvm::ArrayRef<std::string> files);

/// Appends `files` and their table to `out`, an executable being written
/// whose next byte is at `position`; the EmbedTrailer comes after.
llvm::Error appendEmbeddedFiles(llvm::raw_ostream &out, uint64_t position,
                                llvm::ArrayRef<std::string> files);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_EMBED_H
