//===- TokenizerFiles.h - A model's tokenizer, carried along ----*- C++ -*-===//
//
// A checkpoint may have its tokenizer's files beside it: Marian's layout
// (source.spm, target.spm, vocab.json), or a Hugging Face family's
// (M2M-100: sentencepiece.bpe.model and vocab.json; NLLB and mBART-50:
// sentencepiece.bpe.model; T5, mT5 and MADLAD-400: spiece.model). tfmc
// checks them against the model, describes them in a file of its own
// (tokenizer.tfm: how pieces get ids, the special tokens, the language
// table with ids, a one-pair model's languages; tfm/abi/EmbeddedFiles.h
// has the format) and copies them beside the translator, or embeds them in
// it with the weights; the runtime checks them again and follows the
// description, with no family logic of its own.
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

/// What the tokenizer is checked against: the model being compiled.
struct TokenizerTarget {
  /// config.json's model_type: marian, bart, mbart, m2m_100, ...
  std::string modelType = "marian";
  int64_t vocabSize = 0, eosTokenId = 0, padTokenId = -1;
  /// tfmc compile --source-lang / --target-lang: the languages of a model
  /// of one pair (Marian, BART), recorded for the runtime; empty if not
  /// given.
  std::string sourceLang, targetLang;
};

/// The files the translator gets, and what to tell the user.
struct TokenizerFiles {
  /// Paths to copy or embed; those inside the output directory tfmc made
  /// (tokenizer.tfm, a vocab.json from a Marian vocab.yml).
  llvm::SmallVector<std::string, 4> files;
  /// Set when the model directory has a tokenizer tfmc does not support
  /// (BART's byte-level BPE): the translator then reads and writes ids.
  std::string warning;
};

/// The tokenizer of `modelDir` for `model`: its files, checked (sizes and
/// special tokens against the model's), with tokenizer.tfm written to
/// `outDir` where the model needs a description (every family but a
/// Marian model without languages); none when the model reads and writes
/// ids; or an error naming the file and what is wrong.
llvm::Expected<TokenizerFiles> findTokenizerFiles(llvm::StringRef modelDir,
                                                  const TokenizerTarget &model,
                                                  llvm::StringRef outDir);

/// Marian's layout alone: all three paths, none (the model reads and writes
/// ids), or an error naming the missing ones or what is wrong with
/// vocab.json (its size, </s> and <unk> against the model's `vocabSize` and
/// `eosTokenId`). A Marian release has a `*.vocab.yml` instead of
/// vocab.json: it is written as `outDir`/vocab.json.
llvm::Expected<llvm::SmallVector<std::string, 3>>
findTokenizerFiles(llvm::StringRef modelDir, int64_t vocabSize,
                   int64_t eosTokenId, llvm::StringRef outDir);

/// Copies `files` into `outDir` (a file already there stays).
llvm::Error copyTokenizerFiles(llvm::ArrayRef<std::string> files,
                               llvm::StringRef outDir);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_TOKENIZERFILES_H
