//===- LanguageTables.h - The languages of multilingual models --*- C++ -*-===//
//
// The language tokens of the multilingual families, as their Hugging Face
// tokenizers number them: fairseq's lists for M2M-100 (and its WMT21
// models), NLLB and mBART-50, with the other names that choose a language
// (ISO 639-1 codes), and MADLAD-400's <2xx> pieces.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_LANGUAGETABLES_H
#define TFM_COMPILER_LANGUAGETABLES_H

#include "compiler/SentencePieceModel.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace tfm {

/// One language token of a multilingual model.
struct Language {
  std::string code;
  int64_t id;
  llvm::SmallVector<std::string, 3> names; // other names that choose it
};

/// M2M-100's language tokens __xx__ (`wmt21`: those of its WMT21 models),
/// numbered from `firstId`, each chosen by its code xx too.
llvm::SmallVector<Language> m2m100Languages(bool wmt21, int64_t firstId);

/// The codes of NLLB (`kind` "nllb": eng_Latn, chosen too by its ISO
/// 639-1 code, and by eng where the language has no other script) or
/// mBART-50 ("mbart50": en_XX, chosen too by en), numbered from `firstId`.
llvm::SmallVector<Language> fairseqLanguages(llvm::StringRef kind,
                                             int64_t firstId);

/// MADLAD-400's target languages: its pieces <2xx> (<2de>, <2pt_BR>,
/// <2zxx_xx_dtynoise>), plain pieces of the SentencePiece model (not
/// special tokens), chosen by the code inside them too.
llvm::SmallVector<Language> madladLanguages(const SentencePieceSummary &spm);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_LANGUAGETABLES_H
