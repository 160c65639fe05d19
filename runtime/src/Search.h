//===- Search.h - A search step: the rows' best extensions ------*- C++ -*-===//
//
// The parts of a search step that do not touch the model: the best
// extensions of a hypothesis from its row of logits (or its blocks' terms),
// less the tokens banned and with the penalties that LogitsRules.h
// decides, and sampling. Apart from the translator, so that unit tests
// check them against plain implementations.
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

/// A row of logits with the log-sum-exp terms of each block of
/// `blockWidth` of them (tfm.logsumexp_blocks: terms[2b] = m_b, the
/// block's max, terms[2b + 1] = s_b, the sum of its exp(x - m_b)).
struct BlockedLogits {
  const float *logits;
  const float *terms;
  int64_t blockWidth;
};

/// bestExtensions from the blocks' terms: the normalizer merged from them
/// and only the blocks whose max can enter the kept tokens read, in order
/// of their maxima. The same extensions (a logit's rank does not depend on
/// the order the blocks are read in); log p may differ from the plain
/// scan's in the last bits (other sums of other exponentials).
std::optional<std::vector<Candidate>>
bestExtensions(const BlockedLogits &row, int64_t vocab, float score,
               int64_t base, size_t want, const std::vector<int32_t> &banned,
               int32_t forced, const std::vector<int32_t> &penalized = {},
               float penalty = 1.0f);

/// Hugging Face's repetition penalty of a value (a logit or a log p).
inline float penalize(float x, float penalty) {
  return x < 0 ? x * penalty : x / penalty;
}

/// log p(token) of a logits row, computed as bestExtensions computes it
/// (the same sums in the same order: the same float); none when the row's
/// logits are not all finite.
std::optional<float> logProbability(const float *row, int64_t vocab,
                                    int32_t token);

/// Sampling's generator: SplitMix64 (Steele, Lea and Flood, 2014). Each
/// draw adds the golden-ratio increment to the state and returns the state
/// through a 64-bit finalizer; u = the top 53 bits / 2^53, in [0, 1).
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t state = 0) : state(state) {}
  uint64_t next() {
    state += 0x9E3779B97F4A7C15ull;
    return mix(state);
  }
  double uniform() { return double(next() >> 11) * 0x1p-53; }
  /// The finalizer: z ^= z >> 30; z *= C1; z ^= z >> 27; z *= C2;
  /// z ^= z >> 31.
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// The stream of sample `sample` of the sentence at input index `index`:
  /// state = mix(mix(mix(seed) + index) + sample), so that it depends on
  /// neither the batch nor the other sentences.
  static SplitMix64 stream(uint64_t seed, uint64_t index, uint64_t sample) {
    return SplitMix64(mix(mix(mix(seed) + index) + sample));
  }

private:
  uint64_t state;
};

/// What sampling keeps of a row: divide the logits by `temperature`, keep
/// the `topK` largest (0: all; ties to the lower token), then the fewest
/// most probable whose probabilities (softmax over those kept) sum to at
/// least `topP` (at least one).
struct SamplingFilter {
  int32_t topK = 0;
  float topP = 1;
  float temperature = 1;
};

/// A token and its probability.
struct TokenProbability {
  int32_t token;
  double probability;
};

/// The distribution sampling draws from: the tokens of the row (less the
/// `banned`, sorted) that `filter` keeps, in vocabulary order, with their
/// softmax over those kept. Empty when no token can be chosen.
std::vector<TokenProbability>
samplingDistribution(const float *row, int64_t vocab,
                     const std::vector<int32_t> &banned,
                     const SamplingFilter &filter);

/// The first token (in the order given) whose cumulative probability
/// exceeds `u` (the last one if rounding leaves u beyond the sum).
int32_t drawToken(const std::vector<TokenProbability> &distribution, double u);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_SEARCH_H
