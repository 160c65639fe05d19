//===- Translator.h - tfmc.Translator: a compiled model ---------*- C++ -*-===//
//
// `tfmc compile` writes OUT_DIR/libtranslator.so, the model's code with the
// runtime; a Translator loads it (dlopen) and calls the runtime's C API
// (tfm/runtime.h) through the addresses dlsym finds, so one module serves
// every compiled model and each model keeps its own code. Batches go
// through the runtime's client (tfm/Client.h), which checks nothing itself:
// the runtime judges the search options, and a refusal is a ValueError
// before any sentence is read.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PYTHON_TRANSLATOR_H
#define TFM_PYTHON_TRANSLATOR_H

#include "python/Keywords.h"
#include "python/Sentences.h"
#include "tfm/Client.h"

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace tfm_python {

/// One sentence's hypotheses, best first: text for text input, token ids
/// for ids input; their scores when asked for.
struct TranslationResult {
  std::vector<std::variant<std::string, std::vector<int32_t>>> hypotheses;
  std::vector<float> scores;
  std::vector<std::vector<float>> tokenScores;
};

/// One given translation's score (score_batch): sum(log p) /
/// length^length_penalty, EOS counted, and each token's log p, EOS's last.
struct ScoringResult {
  float score = 0;
  std::vector<float> tokenScores;
};

class Translator {
public:
  Translator(pybind11::handle modelDirArg, pybind11::handle threadsArg);
  Translator(const Translator &) = delete;
  Translator &operator=(const Translator &) = delete;

  pybind11::object readVmap(pybind11::handle pathValue);
  bool hasVmap() const { return api.tfm_model_has_vmap(model.get()) != 0; }

  /// Translates `source`, an iterable of strings or sequences of token ids,
  /// in batches of max_batch_size; the search options are checked by the
  /// runtime first, so that a bad one fails on any input. `options` are
  /// translate_batch's keywords (Module.cpp).
  std::vector<TranslationResult> translateBatch(pybind11::handle source,
                                                const KeywordArgs &options);

  /// Scores targets[i] as the translation of source[i] (score_batch), in
  /// batches of max_batch_size, as the translator's --score does.
  std::vector<ScoringResult> scoreBatch(pybind11::handle source,
                                        pybind11::handle target,
                                        const KeywordArgs &options);

private:
  /// format="html": each str of `source` one HTML document, translated
  /// with its markup kept (Documents.cpp).
  std::vector<TranslationResult>
  translateDocuments(pybind11::handle source, const KeywordArgs &options,
                     const tfm_search_options &opts, size_t maxBatchSize);
  /// A document's sentences, as the HTML library hands them over: framed
  /// by `frame`, the target language's tokens forced first (`prefix`),
  /// sentence k seeded by `index` + k; `index` moves past them.
  std::vector<std::string>
  translateSentences(SentenceReader &reader,
                     const std::vector<std::string> &sentences,
                     const std::string &where, const tfm_language_tokens &frame,
                     const std::vector<int32_t> &prefix, int64_t &index,
                     const tfm_search_options &opts, size_t maxBatchSize) const;
  /// A call's source sentences, read as the translator reads them.
  struct Sources {
    tfm_language_tokens langTokens{};
    std::vector<std::vector<int32_t>> ids; ///< none for a blank sentence
    std::vector<bool> text;                ///< whether sentence i was a str
    std::vector<size_t> pending;           ///< the sentences not blank
  };
  SentenceReader sentenceReader() const {
    return {api, config, tokenizer.get(), languages.get()};
  }
  /// source_lang's and target_lang's tokens, then `source`'s sentences.
  Sources readSources(SentenceReader &reader, pybind11::handle source,
                      const KeywordArgs &options) const;
  /// Puts sentence i (an index in `source`) in a batch.
  using AddSentence = std::function<void(tfm_client::BatchBuilder &, size_t)>;
  /// Takes the results of sentence i, the batch's k-th.
  using KeepResults =
      std::function<void(const tfm_client::Results &, int32_t k, size_t i)>;
  /// Translates (or scores) the sentences at `pending` in batches of at
  /// most `maxBatchSize`.
  void runBatches(bool scoring, const tfm_search_options &opts,
                  const std::vector<size_t> &pending, size_t maxBatchSize,
                  const AddSentence &add, const KeepResults &keep) const;
  tfm_search_options searchOptions(const KeywordArgs &options) const;
  static void setSampling(tfm_search_options &opts, const KeywordArgs &options);
  int32_t beamSize(pybind11::handle value) const;
  /// Translates (or scores) the batch of the sentences at `sentences`
  /// (their indexes in `source`) with the GIL released; an error names
  /// them by those indexes.
  tfm_client::Results run(bool scoring, const tfm_search_options &opts,
                          const tfm_client::BatchBuilder &batch,
                          const size_t *sentences) const;
  void keepTranslations(std::vector<tfm_client::Hypothesis> hypotheses,
                        bool text, bool returnScores, bool returnTokenScores,
                        TranslationResult &result) const;
  std::string decode(const std::vector<int32_t> &tokens) const;
  tfm_client::Client client() const { return {api, model.get()}; }

  /// A handle of the runtime, closed by its owner.
  template <typename T> using Owned = std::unique_ptr<T, void (*)(T *)>;

  /// What `open` opens (it takes the handle's out parameter), closed with
  /// `close` when the Translator goes: also when a later step of its
  /// constructor throws.
  template <typename T, typename Open>
  Owned<T> owned(void (*close)(T *), Open open) const {
    T *handle = nullptr;
    tfm_client::check(api, open(&handle));
    return {handle, close};
  }

  // The library stays loaded (no dlclose): OpenMP's threads may still run
  // its code. The handles close in the reverse order of their opening.
  void *handle = nullptr;
  tfm_runtime::RuntimeApi api;
  std::string weights;
  Owned<tfm_model> model{nullptr, nullptr};
  tfm_model_config config{};
  Owned<tfm_tokenizer> tokenizer{nullptr, nullptr};
  Owned<tfm_languages> languages{nullptr, nullptr};
};

} // namespace tfm_python

#endif // TFM_PYTHON_TRANSLATOR_H
