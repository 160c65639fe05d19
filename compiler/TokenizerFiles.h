//===- TokenizerFiles.h - A model's tokenizer, carried along ----*- C++ -*-===//
//
// A checkpoint may have SentencePiece files in Marian's layout (source.spm,
// target.spm, vocab.json). tfmc checks vocab.json against the model and
// copies the files beside the translator, or embeds them in it with the
// weights (tfm/abi/EmbeddedFiles.h); the runtime checks them all again
// and uses them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_TOKENIZERFILES_H
#define TFM_COMPILER_TOKENIZERFILES_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
namespace tfm {

/// The tokenizer files of `modelDir`: all three paths, none (the model
/// reads and writes ids), or an error naming the missing ones or what is
/// wrong with vocab.json (its size, </s> and <unk> against the model's
/// `vocabSize` and `eosTokenId`). A Marian release has a `*.vocab.yml`
/// instead of vocab.json: it is written as `outDir`/vocab.json.
llvm::Expected<llvm::SmallVector<std::string, 3>>
findTokenizerFiles(llvm::StringRef modelDir, int64_t vocabSize,
                   int64_t eosTokenId, llvm::StringRef outDir);

/// Copies `files` into `outDir` (a file already there stays).
llvm::Error copyTokenizerFiles(llvm::ArrayRef<std::string> files,
                               llvm::StringRef outDir);

/// Appends `files` and their table to `out`, an executable being written
/// whose next byte is at `position`; the EmbedTrailer comes after.
llvm::Error appendEmbeddedFiles(llvm::raw_ostream &out, uint64_t position,
                                llvm::ArrayRef<std::string> files);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_TOKENIZERFILES_H
