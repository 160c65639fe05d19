//===- SourceDetection.cpp - --source-lang auto, line by line ---*- C++ -*-===//

#include "tools/translator/SourceDetection.h"

#include <sstream>
#include <vector>

using namespace tfm_translator;

namespace {

/// Every name of every language of the model ("nb no nob" of nob_Latn):
/// CLD2's code for a language may be any of them, and the model finds
/// the language by each.
std::vector<std::string> allNames(const tfm_runtime::RuntimeApi &api,
                                  const tfm_languages *languages) {
  std::vector<std::string> codes;
  for (int32_t i = 0; i < api.tfm_languages_count(languages); ++i) {
    codes.push_back(api.tfm_languages_code(languages, i));
    std::istringstream names(api.tfm_languages_names(languages, i));
    for (std::string name; names >> name;)
      codes.push_back(name);
  }
  return codes;
}

} // namespace

SourceDetection::SourceDetection(const tfm_runtime::RuntimeApi &api,
                                 const tfm_languages *languages,
                                 std::string target)
    : api(api), languages(languages), target(std::move(target)),
      detector(allNames(api, languages)) {}

/// Null when the model refuses the code (one CLD2 spells otherwise than
/// the model, say): the line is then framed as in no language.
const tfm_language_tokens *
SourceDetection::framesOf(const std::string &language) {
  auto it = frames.find(language);
  if (it != frames.end())
    return &it->second;
  tfm_language_tokens tokens{};
  if (tfm_status status = api.tfm_languages_tokens(
          languages, language.c_str(),
          target.empty() ? nullptr : target.c_str(), &tokens)) {
    api.tfm_status_free(status);
    return nullptr;
  }
  return &frames.emplace(language, tokens).first->second;
}

const tfm_language_tokens *SourceDetection::frameOf(const std::string &line,
                                                    std::string &detected) {
  std::vector<tfm_tools::DetectedLanguage> found = detector.detect(line);
  detected = found.empty() ? "" : found.front().language;
  if (found.empty() || !detector.isSource(detected))
    return nullptr;
  return framesOf(detected);
}
