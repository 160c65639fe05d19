//===- TokenizerFamilies.h - Each family's tokenizer rules ------*- C++ -*-===//
//
// How each family's tokenizer gives pieces ids, which special tokens and
// languages it has and how a source is framed, as its Hugging Face
// tokenizer does: checked against the model and written as the
// description the runtime follows (tokenizer.tfm, tfm/abi/EmbeddedFiles.h).
// TokenizerFiles.h is the compiler's way in.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_TOKENIZERFAMILIES_H
#define TFM_COMPILER_TOKENIZERFAMILIES_H

#include "compiler/TokenizerFiles.h"

#include "llvm/Support/JSON.h"

namespace mlir {
namespace tfm {

/// The tokenizer of `modelDir` by the rules of `model`'s family: its files,
/// with tokenizer.tfm written to `outDir` where the model needs a
/// description (findTokenizerFiles in TokenizerFiles.h).
llvm::Expected<TokenizerFiles>
findFamilyTokenizerFiles(llvm::StringRef modelDir, const TokenizerTarget &model,
                         llvm::StringRef outDir);

/// A tokenizer's JSON file (vocab.json, tokenizer_config.json), or an error
/// naming it.
llvm::Expected<llvm::json::Value> readTokenizerJson(llvm::StringRef path);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_TOKENIZERFAMILIES_H
