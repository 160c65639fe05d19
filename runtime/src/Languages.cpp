//===- Languages.cpp - A model's languages and their tokens -----*- C++ -*-===//
//
// A language is found by the model's code or another name tfmc gave it (an
// ISO 639-1 code), as Hugging Face's tokenizers take `src_lang="de"`
// (M2M-100) or `"deu_Latn"` (NLLB). Every message names the code asked for
// and a few that would do.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Languages.h"

#include "runtime/src/Status.h"

#include <fmt/ranges.h>

#include <memory>
#include <new>

using namespace tfm_runtime;

namespace {

std::string shown(const LanguageEntry &l) {
  return l.names.empty() ? l.code
                         : fmt::format("{} ({})", l.names.front(), l.code);
}

/// A few languages to suggest for `code`: those whose names start as it
/// does, else the first ones.
std::string suggestions(const TokenizerInfo &info, const std::string &code) {
  constexpr size_t kShown = 6;
  std::vector<std::string> like, first;
  for (const LanguageEntry &l : info.languages) {
    bool similar = !code.empty() && l.code.compare(0, 1, code, 0, 1) == 0;
    for (const std::string &name : l.names)
      similar |= !code.empty() && name.compare(0, 1, code, 0, 1) == 0;
    if (similar && like.size() < kShown)
      like.push_back(shown(l));
    if (first.size() < kShown)
      first.push_back(shown(l));
  }
  const std::vector<std::string> &chosen = like.empty() ? first : like;
  return fmt::format(
      "{}{}", fmt::join(chosen, ", "),
      info.languages.size() > chosen.size()
          ? fmt::format(", ... ({} in all)", info.languages.size())
          : "");
}

/// The pair's language at `index`, or an error for another one.
tfm_status checkPair(const TokenizerInfo &info, int32_t index, int32_t wanted,
                     const char *side) {
  if (index < 0 || index == wanted)
    return nullptr;
  return makeError("'{}' is not this model's {} language: it translates "
                   "{} to {} only",
                   info.languages[index].code, side,
                   info.languages[info.pairSource].code,
                   info.languages[info.pairTarget].code);
}

/// `frame` with the languages' tokens in place of their stand-ins.
tfm_status fill(const TokenizerInfo &info, const std::vector<int32_t> &frame,
                int32_t source, int32_t target, int32_t *out, int32_t &length) {
  length = 0;
  for (int32_t id : frame) {
    int32_t language = id == kSourceLanguageToken   ? source
                       : id == kTargetLanguageToken ? target
                                                    : -2;
    if (language == -1)
      return makeError("{}: a {} language is needed", info.name,
                       id == kSourceLanguageToken ? "source" : "target");
    out[length++] = language >= 0 ? info.languages[language].id : id;
  }
  return nullptr;
}

} // namespace

tfm_status tfm_runtime::openLanguages(const char *model_path,
                                      const tfm_model_config &config,
                                      tfm_languages **out_languages) {
  *out_languages = nullptr;
  try {
    ModelFiles files;
    if (tfm_status s = ModelFiles::open(model_path, files))
      return s;
    auto languages = std::make_unique<tfm_languages_t>();
    if (tfm_status s = readTokenizerInfo(files, config, languages->info))
      return s;
    if (languages->info.languages.empty())
      return nullptr;
    for (const LanguageEntry &l : languages->info.languages)
      languages->names.push_back(fmt::format("{}", fmt::join(l.names, " ")));
    *out_languages = languages.release();
    return nullptr;
  } catch (const std::bad_alloc &) {
    return makeError("out of memory reading the languages of {}", model_path);
  }
}

tfm_status tfm_runtime::findLanguage(const TokenizerInfo &info,
                                     const char *code, int32_t *out_index) {
  std::string wanted = code;
  for (size_t i = 0; i < info.languages.size(); ++i)
    if (info.languages[i].code == wanted) {
      *out_index = int32_t(i);
      return nullptr;
    }
  for (size_t i = 0; i < info.languages.size(); ++i)
    for (const std::string &name : info.languages[i].names)
      if (name == wanted) {
        *out_index = int32_t(i);
        return nullptr;
      }
  return makeError("'{}' is not a language of this model; it has {}", wanted,
                   suggestions(info, wanted));
}

tfm_status tfm_runtime::languageTokens(const TokenizerInfo &info,
                                       int32_t source, int32_t target,
                                       tfm_language_tokens &out) {
  out = tfm_language_tokens{};
  if (info.pairSource >= 0) {
    if (tfm_status s = checkPair(info, source, info.pairSource, "source"))
      return s;
    if (tfm_status s = checkPair(info, target, info.pairTarget, "target"))
      return s;
    source = target = -1; // no tokens
  } else if (source < 0 && !info.defaultSource.empty()) {
    findLanguage(info, info.defaultSource.c_str(), &source); // checked
  }
  // MADLAD-400's source holds the target language when one is given.
  const std::vector<int32_t> &prefix =
      target >= 0 && info.sourcePrefixWithTarget ? *info.sourcePrefixWithTarget
                                                 : info.sourcePrefix;
  if (tfm_status s = fill(info, prefix, source, target, out.source_prefix,
                          out.source_prefix_length))
    return s;
  if (tfm_status s = fill(info, info.sourceSuffix, source, target,
                          out.source_suffix, out.source_suffix_length))
    return s;
  if (target < 0)
    return nullptr;
  return fill(info, info.targetPrefix, source, target, out.target_prefix,
              out.target_prefix_length);
}

tfm_status tfm_runtime::languageTokens(const tfm_languages &languages,
                                       const char *source, const char *target,
                                       tfm_language_tokens &out) {
  int32_t sourceIndex = -1, targetIndex = -1;
  if (source)
    if (tfm_status s = findLanguage(languages.info, source, &sourceIndex))
      return s;
  if (target)
    if (tfm_status s = findLanguage(languages.info, target, &targetIndex))
      return s;
  return languageTokens(languages.info, sourceIndex, targetIndex, out);
}
