//===- Languages.h - A model's languages and their tokens -------*- C++ -*-===//
//
// tfm_languages and its operations, for the C API (tfm/runtime.h says what
// each does): the language table of tfmc's tokenizer.tfm, shared by the
// translator, the Python module and any server.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_LANGUAGES_H
#define TFM_RUNTIME_LANGUAGES_H

#include "runtime/src/TokenizerInfo.h"

struct tfm_languages_t {
  tfm_runtime::TokenizerInfo info;
  std::vector<std::string> names; // each language's, space-separated
};

namespace tfm_runtime {

tfm_status openLanguages(const char *model_path, const tfm_model_config &config,
                         tfm_languages **out_languages);
tfm_status findLanguage(const TokenizerInfo &info, const char *code,
                        int32_t *out_index);
/// The frames of `info` with the languages' tokens in place of their
/// stand-ins; `source` and `target` are indexes, or -1 (not given).
tfm_status languageTokens(const TokenizerInfo &info, int32_t source,
                          int32_t target, tfm_language_tokens &out);
tfm_status languageTokens(const tfm_languages &languages, const char *source,
                          const char *target, tfm_language_tokens &out);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_LANGUAGES_H
