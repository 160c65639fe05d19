//===- LogitsRulesTest.cpp - Hugging Face's rules on a row of logits ------===//
//
// The forced tokens, the bans and the repetition penalty of a row, each
// against the token lists Hugging Face's logits processors give, on a
// small vocabulary.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/LogitsRules.h"
#include "runtime/src/Request.h"
#include "test/unit/ModelConfigs.h"

#include "gtest/gtest.h"

#include <vector>

using namespace tfm_runtime;

namespace {

using Tokens = std::vector<int32_t>;

/// A model of 10 target tokens: EOS 0, padding 1, decoder start 2.
tfm_model_config smallConfig() {
  tfm_model_config cfg = tfm_test::tenTokenConfig();
  cfg.decoder_start_token_id = 2;
  return cfg;
}

tfm_search_options options(float repetitionPenalty = 1.0f,
                           int32_t noRepeatNgramSize = 0) {
  tfm_search_options o = defaultSearchOptions();
  o.repetition_penalty = repetitionPenalty;
  o.no_repeat_ngram_size = noRepeatNgramSize;
  return o;
}

/// Output rows where every token of 10 is its own column.
struct AllRows : OutputRows {
  AllRows() {
    tfm_model model;
    model.config.target_vocab_size = 10;
    chooseAll(model);
  }
};

} // namespace

TEST(LogitsRules, RepeatedNgramBansAreHuggingFacesNoRepeatNGram) {
  // Unigrams: every token seen; bigrams: what followed the last token.
  EXPECT_EQ(repeatedNgramBans({0, 7, 5, 7}, 1), (Tokens{0, 5, 7}));
  EXPECT_EQ(repeatedNgramBans({0, 7, 5, 7}, 2), (Tokens{5}));
  EXPECT_EQ(repeatedNgramBans({0, 7, 5, 7, 9, 7}, 2), (Tokens{5, 9}));
  // Trigrams: the last two tokens seen before, and what came next.
  EXPECT_EQ(repeatedNgramBans({0, 3, 4, 5, 3, 4}, 3), (Tokens{5}));
  EXPECT_EQ(repeatedNgramBans({0, 3, 4, 5, 4, 3}, 3), (Tokens{}));
  // An input shorter than n - 1: nothing to repeat yet; n = 0: off.
  EXPECT_EQ(repeatedNgramBans({0}, 3), (Tokens{}));
  EXPECT_EQ(repeatedNgramBans({0, 0}, 3), (Tokens{}));
  EXPECT_EQ(repeatedNgramBans({0, 0, 0}, 3), (Tokens{0}));
  EXPECT_EQ(repeatedNgramBans({0, 7, 7}, 0), (Tokens{}));
}

TEST(LogitsRules, BansPaddingEosBadWordsAndRepeatedNgrams) {
  tfm_model_config cfg = smallConfig();
  std::vector<Tokens> badWords = {{9}, {3, 4}, {5, 3, 8}};
  LogitsRules rules(cfg, badWords, options(1.0f, 2), false);
  // Input: start 2, then 3 5 3. Bad words: 9 always, 4 after 3, 8 after
  // 5 3; bigram bans: what followed 3 before (5).
  Tokens input = rules.rowInput({3, 5, 3});
  EXPECT_EQ(input, (Tokens{2, 3, 5, 3}));
  EXPECT_EQ(rules.bannedTokens(input, true), (Tokens{1, 4, 5, 8, 9}));
  EXPECT_EQ(rules.bannedTokens(input, false), (Tokens{0, 1, 4, 5, 8, 9}));
  // At the start only padding, the one-token bad word and, with EOS not
  // allowed, EOS.
  EXPECT_EQ(rules.bannedTokens(rules.rowInput({}), false), (Tokens{0, 1, 9}));
}

TEST(LogitsRules, EosWaitsForTheMinimumLength) {
  tfm_model_config cfg = smallConfig();
  std::vector<Tokens> badWords;
  tfm_search_options o = options();
  o.min_length = 3;
  LogitsRules rules(cfg, badWords, o, false);
  EXPECT_FALSE(rules.eosAllowed(0));
  EXPECT_FALSE(rules.eosAllowed(2));
  EXPECT_TRUE(rules.eosAllowed(3));
  o.suppress_eos = 1;
  LogitsRules suppressed(cfg, badWords, o, false);
  EXPECT_FALSE(suppressed.eosAllowed(100));
}

TEST(LogitsRules, ForcedTokensArePrefixThenEosAtTheLimit) {
  tfm_model_config cfg = smallConfig();
  std::vector<Tokens> badWords;
  LogitsRules noForcedEos(cfg, badWords, options(), false);
  Tokens prefix = {5, 6};
  EXPECT_EQ(noForcedEos.forcedToken(prefix, 4, 0), 5);
  EXPECT_EQ(noForcedEos.forcedToken(prefix, 4, 1), 6);
  EXPECT_EQ(noForcedEos.forcedToken(prefix, 4, 2), -1);
  EXPECT_EQ(noForcedEos.forcedToken(prefix, 4, 3), -1);
  cfg.forced_eos_token_id = 0;
  LogitsRules forcedEos(cfg, badWords, options(), false);
  EXPECT_EQ(forcedEos.forcedToken(prefix, 4, 2), -1);
  EXPECT_EQ(forcedEos.forcedToken(prefix, 4, 3), 0);
  // The prefix comes first, even at the limit.
  EXPECT_EQ(forcedEos.forcedToken(prefix, 2, 1), 6);
  tfm_search_options o = options();
  o.suppress_eos = 1;
  LogitsRules suppressed(cfg, badWords, o, false);
  EXPECT_EQ(suppressed.forcedToken(prefix, 4, 3), -1);
}

TEST(LogitsRules, GreedyPenaltyChangesTheLogitsOfEveryTokenSeen) {
  tfm_model_config cfg = smallConfig();
  std::vector<Tokens> badWords = {{3, 4}};
  LogitsRules rules(cfg, badWords, options(2.0f), true);
  std::vector<float> row = {0, 1, 4, -3, 2, 5, 6, 7, 8, 9};
  AllRows rows;
  // Input 2 4 3: 2, 3 and 4 penalized (4 though banned after 3: a banned
  // token stays in the normalizer).
  RowRules got = rules.applyToRow(row.data(), {4, 3}, true, rows);
  EXPECT_EQ(got.banned, (Tokens{1, 4}));
  EXPECT_TRUE(got.penalized.empty());
  EXPECT_TRUE(got.logitsChanged);
  EXPECT_EQ(row, (std::vector<float>{0, 1, 2, -6, 1, 5, 6, 7, 8, 9}));
}

TEST(LogitsRules, BeamPenaltyLeavesTheLogitsAndSkipsBannedTokens) {
  tfm_model_config cfg = smallConfig();
  std::vector<Tokens> badWords = {{3, 4}};
  LogitsRules rules(cfg, badWords, options(2.0f), false);
  std::vector<float> row = {0, 1, 4, -3, 2, 5, 6, 7, 8, 9};
  std::vector<float> before = row;
  RowRules got = rules.applyToRow(row.data(), {4, 3}, true, AllRows());
  EXPECT_EQ(got.banned, (Tokens{1, 4}));
  EXPECT_EQ(got.penalized, (Tokens{2, 3}));
  EXPECT_FALSE(got.logitsChanged);
  EXPECT_EQ(row, before);
}

TEST(LogitsRules, NoPenaltyLeavesTheBlocksTerms) {
  tfm_model_config cfg = smallConfig();
  std::vector<Tokens> badWords;
  LogitsRules rules(cfg, badWords, options(1.0f), true);
  std::vector<float> row(10, 1.0f);
  RowRules got = rules.applyToRow(row.data(), {4, 3}, false, AllRows());
  EXPECT_EQ(got.banned, (Tokens{0, 1}));
  EXPECT_FALSE(got.logitsChanged);
  EXPECT_EQ(row, std::vector<float>(10, 1.0f));
}
