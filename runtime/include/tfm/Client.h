//===- Client.h - A C++ client of the runtime's C API -----------*- C++ -*-===//
//
// What the translator, the Python module and tfm-serve all do with the C
// API of tfm/runtime.h, written once over a RuntimeApi table: a batch built
// from the caller's sentences, results freed by their owner, and the
// runtime's errors thrown with the sentence they concern as data. The
// runtime checks every rule of a request (n-best and beam size, sampling's
// options, the sentences' tokens); the client reports its word, and each
// program gives it its own form.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CLIENT_H
#define TFM_CLIENT_H

#include "tfm/RuntimeApi.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tfm_client {

using tfm_runtime::RuntimeApi;

/// An error of the runtime: its message, and the sentence of the batch
/// (from 0) it concerns, or -1 for the whole request.
class Error : public std::runtime_error {
public:
  Error(const std::string &message, int32_t sentence)
      : std::runtime_error(message), index(sentence) {}

  int32_t sentence() const { return index; }

  /// The message after the "sentence N" (from 1) that begins the message
  /// of a sentence's error, for a caller that names the sentence its own
  /// way: " is empty", ": token id 9 is outside ..."; the whole message
  /// for an error of the request.
  std::string detail() const {
    std::string named = "sentence " + std::to_string(index + 1);
    std::string message = what();
    if (index < 0 || message.compare(0, named.size(), named) != 0)
      return message;
    return message.substr(named.size());
  }

private:
  int32_t index;
};

/// The error of `status` (not null), which is freed.
inline Error takeError(const RuntimeApi &api, tfm_status status) {
  Error error(api.tfm_status_message(status), api.tfm_status_sentence(status));
  api.tfm_status_free(status);
  return error;
}

/// Throws the error of `status` as an Error; nothing when it is null.
inline void check(const RuntimeApi &api, tfm_status status) {
  if (status)
    throw takeError(api, status);
}

/// One hypothesis of a sentence: its tokens (without EOS), its normalized
/// score, and each token's log-probability (then EOS's, if it ended so).
struct Hypothesis {
  std::vector<int32_t> tokens;
  float score = 0;
  std::vector<float> tokenScores;
};

/// A batch's results, freed when their owner lets them go.
class Results {
public:
  Results(const RuntimeApi &api, tfm_results *results)
      : api(&api), results(results) {}
  Results(Results &&other) noexcept
      : api(other.api), results(std::exchange(other.results, nullptr)) {}
  Results &operator=(Results &&other) noexcept {
    std::swap(api, other.api);
    std::swap(results, other.results);
    return *this;
  }
  Results(const Results &) = delete;
  Results &operator=(const Results &) = delete;
  ~Results() {
    if (results)
      api->tfm_results_free(results);
  }

  /// Sentence `sentence`'s hypotheses, best first, at most `most`.
  std::vector<Hypothesis>
  hypotheses(int32_t sentence,
             int32_t most = std::numeric_limits<int32_t>::max()) const {
    std::vector<Hypothesis> out;
    int32_t count = api->tfm_results_count(results, sentence);
    for (int32_t rank = 0; rank < count && rank < most; ++rank)
      out.push_back(hypothesis(sentence, rank));
    return out;
  }

  Hypothesis hypothesis(int32_t sentence, int32_t rank) const {
    int32_t length = 0, scored = 0;
    const int32_t *tokens =
        api->tfm_results_tokens(results, sentence, rank, &length);
    const float *scores =
        api->tfm_results_token_scores(results, sentence, rank, &scored);
    return {{tokens, tokens + length},
            api->tfm_results_score(results, sentence, rank),
            {scores, scores + scored}};
  }

  /// The first decoding step's logits of `sentence`: `vocabulary` floats
  /// (the model's target vocabulary size).
  std::vector<float> firstLogits(int32_t sentence, int64_t vocabulary) const {
    const float *logits = api->tfm_results_first_logits(results, sentence);
    return {logits, logits + vocabulary};
  }

  tfm_translate_timing timing() const {
    tfm_translate_timing timing;
    api->tfm_results_timing(results, &timing);
    return timing;
  }

  /// How many sentences they hold; a stream's step: each one's number.
  int32_t sentences() const { return api->tfm_results_sentences(results); }
  int64_t number(int32_t sentence) const {
    return api->tfm_results_sentence_number(results, sentence);
  }

private:
  const RuntimeApi *api;
  tfm_results *results;
};

/// A tfm_batch over sentences the caller keeps: the vectors given to add
/// must outlive the batch that view() returns.
class BatchBuilder {
public:
  /// A sentence to translate: its source ids (ending in EOS), the target
  /// tokens forced first (may be empty), and its index in the input,
  /// which seeds its sampling so that it does not depend on the batch.
  void add(const std::vector<int32_t> &source,
           const std::vector<int32_t> &prefix, int64_t index) {
    sources.push_back(source.data());
    sourceLengths.push_back(int32_t(source.size()));
    prefixes.push_back(prefix.data());
    prefixLengths.push_back(int32_t(prefix.size()));
    indexes.push_back(index);
  }

  /// A sentence to score: add's, and the target whose tokens are scored.
  void addScored(const std::vector<int32_t> &source,
                 const std::vector<int32_t> &prefix,
                 const std::vector<int32_t> &target, int64_t index) {
    add(source, prefix, index);
    targets.push_back(target.data());
    targetLengths.push_back(int32_t(target.size()));
  }

  int32_t size() const { return int32_t(sources.size()); }

  /// The batch for the C API; with targets only if every sentence has one.
  tfm_batch view() const {
    bool scored = !targets.empty() && targets.size() == sources.size();
    return {size(),
            sources.data(),
            sourceLengths.data(),
            prefixes.data(),
            prefixLengths.data(),
            scored ? targets.data() : nullptr,
            scored ? targetLengths.data() : nullptr,
            indexes.data()};
  }

private:
  std::vector<const int32_t *> sources, prefixes, targets;
  std::vector<int32_t> sourceLengths, prefixLengths, targetLengths;
  std::vector<int64_t> indexes;
};

/// One open model, translated and scored through `api`.
class Client {
public:
  Client(const RuntimeApi &api, tfm_model *model) : api(api), model(model) {}

  /// Translates the batch; throws the runtime's Error.
  Results translate(const tfm_search_options &options,
                    const BatchBuilder &batch) const {
    return run(api.tfm_translate_batch, options, batch);
  }

  /// Scores the batch's targets (BatchBuilder::addScored); throws the
  /// runtime's Error.
  Results score(const tfm_search_options &options,
                const BatchBuilder &batch) const {
    return run(api.tfm_score_batch, options, batch);
  }

  /// Throws the runtime's Error about `options` if it refuses them, so
  /// that a program can say so before it reads any input.
  void checkOptions(const tfm_search_options &options) const {
    check(api, api.tfm_search_options_check(model, &options));
  }

private:
  /// tfm_translate_batch or tfm_score_batch (the same signature) on the
  /// batch, its results owned.
  Results run(decltype(&::tfm_translate_batch) entry,
              const tfm_search_options &options,
              const BatchBuilder &batch) const {
    tfm_batch request = batch.view();
    tfm_results *results = nullptr;
    check(api, entry(model, &options, &request, &results));
    return Results(api, results);
  }

  const RuntimeApi &api;
  tfm_model *model;
};

/// A stream of one model (tfm_stream): sentences join its batch while it
/// runs, and leave it as soon as they are done.
class Stream {
public:
  /// Throws the runtime's Error if it refuses the options.
  Stream(const RuntimeApi &api, tfm_model *model,
         const tfm_search_options &options, int32_t maxSentences)
      : api(&api) {
    check(api, api.tfm_stream_open(model, &options, maxSentences, &stream));
  }
  Stream(Stream &&other) noexcept
      : api(other.api), stream(std::exchange(other.stream, nullptr)) {}
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  Stream &operator=(Stream &&) = delete;
  ~Stream() {
    if (stream)
      api->tfm_stream_close(stream);
  }

  /// The batch's sentences join at the next step, numbered on from those
  /// added before; throws the runtime's Error (and adds none).
  void add(const BatchBuilder &batch) {
    tfm_batch request = batch.view();
    check(*api, api->tfm_stream_add(stream, &request));
  }
  /// One step: the results of the sentences it finished (Results::number
  /// says which).
  Results step() {
    tfm_results *results = nullptr;
    check(*api, api->tfm_stream_step(stream, &results));
    return Results(*api, results);
  }
  /// The sentences added and not yet handed back.
  int32_t sentences() const { return api->tfm_stream_sentences(stream); }

private:
  const RuntimeApi *api;
  tfm_stream *stream = nullptr;
};

/// Cuts a sentence longer than the model's positions as the translator
/// does: its start and its end, EOS staying last. Returns whether it cut.
inline bool cutToPositions(std::vector<int32_t> &ids,
                           const tfm_model_config &config) {
  if (int64_t(ids.size()) <= config.max_positions)
    return false;
  bool endsInEos = ids.back() == config.eos_token_id;
  ids.resize(size_t(config.max_positions));
  if (endsInEos)
    ids.back() = int32_t(config.eos_token_id);
  return true;
}

} // namespace tfm_client

#endif // TFM_CLIENT_H
