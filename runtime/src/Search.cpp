//===- Search.cpp - A step of beam search: row scans and cache moves ------===//
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
__attribute__((target_clones("avx512f", "avx2", "default")))
float addChunk(SoftmaxTerms &terms, const float *x, int64_t n) {
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
  float shift = terms.max == -std::numeric_limits<float>::infinity()
                    ? 0.0f
                    : terms.max;
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += double(std::exp(x[i] - shift));
  terms.sum += sum;
  return chunkMax;
}

/// Logits a chunk: see bestExtensions.
constexpr int64_t kChunk = 2048;

} // namespace

// One pass over the row, a chunk at a time: the chunk's share of the
// normalizer, then its tokens that may enter the kept ones, scored once the
// normalizer is known.
// Penalized tokens are skipped by the scan (their order is not their
// logits') and join the kept ones at the end, each with its penalized log p.
std::optional<std::vector<Candidate>>
bestExtensions(const float *row, int64_t vocab, float score, int64_t base,
               size_t want, const std::vector<int32_t> &bannedTokens,
               int32_t forced, const std::vector<int32_t> &penalized,
               float penalty) {
  std::vector<int32_t> skipped;
  if (!penalized.empty())
    std::set_union(bannedTokens.begin(), bannedTokens.end(), penalized.begin(),
                   penalized.end(), std::back_inserter(skipped));
  const std::vector<int32_t> &banned =
      penalized.empty() ? bannedTokens : skipped;
  // A heap whose top is the worst kept token: lowest logit, then highest
  // token.
  struct Kept {
    float logit;
    int64_t token;
  };
  auto better = [](const Kept &x, const Kept &y) {
    return x.logit > y.logit || (x.logit == y.logit && x.token < y.token);
  };
  std::vector<Kept> kept;
  kept.reserve(want + 1);
  // Once `want` are kept, a logit below the worst kept one's cannot enter.
  float worstLogit = -std::numeric_limits<float>::infinity();
  auto nextBanned = banned.begin();
  SoftmaxTerms terms{-std::numeric_limits<float>::infinity(), 0.0};
  // 2048 logits (8 KiB) a chunk: a chunk whose max is below the worst kept
  // logit is done once it adds to the normalizer (most chunks of a
  // 32000-token row, once `want` are kept). Within the others, blocks of
  // 16 without a logit that reaches the worst kept one skip the
  // token-by-token test; "any x >= worst" is one vector compare, where a
  // float max would be a serial chain (no NaN-free math here).
  constexpr int64_t kBlock = 16;
  for (int64_t c0 = 0; c0 < vocab; c0 += kChunk) {
    int64_t c1 = std::min(vocab, c0 + kChunk);
    if (addChunk(terms, row + c0, c1 - c0) < worstLogit || forced >= 0)
      continue;
    for (int64_t t0 = c0; t0 < c1; t0 += kBlock) {
      int64_t t1 = std::min(c1, t0 + kBlock);
      bool reaches = false;
      for (int64_t t = t0; t < t1; ++t)
        reaches |= row[t] >= worstLogit;
      if (!reaches)
        continue;
      while (nextBanned != banned.end() && *nextBanned < t0)
        ++nextBanned;
      for (int64_t t = t0; t < t1; ++t) {
        if (nextBanned != banned.end() && *nextBanned == t) {
          ++nextBanned;
          continue;
        }
        if (row[t] < worstLogit)
          continue;
        Kept k{row[t], t};
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
    }
  }
  float logSum = float(std::log(terms.sum));
  if (!std::isfinite(terms.max) || !std::isfinite(logSum))
    return std::nullopt;
  if (forced >= 0)
    return std::vector<Candidate>{{score, base + forced, 0.0f}};
  std::sort(kept.begin(), kept.end(), better);
  std::vector<Candidate> best;
  for (const Kept &k : kept) {
    float logp = k.logit - terms.max - logSum;
    best.push_back({score + logp, base + k.token, logp});
  }
  if (penalized.empty())
    return best;
  for (int32_t t : penalized) {
    float logp = penalize(row[t] - terms.max - logSum, penalty);
    best.push_back({score + logp, base + t, logp});
  }
  std::sort(best.begin(), best.end(), before);
  best.resize(std::min(best.size(), want));
  return best;
}

std::vector<int32_t> repeatedNgramBans(const std::vector<int32_t> &input,
                                       int32_t n) {
  std::vector<int32_t> bans;
  size_t length = input.size(), context = size_t(n) - 1;
  if (n < 1 || length < context)
    return bans;
  // Every n-gram start i whose first n - 1 tokens are the input's last.
  for (size_t i = 0; i + context < length; ++i)
    if (std::equal(input.begin() + i, input.begin() + i + context,
                   input.end() - context))
      bans.push_back(input[i + context]);
  std::sort(bans.begin(), bans.end());
  bans.erase(std::unique(bans.begin(), bans.end()), bans.end());
  return bans;
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

// A row is overwritten only after the rows that take its cache have copied
// it: rows nobody reads first, then their parents as their readers are
// done. Rows that take each other's places in a cycle (a rare permutation
// of the beams) are copied aside first, one row per cycle, and read from
// there. Staging every overwritten parent, as simpler orders must, copies
// a third more rows in typical steps of beam 4.
CacheMoves cacheMoves(const std::vector<int64_t> &parents) {
  int64_t rows = int64_t(parents.size());
  std::vector<int64_t> readers(rows, 0), ready;
  for (int64_t r = 0; r < rows; ++r)
    if (parents[r] != r)
      ++readers[parents[r]];
  for (int64_t r = 0; r < rows; ++r)
    if (parents[r] != r && readers[r] == 0)
      ready.push_back(r);
  CacheMoves moves;
  std::vector<int64_t> stageSlot(rows, -1);
  std::vector<bool> written(rows, false);
  auto drain = [&]() {
    while (!ready.empty()) {
      int64_t r = ready.back(), p = parents[r];
      ready.pop_back();
      written[r] = true;
      // A parent written before its reader was staged (a cycle's).
      moves.copies.push_back(written[p] ? RowCopy{r, stageSlot[p], true}
                                        : RowCopy{r, p, false});
      if (--readers[p] == 0 && parents[p] != p && !written[p])
        ready.push_back(p);
    }
  };
  drain();
  for (int64_t r = 0; r < rows; ++r)
    if (parents[r] != r && !written[r]) { // on a cycle: break it at r
      stageSlot[r] = int64_t(moves.staged.size());
      moves.staged.push_back(r);
      ready.push_back(r);
      drain();
    }
  return moves;
}

} // namespace tfm_runtime
