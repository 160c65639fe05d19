//===- RequestTest.cpp - A request's defaults and checks ------------------===//
//
// Each rule of a request refused with its message, the sentence it
// concerns named in it and in tfm_status_sentence; a request within the
// rules accepted.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Request.h"

#include "runtime/src/Model.h"
#include "test/unit/ModelConfigs.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace tfm_runtime;

namespace {

/// A model of 6 positions, 20 source tokens and 10 target tokens, EOS 0
/// and padding 1, with repetition guards of its own.
tfm_model_config smallConfig() {
  tfm_model_config cfg = tfm_test::tenTokenConfig();
  cfg.max_positions = 6;
  cfg.source_vocab_size = 20;
  cfg.repetition_penalty = 1.5;
  cfg.no_repeat_ngram_size = 3;
  return cfg;
}

/// Sentences, prefixes and targets as vectors, seen as a Batch.
struct Sentences {
  Sentences(std::vector<std::vector<int32_t>> sources = {},
            std::vector<std::vector<int32_t>> prefixes = {},
            std::vector<std::vector<int32_t>> targets = {})
      : sources(std::move(sources)), prefixes(std::move(prefixes)),
        targets(std::move(targets)) {}

  std::vector<std::vector<int32_t>> sources, prefixes, targets;
  std::vector<const int32_t *> sourcePointers, prefixPointers, targetPointers;
  std::vector<int32_t> lengths, prefixLengths, targetLengths;

  Batch batch() {
    fill(sources, sourcePointers, lengths);
    fill(prefixes, prefixPointers, prefixLengths);
    fill(targets, targetPointers, targetLengths);
    Batch b{sourcePointers.data(), lengths.data(),
            prefixes.empty() ? nullptr : prefixPointers.data(),
            prefixes.empty() ? nullptr : prefixLengths.data(),
            int32_t(sources.size())};
    if (!targets.empty()) {
      b.targets = targetPointers.data();
      b.targetLengths = targetLengths.data();
    }
    return b;
  }

private:
  static void fill(const std::vector<std::vector<int32_t>> &rows,
                   std::vector<const int32_t *> &pointers,
                   std::vector<int32_t> &lengths) {
    pointers.clear();
    lengths.clear();
    for (const std::vector<int32_t> &row : rows) {
      pointers.push_back(row.data());
      lengths.push_back(int32_t(row.size()));
    }
  }
};

/// What a check said: its message and sentence ("" and -2 when it
/// accepted).
struct Refusal {
  std::string message;
  int32_t sentence = -2;
};

Refusal refusal(tfm_status status) {
  if (!status)
    return {};
  Refusal r{tfm_status_message(status), tfm_status_sentence(status)};
  tfm_status_free(status);
  return r;
}

Refusal translation(const tfm_search_options &options, Sentences sentences) {
  tfm_model_config cfg = smallConfig();
  Batch batch = sentences.batch();
  return refusal(RequestCheck(cfg, options, batch).translation());
}

Refusal scoring(Sentences sentences) {
  tfm_model_config cfg = smallConfig();
  tfm_search_options options = scoringOptions(defaultSearchOptions());
  Batch batch = sentences.batch();
  return refusal(RequestCheck(cfg, options, batch).scoring());
}

/// The request refuses the whole batch with `message`.
void expectBatchError(const Refusal &got, const std::string &message) {
  EXPECT_EQ(got.message, message);
  EXPECT_EQ(got.sentence, -1);
}

const Sentences kTwo = {{{3, 4}, {5}}, {}, {}};

tfm_search_options sampling() {
  tfm_search_options o = defaultSearchOptions();
  o.sampling = 1;
  return o;
}

} // namespace

// defaultSearchOptions lists its values in the struct's order: each is
// checked here by its field's name.
TEST(Request, DefaultsAreTheOnesTheApiDocuments) {
  tfm_search_options o = defaultSearchOptions();
  // Greedy, one hypothesis, no length penalty; Marian's length limits.
  EXPECT_EQ(std::tuple(o.beam_size, o.n_best, o.length_penalty),
            std::tuple(1, 1, 1.0f));
  EXPECT_EQ(std::tuple(o.max_length, o.max_length_ratio, o.min_length,
                       o.suppress_eos),
            std::tuple(256, 3.0f, 0, 0));
  // The repetition guards left to the model.
  EXPECT_EQ(std::tuple(o.repetition_penalty, o.no_repeat_ngram_size),
            std::tuple(0.0f, -1));
  // No sampling, its settings neutral.
  EXPECT_EQ(std::tuple(o.sampling, o.sampling_topk, o.sampling_topp,
                       o.sampling_temperature, o.seed),
            std::tuple(0, 0, 1.0f, 1.0f, uint64_t(0)));
  EXPECT_EQ(std::tuple(o.use_vmap, o.fused_search), std::tuple(1, 1));
}

TEST(Request, AcceptsARequestWithinTheRules) {
  tfm_search_options beam = defaultSearchOptions();
  beam.beam_size = 4;
  beam.n_best = 4;
  beam.repetition_penalty = 1.2f;
  beam.no_repeat_ngram_size = 0;
  EXPECT_EQ(
      translation(beam, {{{3, 4, 5, 6, 7, 8}}, {{2, 3, 4, 5, 6}}, {}}).sentence,
      -2);
  tfm_search_options draws = sampling();
  draws.n_best = 3;
  draws.repetition_penalty = 1.0f;
  draws.no_repeat_ngram_size = 0;
  EXPECT_EQ(translation(draws, kTwo).sentence, -2);
  EXPECT_EQ(scoring({{{3}, {4}}, {}, {{2, 3, 4, 5, 6}, {}}}).sentence, -2);
}

TEST(Request, RefusesSearchOptionsOutsideTheRules) {
  auto with = [](auto change) {
    tfm_search_options o =
        withModelDefaults(smallConfig(), defaultSearchOptions());
    change(o);
    return translation(o, kTwo);
  };
  const char *beamRule = "need beam size >= 1 and 1 <= n-best <= beam size";
  expectBatchError(with([](auto &o) { o.beam_size = 0; }), beamRule);
  expectBatchError(with([](auto &o) { o.n_best = 0; }), beamRule);
  expectBatchError(with([](auto &o) { o.beam_size = 2, o.n_best = 3; }),
                   beamRule);
  expectBatchError(with([](auto &o) { o.max_length = 0; }),
                   "max length must be at least 1");
  expectBatchError(with([](auto &o) { o.min_length = -1; }),
                   "min length must be at least 0");
  expectBatchError(with([](auto &o) { o.length_penalty = NAN; }),
                   "the length penalty must be a finite number");
  const char *penalty = "the repetition penalty must be a finite number > 0";
  expectBatchError(with([](auto &o) { o.repetition_penalty = -1; }), penalty);
  expectBatchError(with([](auto &o) { o.repetition_penalty = INFINITY; }),
                   penalty);
  expectBatchError(with([](auto &o) { o.no_repeat_ngram_size = -1; }),
                   "the no-repeat n-gram size must be at least 0");
  const char *ratio = "the max length ratio must be a finite number >= 0";
  expectBatchError(with([](auto &o) { o.max_length_ratio = -1; }), ratio);
  expectBatchError(with([](auto &o) { o.max_length_ratio = NAN; }), ratio);
  Sentences none;
  expectBatchError(translation(defaultSearchOptions(), none),
                   "no sentences to translate");
}

TEST(Request, RefusesSamplingOptionsOutsideTheRules) {
  auto with = [](auto change) {
    tfm_search_options o = withModelDefaults(smallConfig(), sampling());
    change(o);
    return translation(o, kTwo);
  };
  expectBatchError(with([](auto &o) { o.beam_size = 2, o.n_best = 2; }),
                   "sampling needs beam size 1 (n-best N draws N samples)");
  expectBatchError(with([](auto &o) { o.n_best = 0; }), "need n-best >= 1");
  expectBatchError(with([](auto &o) { o.sampling_topk = -1; }),
                   "the sampling top-k must be at least 0 (0: no limit)");
  const char *topP = "the sampling top-p must be in (0, 1]";
  expectBatchError(with([](auto &o) { o.sampling_topp = 0; }), topP);
  expectBatchError(with([](auto &o) { o.sampling_topp = 1.5f; }), topP);
  const char *temperature =
      "the sampling temperature must be a finite number > 0";
  expectBatchError(with([](auto &o) { o.sampling_temperature = 0; }),
                   temperature);
  expectBatchError(with([](auto &o) { o.sampling_temperature = INFINITY; }),
                   temperature);
  // The sampling rules come before the others.
  expectBatchError(with([](auto &o) { o.n_best = 0, o.max_length = 0; }),
                   "need n-best >= 1");
}

TEST(Request, NamesTheSentenceOfABadSource) {
  tfm_search_options o =
      withModelDefaults(smallConfig(), defaultSearchOptions());
  Refusal empty = translation(o, {{{3}, {}}, {}, {}});
  EXPECT_EQ(empty.message, "sentence 2 is empty");
  EXPECT_EQ(empty.sentence, 1);
  Refusal tooLong = translation(o, {{{3, 3, 3, 3, 3, 3, 3}}, {}, {}});
  EXPECT_EQ(tooLong.message,
            "sentence 1 has 7 tokens; the model takes at most 6");
  EXPECT_EQ(tooLong.sentence, 0);
  Refusal outside = translation(o, {{{3}, {4}, {5, 20}}, {}, {}});
  EXPECT_EQ(outside.message,
            "sentence 3: token id 20 is outside the vocabulary of 20");
  EXPECT_EQ(outside.sentence, 2);
}

TEST(Request, NamesTheSentenceOfABadPrefix) {
  tfm_search_options o =
      withModelDefaults(smallConfig(), defaultSearchOptions());
  Refusal full = translation(o, {{{3}, {4}}, {{}, {2, 3, 4, 5, 6, 7}}, {}});
  EXPECT_EQ(full.message, "sentence 2: a target prefix of 6 tokens leaves no "
                          "room in the model's 6 positions");
  EXPECT_EQ(full.sentence, 1);
  Refusal eos = translation(o, {{{3}}, {{5, 0}}, {}});
  EXPECT_EQ(eos.message,
            "sentence 1: the target prefix holds token 0, the model's EOS");
  EXPECT_EQ(eos.sentence, 0);
  Refusal padding = translation(o, {{{3}}, {{1}}, {}});
  EXPECT_EQ(padding.message,
            "sentence 1: the target prefix holds token 1, the model's padding");
  Refusal outside = translation(o, {{{3}}, {{5, 10}}, {}});
  EXPECT_EQ(outside.message, "sentence 1: target prefix token 10 is outside "
                             "the target vocabulary of 10");
}

TEST(Request, NamesTheSentenceOfABadTarget) {
  Refusal full = scoring({{{3}, {4}}, {}, {{2}, {2, 3, 4, 5, 6, 7}}});
  EXPECT_EQ(full.message, "sentence 2: a target of 6 tokens and EOS exceeds "
                          "the model's 6 positions");
  EXPECT_EQ(full.sentence, 1);
  Refusal eos = scoring({{{3}}, {}, {{2, 0}}});
  EXPECT_EQ(eos.message, "sentence 1: the target holds token 0, the model's "
                         "EOS (EOS ends every target by itself)");
  EXPECT_EQ(eos.sentence, 0);
  Refusal outside = scoring({{{3}}, {}, {{-1}}});
  EXPECT_EQ(outside.message, "sentence 1: target token -1 is outside the "
                             "target vocabulary of 10");
  // A null target of a positive length; a negative length.
  tfm_model_config cfg = smallConfig();
  tfm_search_options options = scoringOptions(defaultSearchOptions());
  Sentences one = {{{3}}, {}, {{2}}};
  Batch batch = one.batch();
  const int32_t *none[] = {nullptr};
  batch.targets = none;
  Refusal missing = refusal(RequestCheck(cfg, options, batch).scoring());
  EXPECT_EQ(missing.message, "sentence 1: no target to score");
  EXPECT_EQ(missing.sentence, 0);
  int32_t negative[] = {-1};
  batch = one.batch();
  batch.targetLengths = negative;
  EXPECT_EQ(refusal(RequestCheck(cfg, options, batch).scoring()).message,
            "sentence 1: a target of -1 tokens and EOS exceeds the model's 6 "
            "positions");
}

TEST(Request, TranslationTakesNoTargetsAndScoringNeedsThem) {
  expectBatchError(translation(defaultSearchOptions(), {{{3}}, {}, {{2}}}),
                   "tfm_translate takes no targets (tfm_score_batch does)");
  expectBatchError(scoring({{{3}}, {}, {}}), "no targets to score");
}

TEST(Request, OptionsTakeTheModelsRepetitionGuards) {
  tfm_model_config cfg = smallConfig();
  tfm_search_options resolved = withModelDefaults(cfg, defaultSearchOptions());
  EXPECT_EQ(resolved.repetition_penalty, 1.5f);
  EXPECT_EQ(resolved.no_repeat_ngram_size, 3);
  tfm_search_options own = defaultSearchOptions();
  own.repetition_penalty = 1.1f;
  own.no_repeat_ngram_size = 0;
  resolved = withModelDefaults(cfg, own);
  EXPECT_EQ(resolved.repetition_penalty, 1.1f);
  EXPECT_EQ(resolved.no_repeat_ngram_size, 0);
  // Scoring keeps only the length penalty: the model's own log p.
  own.length_penalty = 0.6f;
  own.beam_size = 4;
  own.use_vmap = 1;
  tfm_search_options forcing = scoringOptions(own);
  EXPECT_EQ(forcing.length_penalty, 0.6f);
  EXPECT_EQ(forcing.beam_size, 1);
  EXPECT_EQ(forcing.use_vmap, 0);
  EXPECT_EQ(forcing.repetition_penalty, 1.0f);
  EXPECT_EQ(forcing.no_repeat_ngram_size, 0);
}

TEST(Request, TheOptionsAloneAreCheckedAsTheRequestChecksThem) {
  tfm_model model;
  model.config = smallConfig();
  auto alone = [&model](const tfm_search_options &o) {
    return refusal(tfm_search_options_check(&model, &o));
  };
  // The defaults leave the repetition guards (0 and -1) to the model.
  EXPECT_EQ(alone(defaultSearchOptions()).sentence, -2);
  tfm_search_options wide = defaultSearchOptions();
  wide.beam_size = 2;
  wide.n_best = 3;
  tfm_search_options drawn = sampling();
  drawn.sampling_topp = 1.5f;
  tfm_search_options penalized = defaultSearchOptions();
  penalized.repetition_penalty = -1;
  for (const tfm_search_options &o : {wide, drawn, penalized}) {
    Refusal got = alone(o);
    expectBatchError(
        got, translation(withModelDefaults(model.config, o), kTwo).message);
    EXPECT_FALSE(got.message.empty());
  }
  expectBatchError(alone(wide),
                   "need beam size >= 1 and 1 <= n-best <= beam size");
  expectBatchError(alone(drawn), "the sampling top-p must be in (0, 1]");
}
