//===- SourceDetection.h - --source-lang auto, line by line -----*- C++ -*-===//
//
// A multilingual model frames each source text with its language's token:
// with --source-lang auto each line's language is detected (CLD2, through
// tools/common/LanguageDetector.h) among the model's languages, and the
// line is framed with that language's tokens, as --source-lang with that
// language would frame it. Through the runtime's table (RuntimeApi) and
// without exiting, so that the Python module's source_lang "auto" can use
// it as the translator does.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_SOURCEDETECTION_H
#define TFM_TOOLS_TRANSLATOR_SOURCEDETECTION_H

#include "tfm/RuntimeApi.h"
#include "tools/common/LanguageDetector.h"

#include <map>
#include <string>

namespace tfm_translator {

class SourceDetection {
public:
  /// The model's `languages` (not null, opened through `api`) and the
  /// target language (empty: none; a code the model knows).
  SourceDetection(const tfm_runtime::RuntimeApi &api,
                  const tfm_languages *languages, std::string target);

  /// The tokens that frame `line` from its detected language, or null when
  /// CLD2 found none of the model's languages; `detected` is set to the
  /// language found (empty: none at all).
  const tfm_language_tokens *frameOf(const std::string &line,
                                     std::string &detected);

private:
  const tfm_language_tokens *framesOf(const std::string &language);

  const tfm_runtime::RuntimeApi &api;
  const tfm_languages *languages;
  std::string target;
  tfm_tools::LanguageDetector detector;
  /// Per detected language its tokens, looked up once.
  std::map<std::string, tfm_language_tokens> frames;
};

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_SOURCEDETECTION_H
