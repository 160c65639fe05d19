//===- SearchTest.cpp - A search step's row scan and cache moves ----------===//
//
// The runtime's one-pass row scan against a plain one (sort every token by
// score), and its order of cache row moves simulated on row numbers.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Search.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using tfm_runtime::bestExtensions;
using tfm_runtime::Candidate;

static const float kInf = std::numeric_limits<float>::infinity();

/// The plain scan: log p(t) = x[t] - log sum exp(x) in double for every
/// token not banned, the `want` largest logits (ties to the lower token).
static std::vector<Candidate> plainBest(const std::vector<float> &row,
                                        float score, int64_t base, size_t want,
                                        const std::vector<int32_t> &banned) {
  double max = -kInf, sum = 0;
  for (float x : row)
    max = std::max<double>(max, x);
  for (float x : row)
    sum += std::exp(double(x) - max);
  std::vector<int64_t> tokens;
  for (int64_t t = 0; t < int64_t(row.size()); ++t)
    if (!std::binary_search(banned.begin(), banned.end(), int32_t(t)))
      tokens.push_back(t);
  std::stable_sort(tokens.begin(), tokens.end(),
                   [&](int64_t a, int64_t b) { return row[a] > row[b]; });
  tokens.resize(std::min(want, tokens.size()));
  std::vector<Candidate> best;
  for (int64_t t : tokens)
    best.push_back(
        {float(score + (double(row[t]) - max - std::log(sum))), base + t});
  return best;
}

/// A row of normal logits (sd 4) with, past 20 tokens, a masked token and
/// ties at the top.
static std::vector<float> testRow(std::mt19937 &rng, int64_t vocab) {
  std::normal_distribution<float> logit(0.0f, 4.0f);
  std::vector<float> row(vocab);
  for (float &x : row)
    x = logit(rng);
  if (vocab > 20) {
    row[5] = -kInf;
    row[vocab - 1] = row[vocab / 2] = 12.5f;
  }
  return row;
}

/// Every other trial bans token 0 and the largest logit (sorted, unique).
static std::vector<int32_t> testBans(const std::vector<float> &row, int trial) {
  std::vector<int32_t> banned;
  if (trial % 2 && row.size() > 3) {
    banned = {0,
              int32_t(std::max_element(row.begin(), row.end()) - row.begin())};
    std::sort(banned.begin(), banned.end());
    banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  }
  return banned;
}

TEST(Search, RowScanKeepsTheBestTokensWithTheirLogProbabilities) {
  std::mt19937 rng(7);
  // Vocabularies around the scan's blocks (16) and chunks (2048).
  for (int64_t vocab : {1, 3, 16, 17, 2047, 2048, 2049, 4111, 32000})
    for (size_t want : {1, 2, 8})
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<float> row = testRow(rng, vocab);
        std::vector<int32_t> banned = testBans(row, trial);
        float score = -1.5f * float(trial);
        int64_t base = trial * vocab;
        std::optional<std::vector<Candidate>> got =
            bestExtensions(row.data(), vocab, score, base, want, banned, -1);
        ASSERT_TRUE(got) << "vocab " << vocab;
        std::vector<Candidate> expected =
            plainBest(row, score, base, want, banned);
        ASSERT_EQ(got->size(), expected.size()) << "vocab " << vocab;
        for (size_t i = 0; i < expected.size(); ++i) {
          EXPECT_EQ((*got)[i].flat, expected[i].flat)
              << "vocab " << vocab << " rank " << i;
          EXPECT_NEAR((*got)[i].score, expected[i].score,
                      1e-5f * std::max(1.0f, std::abs(expected[i].score)))
              << "vocab " << vocab << " rank " << i;
        }
      }
}

/// A row padded to whole blocks of `width` (the padding made to win, as
/// the search must never read it) with each block's terms as
/// tfm.logsumexp_blocks defines them, computed here in double.
struct PaddedRow {
  std::vector<float> logits, terms;
  PaddedRow(const std::vector<float> &row, int64_t width) : logits(row) {
    int64_t blocks = (int64_t(row.size()) + width - 1) / width;
    logits.resize(blocks * width, 1000.0f);
    for (int64_t b = 0; b < blocks; ++b) {
      auto first = logits.begin() + b * width;
      double max = *std::max_element(first, first + width), sum = 0;
      for (auto x = first; x != first + width; ++x)
        sum += std::exp(double(*x) - (max == -kInf ? 0.0 : max));
      terms.push_back(float(max));
      terms.push_back(float(sum));
    }
  }
  tfm_runtime::BlockedLogits blocked(int64_t width) const {
    return {logits.data(), terms.data(), width};
  }
};

TEST(Search, BlockTermsGiveThePlainScansExtensions) {
  std::mt19937 rng(11);
  const int64_t width = 64;
  // Vocabularies around a block, a partial last block, and a whole row.
  for (int64_t vocab : {1, 63, 64, 65, 200, 2049, 32000})
    for (size_t want : {1, 2, 8})
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<float> row = testRow(rng, vocab);
        std::vector<int32_t> banned = testBans(row, trial);
        PaddedRow padded(row, width);
        std::optional<std::vector<Candidate>> got = bestExtensions(
            padded.blocked(width), vocab, -1.0f, 0, want, banned, -1);
        ASSERT_TRUE(got) << "vocab " << vocab;
        std::vector<Candidate> expected =
            plainBest(row, -1.0f, 0, want, banned);
        ASSERT_EQ(got->size(), expected.size()) << "vocab " << vocab;
        for (size_t i = 0; i < expected.size(); ++i) {
          EXPECT_EQ((*got)[i].flat, expected[i].flat)
              << "vocab " << vocab << " rank " << i;
          EXPECT_NEAR((*got)[i].score, expected[i].score, 1e-5f)
              << "vocab " << vocab << " rank " << i;
        }
      }
}

TEST(Search, BlockTermsOfANonFiniteRowGiveNoExtensions) {
  for (int64_t vocab : {64, 100, 32000})
    for (float bad : {std::nanf(""), kInf})
      for (int64_t at : {int64_t(0), vocab / 2, vocab - 1}) {
        std::vector<float> row(vocab, 1.0f);
        row[at] = bad;
        PaddedRow padded(row, 64);
        EXPECT_FALSE(bestExtensions(padded.blocked(64), vocab, 0, 0, 4, {}, -1))
            << "vocab " << vocab << " at " << at;
      }
  std::vector<float> masked(100, -kInf);
  PaddedRow padded(masked, 64);
  EXPECT_FALSE(bestExtensions(padded.blocked(64), 100, 0, 0, 4, {}, -1));
}

TEST(Search, ForcedTokenIsTheOnlyExtension) {
  std::vector<float> row(3000, 0.5f);
  std::optional<std::vector<Candidate>> got =
      bestExtensions(row.data(), 3000, -2.0f, 6000, 8, {}, 0);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].flat, 6000);
  EXPECT_EQ((*got)[0].score, -2.0f);
}

TEST(Search, RowsWithoutADistributionHaveNoExtensions) {
  for (int64_t vocab : {16, 2049, 32000}) {
    std::vector<float> masked(vocab, -kInf);
    EXPECT_FALSE(bestExtensions(masked.data(), vocab, 0, 0, 4, {}, -1));
    // A NaN or +inf anywhere, even after every other logit is -inf or in a
    // chunk whose max is below the kept ones'.
    for (float bad : {std::nanf(""), kInf})
      for (int64_t at : {int64_t(0), vocab / 2, vocab - 1}) {
        std::vector<float> row(vocab, 1.0f);
        row[at] = bad;
        EXPECT_FALSE(bestExtensions(row.data(), vocab, 0, 0, 4, {}, -1))
            << "vocab " << vocab << " at " << at;
        EXPECT_FALSE(bestExtensions(row.data(), vocab, 0, 0, 4, {}, 0))
            << "vocab " << vocab << " at " << at << " (forced)";
        masked[at] = bad;
        EXPECT_FALSE(bestExtensions(masked.data(), vocab, 0, 0, 4, {}, -1));
        masked[at] = -kInf;
      }
  }
}

TEST(Search, PenalizedTokensJoinTheBestWithTheirPenalizedLogProbabilities) {
  std::mt19937 rng(5);
  std::normal_distribution<float> logit(0.0f, 2.0f);
  for (int64_t vocab : {17, 2049, 5000})
    for (float penalty : {0.5f, 1.7f}) {
      std::vector<float> row(vocab);
      for (float &x : row)
        x = logit(rng);
      std::vector<int32_t> penalized = {1, 4, int32_t(vocab - 2)};
      size_t want = 6;
      std::optional<std::vector<Candidate>> got = bestExtensions(
          row.data(), vocab, -1.0f, 0, want, {}, -1, penalized, penalty);
      ASSERT_TRUE(got);
      // Plainly: every token's log p, the penalized ones' penalized.
      std::vector<Candidate> all = plainBest(row, -1.0f, 0, size_t(vocab), {});
      for (Candidate &c : all)
        if (std::binary_search(penalized.begin(), penalized.end(),
                               int32_t(c.flat)))
          c.score = -1.0f + tfm_runtime::penalize(c.score + 1.0f, penalty);
      std::sort(all.begin(), all.end(), tfm_runtime::before);
      ASSERT_EQ(got->size(), want);
      for (size_t i = 0; i < want; ++i) {
        EXPECT_EQ((*got)[i].flat, all[i].flat) << "vocab " << vocab;
        EXPECT_NEAR((*got)[i].score, all[i].score, 1e-5f);
        EXPECT_NEAR((*got)[i].logp, all[i].score + 1.0f, 1e-5f);
      }
    }
}

//===----------------------------------------------------------------------===//
// Sampling
//===----------------------------------------------------------------------===//

using tfm_runtime::drawToken;
using tfm_runtime::samplingDistribution;
using tfm_runtime::SamplingFilter;
using tfm_runtime::SplitMix64;
using tfm_runtime::TokenProbability;

TEST(Sampling, SplitMix64GivesItsPublishedValues) {
  // Vigna's splitmix64.c from state 0 (and the reference's generator).
  SplitMix64 zero(0);
  EXPECT_EQ(zero.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(zero.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(zero.next(), 0x06C45D188009454Full);
  // A sentence's stream, as test/reference/reference.py computes it.
  SplitMix64 stream = SplitMix64::stream(42, 7, 1);
  EXPECT_EQ(stream.next(), 0x9D27FB3DC5C283ECull);
  EXPECT_EQ(stream.next(), 0xC11C65A003A19B50ull);
  EXPECT_EQ(SplitMix64::stream(42, 7, 1).uniform(), 0.6138913179218068);
}

/// The plain filter: every token not banned sorted by x / T (ties to the
/// lower token), the first K, their softmax, the fewest whose sum reaches
/// P, renormalized, back in vocabulary order.
static std::vector<TokenProbability>
plainDistribution(const std::vector<float> &row,
                  const std::vector<int32_t> &banned, const SamplingFilter &f) {
  std::vector<TokenProbability> kept;
  for (int32_t t = 0; t < int32_t(row.size()); ++t)
    if (!std::binary_search(banned.begin(), banned.end(), t))
      kept.push_back({t, double(row[t]) / f.temperature});
  std::stable_sort(kept.begin(), kept.end(),
                   [](const TokenProbability &x, const TokenProbability &y) {
                     return x.probability > y.probability;
                   });
  if (f.topK > 0 && size_t(f.topK) < kept.size())
    kept.resize(f.topK);
  double max = kept.front().probability, sum = 0, reached = 0;
  for (TokenProbability &k : kept)
    sum += k.probability = std::exp(k.probability - max);
  size_t n = 0;
  for (; n < kept.size() && (n == 0 || reached < double(f.topP)); ++n)
    reached += kept[n].probability /= sum;
  kept.resize(n);
  for (TokenProbability &k : kept)
    k.probability /= reached;
  std::sort(kept.begin(), kept.end(),
            [](const TokenProbability &x, const TokenProbability &y) {
              return x.token < y.token;
            });
  return kept;
}

TEST(Sampling, FilterMatchesAPlainSort) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t vocab = 1 + trial % 40;
    std::vector<float> row(vocab);
    for (float &x : row) // few values: ties between tokens
      x = float(std::uniform_int_distribution<int>(-4, 4)(rng)) / 2;
    std::vector<int32_t> banned;
    for (int32_t t = 1; t < vocab; ++t)
      if (rng() % 5 == 0)
        banned.push_back(t);
    SamplingFilter f{int32_t(rng() % 6),
                     trial % 3 ? 0.3f + 0.1f * (trial % 8) : 1.0f,
                     trial % 2 ? 0.7f : 1.0f};
    std::vector<TokenProbability> got =
        samplingDistribution(row.data(), vocab, banned, f);
    std::vector<TokenProbability> want = plainDistribution(row, banned, f);
    ASSERT_EQ(got.size(), want.size()) << "trial " << trial;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].token, want[i].token) << "trial " << trial;
      EXPECT_NEAR(got[i].probability, want[i].probability, 1e-12);
    }
  }
}

TEST(Sampling, TopKOneKeepsTheLowestBestToken) {
  std::vector<float> row = {1, 3, 3, 0.5};
  std::vector<TokenProbability> kept =
      samplingDistribution(row.data(), 4, {}, {1, 1.0f, 1.0f});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].token, 1);
  EXPECT_EQ(kept[0].probability, 1.0);
}

TEST(Sampling, DrawTakesTheFirstTokenPastU) {
  std::vector<TokenProbability> d = {{2, 0.25}, {5, 0.5}, {9, 0.25}};
  EXPECT_EQ(drawToken(d, 0.0), 2);
  EXPECT_EQ(drawToken(d, 0.25), 5); // cumulative 0.25 does not exceed 0.25
  EXPECT_EQ(drawToken(d, 0.7499), 5);
  EXPECT_EQ(drawToken(d, 0.75), 9);
  EXPECT_EQ(drawToken(d, 0.9999999), 9);
}
