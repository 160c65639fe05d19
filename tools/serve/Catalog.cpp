//===- Catalog.cpp - Which model serves which language pair -----*- C++ -*-===//

#include "tools/serve/Catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
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

std::vector<std::string> Catalog::sourceLanguages() const {
  std::vector<std::string> sources;
  for (const LanguageEntry &entry : entries)
    if (!entry.targets.empty())
      sources.push_back(entry.code);
  return sources;
}

std::vector<std::string> Catalog::sourceNames() const {
  std::set<std::string> names;
  for (const Pair &pair : pairs) {
    const Language &language =
        models[pair.model]->languages()[size_t(pair.source)];
    names.insert(language.code);
    names.insert(language.names.begin(), language.names.end());
  }
  return {names.begin(), names.end()};
}

std::string Catalog::publicCodeOf(const std::string &code) const {
  for (const std::unique_ptr<ModelLibrary> &model : models)
    if (int index = model->findLanguage(code); index >= 0)
      return publicCode(*model, index);
  return code;
}

bool Catalog::knows(const std::string &code) const {
  for (const std::unique_ptr<ModelLibrary> &model : models)
    if (model->findLanguage(code) >= 0)
      return true;
  return false;
}

Parsed<size_t> Catalog::modelNamed(const std::string &name) const {
  std::vector<std::string> names;
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i]->name() == name)
      return i;
    names.push_back(models[i]->name());
  }
  return HttpError{400,
                   fmt::format("Invalid request: model '{}' is not "
                               "served here (the models: {})",
                               name.substr(0, 100), fmt::join(names, ", "))};
}

Parsed<Route> Catalog::route(const std::string &source,
                             const std::string &target,
                             const std::string &modelName) const {
  std::optional<size_t> only;
  if (!modelName.empty()) {
    Parsed<size_t> named = modelNamed(modelName);
    if (const HttpError *error = errorOf(named))
      return *error;
    only = std::get<size_t>(named);
  }
  if (!knows(target))
    return HttpError{400, fmt::format("{} is not supported", target)};
  if (source != "auto" && !knows(source))
    return HttpError{400, fmt::format("{} is not supported", source)};
  std::vector<const Pair *> found;
  std::set<std::string> sources;
  for (const Pair &pair : pairs) {
    if (only && pair.model != *only)
      continue;
    const ModelLibrary &model = *models[pair.model];
    if (model.findLanguage(target) != pair.target)
      continue;
    if (source != "auto" && model.findLanguage(source) != pair.source)
      continue;
    found.push_back(&pair);
    sources.insert(pair.sourceCode);
  }
  if (found.empty() && only)
    return HttpError{400, fmt::format("Invalid request: model {} does not "
                                      "serve {} -> {}",
                                      modelName, source, target)};
  if (found.empty())
    return HttpError{400, fmt::format("{} is not available as a target "
                                      "language from {}",
                                      target, source)};
  if (sources.size() > 1)
    return HttpError{400, fmt::format("{} is translated from several "
                                      "languages: give the source language "
                                      "(one of {})",
                                      target, fmt::join(sources, ", "))};
  const Pair &pair = *found.front();
  return Route{pair.model, pair.source, pair.target, pair.sourceCode};
}

std::vector<ModelPairs> Catalog::pairsByModel() const {
  std::vector<ModelPairs> out(models.size());
  // The model that serves each pair: the first given with it, as route()
  // picks it.
  std::map<std::string, size_t> servedBy;
  for (const Pair &pair : pairs) {
    std::string name = pair.sourceCode + " -> " + pair.targetCode;
    auto [it, first] = servedBy.try_emplace(name, pair.model);
    if (first)
      out[pair.model].served.push_back(name);
    else if (it->second != pair.model)
      out[pair.model].shadowed.emplace_back(name, it->second);
  }
  return out;
}
