//===- Vmap.h - tfmc's side of the vocabulary shortlist ---------*- C++ -*-===//
//
// `tfmc compile --vmap FILE` reads a vocabulary map with the model's
// vocabulary and stores it in the compiled model's directory in the
// runtime's compact form (runtime/src/Shortlist.h); `tfmc shortlist
// --measure` reports how large a batch's shortlist is on a test set and
// how many of its reference pieces it holds.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TFMC_VMAP_H
#define TFM_TOOLS_TFMC_VMAP_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfm_tools {

/// A vocab.json: piece -> id.
using Vocabulary = llvm::StringMap<int32_t>;
llvm::Expected<Vocabulary> readVocabulary(llvm::StringRef path);

/// Reads `vmapPath` with `vocabulary` (the model's, of `vocabSize` target
/// ids), adds `specials` (EOS, pad, <unk>, decoder start) to the tokens
/// always included and writes the compact form to `outPath`. A warning
/// (pieces skipped) goes to `warning`; an error names the file and line.
llvm::Error storeVmap(llvm::StringRef vmapPath, const Vocabulary &vocabulary,
                      int32_t vocabSize, llvm::ArrayRef<int32_t> specials,
                      llvm::StringRef outPath, std::string &warning);

/// Checks the lines of `vmapPath` (a TAB each, target pieces) and copies
/// it to `outPath`: the vmap of a model whose pieces get ids from its
/// SentencePiece model alone, which the runtime reads with its tokenizer
/// (tfm/abi/Vmap.h, kVmapTextFileName). An error names the file and line.
llvm::Error storeVmapText(llvm::StringRef vmapPath, llvm::StringRef outPath);

/// Prints, for each batch size, the median and the spread of the size of
/// the shortlist of consecutive batches of `sourcePath` (pieces, with </s>
/// appended as the translator does), and the share of the pieces of
/// `targetPath` (the references, if given) that their sentence's batch-1
/// shortlist holds.
llvm::Error
measureShortlist(llvm::StringRef vmapPath, const Vocabulary &vocabulary,
                 llvm::StringRef sourcePath, llvm::StringRef targetPath,
                 llvm::ArrayRef<unsigned> batchSizes, llvm::raw_ostream &os);

} // namespace tfm_tools

#endif // TFM_TOOLS_TFMC_VMAP_H
