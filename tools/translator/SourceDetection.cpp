//===- SourceDetection.cpp - --source-lang auto, line by line ---*- C++ -*-===//

#include "tools/translator/SourceDetection.h"

#include <sstream>
#include <vector>

using namespace tfm_translator;

namespace {

/// A language's ISO 639-1 name where the model gives one (as tfm-serve
/// lists it), else its first other name, else the model's code.
std::string publicCode(const tfm_runtime::RuntimeApi &api,
                       const tfm_languages *languages, int32_t index) {
  std::istringstream names(api.tfm_languages_names(languages, index));
  std::string first, name;
  while (names >> name) {
    if (name.size() == 2)
      return tfm_tools::canonicalLanguage(name);
    if (first.empty())
      first = name;
  }
  return first.empty() ? api.tfm_languages_code(languages, index) : first;
}

std::vector<std::string> publicCodes(const tfm_runtime::RuntimeApi &api,
                                     const tfm_languages *languages) {
  std::vector<std::string> codes;
  for (int32_t i = 0; i < api.tfm_languages_count(languages); ++i)
    codes.push_back(publicCode(api, languages, i));
  return codes;
}

} // namespace

SourceDetection::SourceDetection(const tfm_runtime::RuntimeApi &api,
                                 const tfm_languages *languages,
                                 std::string target)
    : api(api), languages(languages), target(std::move(target)),
      detector(publicCodes(api, languages)) {}

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
