//===- Search.h - A search step: row scans and cache moves ------*- C++ -*-===//
//
// The parts of a search step that do not touch the model: the best
// extensions of a hypothesis from its row of logits, and the order in which
// the key/value cache rows move when the beams take their parents' places.
// Apart from the translator, so that unit tests check them against plain
// implementations.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_SEARCH_H
#define TFM_RUNTIME_SEARCH_H

#include <cstdint>
#include <optional>
#include <vector>

namespace tfm_runtime {

/// A scored extension of a hypothesis; `flat` = beam * vocab + token, and
/// `logp` the token's own log-probability (`score` less the hypothesis's).
struct Candidate {
  float score;
  int64_t flat;
  float logp = 0;
};

/// Candidate order: higher score first, ties to the lower (beam, token).
inline bool before(const Candidate &x, const Candidate &y) {
  return x.score > y.score || (x.score == y.score && x.flat < y.flat);
}

/// The `want` best extensions of a hypothesis scored `score` by the tokens
/// of its logits row (`flat` = base + token), skipping the tokens in
/// `banned` (sorted), best first, with log p(t) = x[t] - max - log sum
/// exp(x - max). The extensions are chosen by logit (a row's scores are its
/// logits plus one constant), ties to the lower token.
/// A `forced` token (-1: none) is the only extension, with log p = 0, as
/// Hugging Face's forced EOS sets it.
/// None when the row's logits are not all finite (a NaN or infinity
/// reaches the normalizer): there is no distribution to search.
/// `penalized` (sorted, none banned) are tokens whose log p is multiplied
/// by `penalty` where negative and divided where positive (Hugging Face's
/// repetition penalty on log-probabilities, in beam search).
std::optional<std::vector<Candidate>>
bestExtensions(const float *row, int64_t vocab, float score, int64_t base,
               size_t want, const std::vector<int32_t> &banned, int32_t forced,
               const std::vector<int32_t> &penalized = {},
               float penalty = 1.0f);

/// Hugging Face's repetition penalty of a value (a logit or a log p).
inline float penalize(float x, float penalty) {
  return x < 0 ? x * penalty : x / penalty;
}

/// The tokens that would repeat an n-gram of `input` (a hypothesis's
/// decoder input: start token, then its tokens), sorted: every t such that
/// its last n - 1 tokens followed by t occur in it (Hugging Face's
/// NoRepeatNGramLogitsProcessor; none while input is shorter than n - 1).
std::vector<int32_t> repeatedNgramBans(const std::vector<int32_t> &input,
                                       int32_t n);

/// log p(token) of a logits row, computed as bestExtensions computes it
/// (the same sums in the same order: the same float); none when the row's
/// logits are not all finite.
std::optional<float> logProbability(const float *row, int64_t vocab,
                                    int32_t token);

/// One row move: row `to` takes row `from`, or staging slot `from`.
struct RowCopy {
  int64_t to, from;
  bool staged;
};

/// How rows move so that row r holds what row parents[r] held: first
/// `staged` (rows copied aside, slot i holding row staged[i]), then
/// `copies` in order. Rows that keep their own are not touched.
struct CacheMoves {
  std::vector<int64_t> staged;
  std::vector<RowCopy> copies;
};
CacheMoves cacheMoves(const std::vector<int64_t> &parents);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_SEARCH_H
