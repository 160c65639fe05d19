//===- TokenizerInfo.h - tfmc's description of a tokenizer ------*- C++ -*-===//
//
// tokenizer.tfm, which tfmc writes beside the tokenizer's files (the format
// is in tfm/abi/EmbeddedFiles.h): how pieces get ids, the special tokens,
// the language table with ids, how a source is framed, a one-pair model's
// languages. The tokenizer (Tokenizer.cpp) and the language table
// (Languages.cpp) both follow it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_TOKENIZERINFO_H
#define TFM_RUNTIME_TOKENIZERINFO_H

#include "runtime/src/ModelFiles.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tfm_runtime {

/// Stand-ins in a frame for the source and target language's tokens.
constexpr int32_t kSourceLanguageToken = -1, kTargetLanguageToken = -2;
/// The most tokens a frame (source prefix, suffix, target prefix) holds.
constexpr size_t kMaxFrameTokens = 4;

struct LanguageEntry {
  std::string code; // the model's: __de__, deu_Latn, de_DE; or a pair's
  int32_t id;       // -1: a one-pair model's language, with no token
  std::vector<std::string> names; // others that choose it: de, deu
};

struct TokenizerInfo {
  /// False: the model has no tokenizer.tfm (Marian's layout, if any).
  bool described = false;
  std::string name; // its file, for messages
  std::string kind;
  std::string sourceSpm, targetSpm, vocab; // empty: none
  int64_t vocabCount = 0;
  int32_t offset = 0;
  int64_t size = 0;
  std::vector<std::pair<std::string, int32_t>> specials;
  std::vector<LanguageEntry> languages;
  std::string defaultSource;
  std::vector<int32_t> sourcePrefix, sourceSuffix, targetPrefix;
  /// The source prefix when a target language is given, if the model has
  /// one of its own (the record source-prefix-with-target).
  std::optional<std::vector<int32_t>> sourcePrefixWithTarget;
  /// A one-pair model's languages (indexes into `languages`), or -1.
  int32_t pairSource = -1, pairTarget = -1;
};

/// Reads tokenizer.tfm of `files` into `out` (left undescribed when the
/// model has none) and checks it against `config`.
tfm_status readTokenizerInfo(const ModelFiles &files,
                             const tfm_model_config &config,
                             TokenizerInfo &out);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_TOKENIZERINFO_H
