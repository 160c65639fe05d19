//===- Request.h - A request: its batch, options and checks -----*- C++ -*-===//
//
// What a caller asks of tfm_translate and tfm_score_batch: a batch of
// sentences and the search options, the defaults those start from, and
// the checks that refuse a request before any search begins. The checks
// are the one place the request's rules are checked (n-best <= beam size,
// sampling's beam of 1, the lengths, the tokens' ranges): the search
// relies on them. The options' rules are one function, which
// tfm_search_options_check runs alone.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_REQUEST_H
#define TFM_RUNTIME_REQUEST_H

#include "runtime/src/Status.h"
#include "tfm/runtime.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace tfm_runtime {

/// A batch to translate: `count` sentences, and optionally a target
/// prefix for each (tfm_translate_prefixed); to score, the targets
/// (tfm_score_batch).
struct Batch {
  const int32_t *const *sources;
  const int32_t *lengths;
  const int32_t *const *prefixes; // may be null
  const int32_t *prefixLengths;   // null when prefixes is
  int32_t count;
  const int32_t *const *targets = nullptr; // scoring only
  const int32_t *targetLengths = nullptr;
  const int64_t *indexes = nullptr; // each sentence's input index (seeds)
  /// Sentence i's index in the input: its sampling streams' seed.
  int64_t index(int32_t i) const { return indexes ? indexes[i] : i; }
  /// Sentence i's prefix, empty when it has none.
  std::vector<int32_t> prefix(int32_t i) const {
    if (!prefixes || !prefixes[i] || prefixLengths[i] <= 0)
      return {};
    return {prefixes[i], prefixes[i] + prefixLengths[i]};
  }
  /// Sentence i's target (scoring), without EOS.
  std::vector<int32_t> target(int32_t i) const {
    return {targets[i], targets[i] + targetLengths[i]};
  }
};

/// tfm_search_options_default's options, in the struct's order (C++17 has
/// no designated initializers; RequestTest checks each by its name).
inline tfm_search_options defaultSearchOptions() {
  return {
      /*beam_size=*/1,
      /*n_best=*/1,
      /*max_length=*/256,
      // Marian's default factor: a sentence that runs away (repeats itself)
      // stops after about three times its source's tokens.
      /*max_length_ratio=*/3.0f,
      /*min_length=*/0,
      /*length_penalty=*/1.0f,
      /*suppress_eos=*/0,
      /*repetition_penalty=*/0.0f, // the model's
      /*no_repeat_ngram_size=*/-1, // the model's
      /*sampling=*/0,
      /*sampling_topk=*/0,
      /*sampling_topp=*/1.0f,
      /*sampling_temperature=*/1.0f,
      /*seed=*/0,
      /*use_vmap=*/1,
      /*fused_search=*/1,
  };
}

/// The options with the repetition guards they leave to the model (0 and
/// -1) taken from its generation config.
inline tfm_search_options withModelDefaults(const tfm_model_config &cfg,
                                            tfm_search_options options) {
  if (options.repetition_penalty == 0.0f)
    options.repetition_penalty = float(cfg.repetition_penalty);
  if (options.no_repeat_ngram_size == -1)
    options.no_repeat_ngram_size = int32_t(cfg.no_repeat_ngram_size);
  return options;
}

/// Scoring's options: each step forces the target's next token, so only
/// the caller's length penalty applies, over the whole vocabulary and the
/// model's own log p.
inline tfm_search_options scoringOptions(const tfm_search_options &options) {
  tfm_search_options forcing = defaultSearchOptions();
  forcing.length_penalty = options.length_penalty;
  forcing.use_vmap = 0;
  forcing.repetition_penalty = 1.0f; // the model's own log p
  forcing.no_repeat_ngram_size = 0;
  return forcing;
}

namespace detail {

inline tfm_status samplingOptionsError(const tfm_search_options &options) {
  // As CTranslate2, sampling draws from one hypothesis per sample: a beam
  // of samples would need a rule for which draws survive.
  if (options.beam_size != 1)
    return makeError("sampling needs beam size 1 (n-best N draws N samples)");
  if (options.n_best < 1)
    return makeError("need n-best >= 1");
  if (options.sampling_topk < 0)
    return makeError("the sampling top-k must be at least 0 (0: no limit)");
  if (!(options.sampling_topp > 0 && options.sampling_topp <= 1))
    return makeError("the sampling top-p must be in (0, 1]");
  if (!(options.sampling_temperature > 0) ||
      !std::isfinite(options.sampling_temperature))
    return makeError("the sampling temperature must be a finite number > 0");
  return nullptr;
}

inline tfm_status lengthOptionsError(const tfm_search_options &options) {
  if (options.max_length < 1)
    return makeError("max length must be at least 1");
  if (options.min_length < 0)
    return makeError("min length must be at least 0");
  if (!(options.max_length_ratio >= 0) ||
      !std::isfinite(options.max_length_ratio))
    return makeError("the max length ratio must be a finite number >= 0");
  return nullptr;
}

} // namespace detail

/// Why the search options are refused, or null: every rule of the options
/// alone, whatever the batch. They must have the model's defaults already
/// (withModelDefaults): 0 and -1 are no repetition guards.
inline tfm_status searchOptionsError(const tfm_search_options &options) {
  if (options.sampling) {
    if (tfm_status s = detail::samplingOptionsError(options))
      return s;
  } else if (options.beam_size < 1 || options.n_best < 1 ||
             options.n_best > options.beam_size) {
    return makeError("need beam size >= 1 and 1 <= n-best <= beam size");
  }
  if (tfm_status s = detail::lengthOptionsError(options))
    return s;
  if (!std::isfinite(options.length_penalty))
    return makeError("the length penalty must be a finite number");
  if (!(options.repetition_penalty > 0) ||
      !std::isfinite(options.repetition_penalty))
    return makeError("the repetition penalty must be a finite number > 0");
  if (options.no_repeat_ngram_size < 0)
    return makeError("the no-repeat n-gram size must be at least 0");
  return nullptr;
}

/// Why a request is refused, or null. An error about one sentence names
/// it ("sentence N", from 1) and sets tfm_status_sentence (from 0).
class RequestCheck {
public:
  RequestCheck(const tfm_model_config &cfg, const tfm_search_options &options,
               const Batch &batch)
      : cfg(cfg), options(options), batch(batch) {}

  /// tfm_translate's: a batch without targets, searched with `options`.
  tfm_status translation() const;
  /// tfm_score_batch's: a batch with its targets, `options` scoring's.
  tfm_status scoring() const;

private:
  /// The options (searchOptionsError), then each sentence.
  tfm_status request() const;
  tfm_status sentence(int32_t i) const;
  tfm_status source(int32_t i) const;
  tfm_status prefix(int32_t i) const;
  tfm_status target(int32_t i) const;
  /// The `count` target tokens of sentence `i` that `what` names (a
  /// prefix, a target to score): each in the target vocabulary, and
  /// neither EOS nor padding (`why` follows that message).
  tfm_status targetTokens(const int32_t *tokens, int32_t count, int32_t i,
                          const char *what, const char *why) const;

  const tfm_model_config &cfg;
  const tfm_search_options &options;
  const Batch &batch;
};

inline tfm_status RequestCheck::translation() const {
  if (batch.targets)
    return makeError("tfm_translate takes no targets (tfm_score_batch does)");
  return request();
}

inline tfm_status RequestCheck::scoring() const {
  if (!batch.targets || !batch.targetLengths)
    return makeError("no targets to score");
  return request();
}

inline tfm_status RequestCheck::request() const {
  if (batch.count <= 0)
    return makeError("no sentences to translate");
  if (tfm_status s = searchOptionsError(options))
    return s;
  for (int32_t i = 0; i < batch.count; ++i)
    if (tfm_status s = sentence(i))
      return s;
  return nullptr;
}

inline tfm_status RequestCheck::sentence(int32_t i) const {
  if (tfm_status s = source(i))
    return s;
  if (tfm_status s = prefix(i))
    return s;
  if (batch.targets)
    return target(i);
  return nullptr;
}

inline tfm_status RequestCheck::source(int32_t i) const {
  int32_t length = batch.lengths[i];
  if (length < 1)
    return makeSentenceError(i, " is empty");
  if (length > cfg.max_positions)
    return makeSentenceError(i, " has {} tokens; the model takes at most {}",
                             length, cfg.max_positions);
  const int32_t *tokens = batch.sources[i];
  for (int32_t t = 0; t < length; ++t)
    if (tokens[t] < 0 || tokens[t] >= cfg.source_vocab_size)
      return makeSentenceError(i,
                               ": token id {} is outside the vocabulary of {}",
                               tokens[t], cfg.source_vocab_size);
  return nullptr;
}

inline tfm_status RequestCheck::prefix(int32_t i) const {
  std::vector<int32_t> prefix = batch.prefix(i);
  if (int64_t(prefix.size()) >= cfg.max_positions)
    return makeSentenceError(i,
                             ": a target prefix of {} tokens leaves no "
                             "room in the model's {} positions",
                             prefix.size(), cfg.max_positions);
  return targetTokens(prefix.data(), int32_t(prefix.size()), i, "target prefix",
                      "");
}

inline tfm_status RequestCheck::target(int32_t i) const {
  if (!batch.targets[i] && batch.targetLengths[i] > 0)
    return makeSentenceError(i, ": no target to score");
  if (batch.targetLengths[i] < 0 ||
      int64_t(batch.targetLengths[i]) + 1 > cfg.max_positions)
    return makeSentenceError(i,
                             ": a target of {} tokens and EOS exceeds the "
                             "model's {} positions",
                             batch.targetLengths[i], cfg.max_positions);
  return targetTokens(batch.targets[i], batch.targetLengths[i], i, "target",
                      " (EOS ends every target by itself)");
}

inline tfm_status RequestCheck::targetTokens(const int32_t *tokens,
                                             int32_t count, int32_t i,
                                             const char *what,
                                             const char *why) const {
  for (int32_t t = 0; t < count; ++t) {
    int32_t token = tokens[t];
    if (token < 0 || token >= cfg.target_vocab_size)
      return makeSentenceError(i,
                               ": {} token {} is outside the target "
                               "vocabulary of {}",
                               what, token, cfg.target_vocab_size);
    if (token == cfg.eos_token_id || token == cfg.pad_token_id)
      return makeSentenceError(
          i, ": the {} holds token {}, the model's {}{}", what, token,
          token == cfg.eos_token_id ? "EOS" : "padding", why);
  }
  return nullptr;
}

} // namespace tfm_runtime

#endif // TFM_RUNTIME_REQUEST_H
