//===- Catalog.cpp - Which model serves which language pair -----*- C++ -*-===//

#include "tools/serve/Catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

using namespace tfm_serve;

std::string tfm_serve::languageName(const std::string &code) {
  static const std::map<std::string, std::string> names = {
      {"ar", "Arabic"},     {"bg", "Bulgarian"}, {"ca", "Catalan"},
      {"cs", "Czech"},      {"da", "Danish"},    {"de", "German"},
      {"el", "Greek"},      {"en", "English"},   {"es", "Spanish"},
      {"et", "Estonian"},   {"fa", "Persian"},   {"fi", "Finnish"},
      {"fr", "French"},     {"ga", "Irish"},     {"he", "Hebrew"},
      {"hi", "Hindi"},      {"hu", "Hungarian"}, {"id", "Indonesian"},
      {"it", "Italian"},    {"ja", "Japanese"},  {"ko", "Korean"},
      {"lt", "Lithuanian"}, {"lv", "Latvian"},   {"nl", "Dutch"},
      {"no", "Norwegian"},  {"pl", "Polish"},    {"pt", "Portuguese"},
      {"ro", "Romanian"},   {"ru", "Russian"},   {"sk", "Slovak"},
      {"sl", "Slovenian"},  {"sv", "Swedish"},   {"th", "Thai"},
      {"tr", "Turkish"},    {"uk", "Ukrainian"}, {"vi", "Vietnamese"},
      {"zh", "Chinese"}};
  auto it = names.find(code);
  return it == names.end() ? code : it->second;
}

Catalog::Catalog(const std::vector<std::unique_ptr<ModelLibrary>> &models)
    : models(models) {
  for (size_t i = 0; i < models.size(); ++i)
    addModel(i, *models[i]);
  buildEntries();
}

/// A language's ISO 639-1 name where it has one, else its first other
/// name, else the model's code.
std::string Catalog::publicCode(const ModelLibrary &model, int index) const {
  const Language &language = model.languages()[size_t(index)];
  for (const std::string &name : language.names)
    if (name.size() == 2)
      return name;
  return language.names.empty() ? language.code : language.names.front();
}

void Catalog::addModel(size_t index, const ModelLibrary &model) {
  int count = int(model.languages().size());
  if (count == 0)
    throw std::runtime_error(fmt::format(
        "model {} has no languages, so no pair to serve: compile it with "
        "tfmc compile --source-lang L --target-lang L",
        model.name()));
  auto add = [&](int source, int target) {
    pairs.push_back({index, source, target, publicCode(model, source),
                     publicCode(model, target)});
  };
  if (model.pairSource() >= 0) {
    add(model.pairSource(), model.pairTarget());
    return;
  }
  for (int s = 0; s < count; ++s)
    for (int t = 0; t < count; ++t)
      if (s != t)
        add(s, t);
}

void Catalog::buildEntries() {
  std::map<std::string, std::set<std::string>> targets;
  for (const Pair &pair : pairs) {
    targets[pair.sourceCode].insert(pair.targetCode);
    targets[pair.targetCode]; // listed even when only a target
  }
  for (const auto &[code, reached] : targets)
    entries.push_back(
        {code, languageName(code), {reached.begin(), reached.end()}});
}

bool Catalog::knows(const std::string &code) const {
  for (const std::unique_ptr<ModelLibrary> &model : models)
    if (model->findLanguage(code) >= 0)
      return true;
  return false;
}

Parsed<Route> Catalog::route(const std::string &source,
                             const std::string &target) const {
  if (!knows(target))
    return HttpError{400, fmt::format("{} is not supported", target)};
  if (source != "auto" && !knows(source))
    return HttpError{400, fmt::format("{} is not supported", source)};
  std::vector<const Pair *> found;
  std::set<std::string> sources;
  for (const Pair &pair : pairs) {
    const ModelLibrary &model = *models[pair.model];
    if (model.findLanguage(target) != pair.target)
      continue;
    if (source != "auto" && model.findLanguage(source) != pair.source)
      continue;
    found.push_back(&pair);
    sources.insert(pair.sourceCode);
  }
  if (found.empty())
    return HttpError{400, fmt::format("{} is not available as a target "
                                      "language from {}",
                                      target, source)};
  if (sources.size() > 1)
    return HttpError{400, fmt::format("language detection is not supported: "
                                      "give the source language (one of {})",
                                      fmt::join(sources, ", "))};
  const Pair &pair = *found.front();
  return Route{pair.model, pair.source, pair.target, pair.sourceCode};
}
