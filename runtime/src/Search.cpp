//===- Search.cpp - A step of beam search: the rows' best extensions ------===//
//
// Built for any x86-64 and with copies of the row scan for AVX2 and
// AVX-512, chosen when the program loads.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Search.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>

namespace tfm_runtime {
namespace {

/// The running max of a row's logits and sum exp(x - max) of those seen.
/// (A plain struct, not std::pair: clang 19 leaves the pair's constructor
/// undefined in the target clones below when sanitizing.)
struct SoftmaxTerms {
  float max;
  double sum;
};

/// Adds a chunk of n logits to `terms` and returns the chunk's max: when
/// the max m rises to m', sum exp(x - m) = exp(m - m') sum exp(x - m'),
/// so the sum so far is rescaled once and the chunk's exponentials are
/// taken against m'. Chunks are small enough to stay in L1 between the
/// loops here and the caller's scan of the same chunk: the row comes from
/// memory once.
/// Both loops run in vectors: the max in 16 independent lanes, the sum with
/// the C library's vector expf (-fveclib=libmvec), accumulated in double
/// lanes so 32000 terms lose nothing. The runtime is built for any x86-64;
/// copies for AVX-512 and AVX2, chosen when the program loads, take expf 8
/// lanes at a time instead of 4 (glibc's _ZGVdN8v_expf: LLVM 19 calls no
/// 16-lane one) and the max 16 or 8.
__attribute__((target_clones("avx512f", "avx2", "default"))) float
addChunk(SoftmaxTerms &terms, const float *x, int64_t n) {
  constexpr int64_t kLanes = 16;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, x[0]);
  int64_t whole = n / kLanes * kLanes;
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j)
      lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  float chunkMax = *std::max_element(lanes, lanes + kLanes);
  for (int64_t i = whole; i < n; ++i)
    chunkMax = std::max(chunkMax, x[i]);
  if (chunkMax > terms.max) {
    // exp(-inf) = 0 when nothing finite came before.
    terms.sum *= double(std::exp(terms.max - chunkMax));
    terms.max = chunkMax;
  }
  // While every logit so far is -inf (or NaN), exp(x - 0) keeps the sum 0
  // (or NaN) where exp(-inf - -inf) would make a NaN of nothing.
  float shift =
      terms.max == -std::numeric_limits<float>::infinity() ? 0.0f : terms.max;
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += double(std::exp(x[i] - shift));
  terms.sum += sum;
  return chunkMax;
}

/// Logits a chunk: see bestExtensions.
constexpr int64_t kChunk = 2048;

/// The `want` best tokens offered, by logit (ties to the lower token): a
/// heap whose top is the worst kept one.
class KeptTokens {
public:
  struct Kept {
    float logit;
    int64_t token;
  };
  explicit KeptTokens(size_t want) : want(want) { kept.reserve(want + 1); }

  /// Once `want` are kept, a logit below this one's cannot enter.
  float worst() const { return worstLogit; }

  void offer(float logit, int64_t token) {
    Kept k{logit, token};
    if (kept.size() < want) {
      kept.push_back(k);
      std::push_heap(kept.begin(), kept.end(), better);
    } else if (better(k, kept.front())) {
      std::pop_heap(kept.begin(), kept.end(), better);
      kept.back() = k;
      std::push_heap(kept.begin(), kept.end(), better);
    }
    if (kept.size() == want)
      worstLogit = kept.front().logit;
  }

  /// Tokens [t0, t1) of `row`, those in `banned` (sorted) skipped. Blocks
  /// of 16 without a logit that reaches the worst kept one skip the
  /// token-by-token test; "any x >= worst" is one vector compare, where a
  /// float max would be a serial chain (no NaN-free math here).
  void offerRange(const float *row, int64_t t0, int64_t t1,
                  const std::vector<int32_t> &banned) {
    constexpr int64_t kBlock = 16;
    auto nextBanned = std::lower_bound(banned.begin(), banned.end(), t0);
    for (int64_t b0 = t0; b0 < t1; b0 += kBlock) {
      int64_t b1 = std::min(t1, b0 + kBlock);
      bool reaches = false;
      for (int64_t t = b0; t < b1; ++t)
        reaches |= row[t] >= worstLogit;
      if (!reaches)
        continue;
      for (int64_t t = b0; t < b1; ++t) {
        while (nextBanned != banned.end() && *nextBanned < t)
          ++nextBanned;
        if ((nextBanned != banned.end() && *nextBanned == t) ||
            row[t] < worstLogit)
          continue;
        offer(row[t], t);
      }
    }
  }

  std::vector<Kept> best() {
    std::sort(kept.begin(), kept.end(), better);
    return kept;
  }

private:
  static bool better(const Kept &x, const Kept &y) {
    return x.logit > y.logit || (x.logit == y.logit && x.token < y.token);
  }
  size_t want;
  std::vector<Kept> kept;
  float worstLogit = -std::numeric_limits<float>::infinity();
};

/// The banned tokens and the penalized ones together, sorted: the scan
/// skips both.
std::vector<int32_t> skippedTokens(const std::vector<int32_t> &banned,
                                   const std::vector<int32_t> &penalized) {
  if (penalized.empty())
    return banned;
  std::vector<int32_t> skipped;
  std::set_union(banned.begin(), banned.end(), penalized.begin(),
                 penalized.end(), std::back_inserter(skipped));
  return skipped;
}

/// The extensions of the kept tokens with log p = x - max - logSum, then
/// the penalized tokens' (each with its penalized log p), the best `want`.
/// None when max or logSum is not finite: no distribution to search.
std::optional<std::vector<Candidate>>
rankExtensions(KeptTokens &kept, const float *row, float max, double sum,
               float score, int64_t base, size_t want, int32_t forced,
               const std::vector<int32_t> &penalized, float penalty) {
  float logSum = float(std::log(sum));
  if (!std::isfinite(max) || !std::isfinite(logSum))
    return std::nullopt;
  if (forced >= 0)
    return std::vector<Candidate>{{score, base + forced, 0.0f}};
  std::vector<Candidate> best;
  for (const KeptTokens::Kept &k : kept.best()) {
    float logp = k.logit - max - logSum;
    best.push_back({score + logp, base + k.token, logp});
  }
  if (penalized.empty())
    return best;
  for (int32_t t : penalized) {
    float logp = penalize(row[t] - max - logSum, penalty);
    best.push_back({score + logp, base + t, logp});
  }
  std::sort(best.begin(), best.end(), before);
  best.resize(std::min(best.size(), want));
  return best;
}

} // namespace

// One pass over the row, a chunk at a time: the chunk's share of the
// normalizer, then its tokens that may enter the kept ones, scored once the
// normalizer is known. 2048 logits (8 KiB) a chunk: a chunk whose max is
// below the worst kept logit is done once it adds to the normalizer (most
// chunks of a 32000-token row, once `want` are kept).
// Penalized tokens are skipped by the scan (their order is not their
// logits') and join the kept ones at the end, each with its penalized log p.
std::optional<std::vector<Candidate>>
bestExtensions(const float *row, int64_t vocab, float score, int64_t base,
               size_t want, const std::vector<int32_t> &bannedTokens,
               int32_t forced, const std::vector<int32_t> &penalized,
               float penalty) {
  std::vector<int32_t> banned = skippedTokens(bannedTokens, penalized);
  KeptTokens kept(want);
  SoftmaxTerms terms{-std::numeric_limits<float>::infinity(), 0.0};
  for (int64_t c0 = 0; c0 < vocab; c0 += kChunk) {
    int64_t c1 = std::min(vocab, c0 + kChunk);
    if (addChunk(terms, row + c0, c1 - c0) >= kept.worst() && forced < 0)
      kept.offerRange(row, c0, c1, banned);
  }
  return rankExtensions(kept, row, terms.max, terms.sum, score, base, want,
                        forced, penalized, penalty);
}

namespace {

/// sum_b s_b exp(m_b - max) over the blocks' terms (m_b = terms[2b], s_b =
/// terms[2b + 1]), in double lanes; exp of the f32 differences in vectors
/// (-fveclib=libmvec) as addChunk takes them.
__attribute__((target_clones("avx512f", "avx2", "default"))) double
mergedSum(const float *terms, int64_t blocks, float max) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t b = 0; b < blocks; ++b)
    sum += double(terms[2 * b + 1]) * double(std::exp(terms[2 * b] - max));
  return sum;
}

} // namespace

// The normalizer from the blocks' terms: with M = max_b m_b,
// sum_i exp(x_i - M) = sum_b s_b exp(m_b - M). Then the `want` blocks of
// the highest maxima, which fill the kept tokens with high logits at once,
// and of the others only those whose max can still enter. A partial last
// block (the vocabulary ends inside it: the rest is padding) is taken
// from its tokens.
std::optional<std::vector<Candidate>>
bestExtensions(const BlockedLogits &row, int64_t vocab, float score,
               int64_t base, size_t want,
               const std::vector<int32_t> &bannedTokens, int32_t forced,
               const std::vector<int32_t> &penalized, float penalty) {
  int64_t width = row.blockWidth, whole = vocab / width;
  int64_t blocks = (vocab + width - 1) / width;
  float max = -std::numeric_limits<float>::infinity();
  bool finite = true;
  for (int64_t b = 0; b < whole; ++b) {
    finite &=
        !std::isnan(row.terms[2 * b]) && std::isfinite(row.terms[2 * b + 1]);
    max = std::max(max, row.terms[2 * b]);
  }
  SoftmaxTerms last{-std::numeric_limits<float>::infinity(), 0.0};
  if (whole < blocks) {
    addChunk(last, row.logits + whole * width, vocab - whole * width);
    max = std::max(max, last.max);
  }
  if (!finite) // a NaN's block, or an infinity's: no distribution
    return std::nullopt;
  double sum = 0;
  if (std::isfinite(max)) {
    sum = mergedSum(row.terms, whole, max);
    if (whole < blocks)
      sum += last.sum * std::exp(double(last.max) - double(max));
  }
  auto blockMax = [&](int64_t b) {
    return b < whole ? row.terms[2 * b] : last.max;
  };

  std::vector<int32_t> banned = skippedTokens(bannedTokens, penalized);
  KeptTokens kept(want);
  if (forced < 0 && std::isfinite(max)) {
    std::vector<int64_t> highest(blocks);
    std::iota(highest.begin(), highest.end(), 0);
    auto first = highest.begin() + std::min<int64_t>(want, blocks);
    std::nth_element(
        highest.begin(), first - 1, highest.end(),
        [&](int64_t x, int64_t y) { return blockMax(x) > blockMax(y); });
    std::vector<char> read(blocks, 0);
    auto offerBlock = [&](int64_t b) {
      read[b] = 1;
      kept.offerRange(row.logits, b * width, std::min(vocab, (b + 1) * width),
                      banned);
    };
    for (auto b = highest.begin(); b != first; ++b)
      offerBlock(*b);
    for (int64_t b = 0; b < blocks; ++b)
      if (!read[b] && blockMax(b) >= kept.worst())
        offerBlock(b);
  }
  return rankExtensions(kept, row.logits, max, sum, score, base, want, forced,
                        penalized, penalty);
}

/// The candidate tokens, by tempered logit (highest first, ties to the
/// lower token): all of them when top-p needs the order, else only the
/// first K.
static std::vector<TokenProbability>
rankedTokens(const float *row, int64_t vocab,
             const std::vector<int32_t> &banned, const SamplingFilter &f) {
  std::vector<TokenProbability> ranked; // probability holds x / T for now
  auto ban = banned.begin();
  for (int32_t t = 0; t < vocab; ++t) {
    ban = std::lower_bound(ban, banned.end(), t);
    if (ban == banned.end() || *ban != t)
      ranked.push_back({t, double(row[t]) / double(f.temperature)});
  }
  auto higher = [](const TokenProbability &x, const TokenProbability &y) {
    return x.probability > y.probability ||
           (x.probability == y.probability && x.token < y.token);
  };
  size_t keep =
      f.topK > 0 ? std::min(ranked.size(), size_t(f.topK)) : ranked.size();
  if (f.topP < 1 || keep < ranked.size()) {
    std::partial_sort(ranked.begin(), ranked.begin() + keep, ranked.end(),
                      higher);
    ranked.resize(keep);
  }
  return ranked;
}

/// p_i = exp(x_i - max) / sum_j exp(x_j - max) over `kept`, in place.
static void softmax(std::vector<TokenProbability> &kept) {
  double max = -std::numeric_limits<double>::infinity();
  for (const TokenProbability &k : kept)
    max = std::max(max, k.probability);
  double sum = 0;
  for (TokenProbability &k : kept)
    sum += k.probability = std::exp(k.probability - max);
  for (TokenProbability &k : kept)
    k.probability /= sum;
}

std::vector<TokenProbability>
samplingDistribution(const float *row, int64_t vocab,
                     const std::vector<int32_t> &banned,
                     const SamplingFilter &filter) {
  std::vector<TokenProbability> kept = rankedTokens(row, vocab, banned, filter);
  if (kept.empty())
    return kept;
  softmax(kept);
  if (filter.topP < 1) { // kept is ranked: the fewest that reach P
    double sum = 0;
    size_t n = 0;
    while (n < kept.size() && sum < double(filter.topP))
      sum += kept[n++].probability;
    kept.resize(std::max<size_t>(n, 1));
    for (TokenProbability &k : kept) // q_i = p_i / sum of the kept p
      k.probability /= sum;
  }
  std::sort(kept.begin(), kept.end(),
            [](const TokenProbability &x, const TokenProbability &y) {
              return x.token < y.token;
            });
  return kept;
}

int32_t drawToken(const std::vector<TokenProbability> &distribution, double u) {
  double cumulative = 0;
  for (const TokenProbability &k : distribution) {
    cumulative += k.probability;
    if (cumulative > u)
      return k.token;
  }
  return distribution.back().token;
}

std::optional<float> logProbability(const float *row, int64_t vocab,
                                    int32_t token) {
  SoftmaxTerms terms{-std::numeric_limits<float>::infinity(), 0.0};
  for (int64_t c0 = 0; c0 < vocab; c0 += kChunk)
    addChunk(terms, row + c0, std::min(vocab, c0 + kChunk) - c0);
  float logSum = float(std::log(terms.sum));
  if (!std::isfinite(terms.max) || !std::isfinite(logSum))
    return std::nullopt;
  return row[token] - terms.max - logSum;
}

} // namespace tfm_runtime
