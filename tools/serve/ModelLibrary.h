//===- ModelLibrary.h - One compiled model, loaded with dlopen --*- C++ -*-===//
//
// `tfmc compile -o DIR` writes DIR/libtranslator.so, the model's code with
// the runtime; this loads it (dlopen, RTLD_LOCAL, as the Python module
// does) and calls the runtime's C API (tfm/runtime.h) through the addresses
// dlsym finds, so that one server holds several models, each with its own
// code. Batches go through the runtime's client (tfm/Client.h); runtime
// errors are thrown as its tfm_client::Error (a std::runtime_error with
// the runtime's message).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_MODELLIBRARY_H
#define TFM_TOOLS_SERVE_MODELLIBRARY_H

#include "tools/serve/Batcher.h"

#include "tfm/Client.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tfm_serve {

using tfm_runtime::RuntimeApi;

/// A language of a model: its code and the other names that choose it.
struct Language {
  std::string code;
  std::vector<std::string> names;
};

class ModelLibrary {
public:
  /// Loads DIR/libtranslator.so and opens the model, its tokenizer and its
  /// languages; throws with the reason (the runtime's message) on failure.
  ModelLibrary(std::string name, const std::string &dir);
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary &) = delete;
  ModelLibrary &operator=(const ModelLibrary &) = delete;

  const std::string &name() const { return modelName; }
  const tfm_model_config &config() const { return modelConfig; }
  tfm_search_options defaultSearch() const;
  /// Throws the runtime's error if it refuses `search`, before any
  /// sentence is queued.
  void checkSearch(const tfm_search_options &search) const;

  /// The languages in the model's order; none for a model without them.
  const std::vector<Language> &languages() const { return langs; }
  /// A one-pair model's two language indexes; -1 each otherwise.
  int pairSource() const { return pair[0]; }
  int pairTarget() const { return pair[1]; }
  /// The index of the language a code names (its code, an ISO name), or -1.
  int findLanguage(const std::string &code) const;

  /// The tokens that frame a text from `source` to `target` (indexes).
  tfm_language_tokens languageTokens(int source, int target) const;
  /// Source ids of a (non-blank) text, framed, cut to the model's positions
  /// as the translator cuts them.
  std::vector<int32_t> encode(const std::string &text,
                              const tfm_language_tokens &frame) const;
  std::string decode(const std::vector<int32_t> &ids) const;
  /// The target id of one vocabulary piece; throws when there is none.
  int32_t pieceId(const std::string &piece) const;

  /// Sets the calling thread's OpenMP thread count.
  void setThreads(int threads) const;
  /// Translates one batch (the executor's BatchRunner).
  void translate(const tfm_search_options &search,
                 const std::vector<const Sentence *> &sentences,
                 std::vector<Hypotheses> &out) const;
  /// A stream of at most `slots` sentences for `search` (the executor's
  /// StreamOpener); null when the search uses the model's shortlist,
  /// which a batch chooses for its sentences.
  std::unique_ptr<SentenceStream> openStream(const tfm_search_options &search,
                                             size_t slots) const;

private:
  void load(const std::string &dir);
  void close();
  void readLanguages();
  void check(tfm_status status) const { tfm_client::check(api, status); }
  tfm_client::Client client() const { return {api, model}; }

  std::string modelName;
  void *handle = nullptr;
  RuntimeApi api;
  tfm_model *model = nullptr;
  tfm_model_config modelConfig{};
  tfm_tokenizer *tokenizer = nullptr;
  tfm_languages *languageTable = nullptr;
  std::vector<Language> langs;
  int pair[2] = {-1, -1};
};

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_MODELLIBRARY_H
