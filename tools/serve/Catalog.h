//===- Catalog.h - Which model serves which language pair -------*- C++ -*-===//
//
// The language pairs of the loaded models, as the runtime describes them: a
// one-pair model (Marian, BART compiled with tfmc --source-lang/--target-
// lang) serves its pair, a multilingual model (M2M-100, NLLB, mBART-50)
// every pair of its languages. Languages are shown by their ISO 639-1 name
// where the model has one ("de" for "__de__" or "deu_Latn") and found by
// any of their names, as the translator's --source-lang finds them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_CATALOG_H
#define TFM_TOOLS_SERVE_CATALOG_H

#include "tools/serve/ModelLibrary.h"
#include "tools/serve/Request.h"

#include <memory>
#include <string>
#include <vector>

namespace tfm_serve {

/// A pair served: the model and the two languages' indexes in it.
struct Route {
  size_t model = 0;
  int source = -1, target = -1;
  /// The source language's public code (what `auto` picked).
  std::string sourceCode;
};

/// An entry of GET /languages.
struct LanguageEntry {
  std::string code, name;
  std::vector<std::string> targets;
};

/// The pairs of one model, as "en -> de": those it serves, and those a
/// model given before it serves first (a request without a model never
/// reaches it for them), each with the index of that model.
struct ModelPairs {
  std::vector<std::string> served;
  std::vector<std::pair<std::string, size_t>> shadowed;
};

class Catalog {
public:
  /// Throws when a model has no languages (it could serve no pair).
  explicit Catalog(const std::vector<std::unique_ptr<ModelLibrary>> &models);

  /// The model and languages for `source` ("auto": the only source
  /// language that reaches `target`) to `target`, or a 400 naming what is
  /// not served. The first model given that serves the pair, or the one
  /// named `model` (a 400 when there is none, or it does not serve it).
  Parsed<Route> route(const std::string &source, const std::string &target,
                      const std::string &model = "") const;
  const std::vector<LanguageEntry> &languages() const { return entries; }
  /// The languages some served pair translates from, as languages() lists
  /// them: what source "auto" may detect.
  std::vector<std::string> sourceLanguages() const;
  /// Every name of those languages ("nb", "no", "nob" of nob_Latn): a
  /// detector's answer may be any of them.
  std::vector<std::string> sourceNames() const;
  /// The code languages() lists for the language `code` names (its first
  /// model's), or `code` when no model knows it: "no" -> "nb".
  std::string publicCodeOf(const std::string &code) const;
  /// Per model (in their order) the pairs it serves and those it does not.
  std::vector<ModelPairs> pairsByModel() const;
  /// Whether some model has the language `code` names.
  bool knows(const std::string &code) const;

private:
  struct Pair {
    size_t model;
    int source, target;
    std::string sourceCode, targetCode;
  };
  void addModel(size_t index, const ModelLibrary &model);
  void buildEntries();
  std::string publicCode(const ModelLibrary &model, int index) const;
  Parsed<size_t> modelNamed(const std::string &name) const;

  const std::vector<std::unique_ptr<ModelLibrary>> &models;
  std::vector<Pair> pairs;
  std::vector<LanguageEntry> entries;
};

/// The English name of an ISO 639-1 code, or the code itself.
std::string languageName(const std::string &code);

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_CATALOG_H
