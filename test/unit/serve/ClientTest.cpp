//===- ClientTest.cpp - The C++ client of the runtime's C API ---*- C++ -*-===//
//
// tfm/Client.h over a fake runtime (a RuntimeApi table of this file's
// functions): results are freed by their owner, the batch builder hands the
// runtime the caller's sentences, and an error's sentence arrives as data.
//
//===----------------------------------------------------------------------===//

#include "tfm/Client.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

// The fake runtime's objects: this test links no runtime.
struct tfm_status_t {
  std::string message;
  int32_t sentence;
};
struct tfm_results_t {
  std::vector<std::vector<int32_t>> tokens; // one hypothesis a sentence
};

namespace {

int resultsAlive = 0, statusesAlive = 0, translations = 0;
tfm_batch lastBatch{};
/// What the fake translate_batch answers: an error about this sentence of
/// the batch (-1: of the request), or results when none is set.
const char *errorMessage = nullptr;
int32_t errorSentence = -1;

tfm_status fakeError(const char *message, int32_t sentence) {
  ++statusesAlive;
  return new tfm_status_t{message, sentence};
}

/// The fake runtime's one rule of the options.
tfm_status fakeCheckOptions(const tfm_model *,
                            const tfm_search_options *options) {
  if (options->n_best > options->beam_size)
    return fakeError("need beam size >= 1 and 1 <= n-best <= beam size", -1);
  return nullptr;
}

tfm_status fakeTranslate(tfm_model *model, const tfm_search_options *options,
                         const tfm_batch *batch, tfm_results **out) {
  ++translations;
  lastBatch = *batch;
  if (tfm_status refused = fakeCheckOptions(model, options))
    return refused;
  if (errorMessage)
    return fakeError(errorMessage, errorSentence);
  if (batch->source_lengths[0] == 0)
    return fakeError("sentence 1 is empty", 0);
  ++resultsAlive;
  *out = new tfm_results_t;
  for (int32_t i = 0; i < batch->count; ++i) // echoes each source
    (*out)->tokens.emplace_back(batch->sources[i],
                                batch->sources[i] + batch->source_lengths[i]);
  return nullptr;
}

tfm_runtime::RuntimeApi fakeApi() {
  tfm_runtime::RuntimeApi api;
  api.tfm_translate_batch = fakeTranslate;
  api.tfm_search_options_check = fakeCheckOptions;
  api.tfm_status_message = [](tfm_status s) { return s->message.c_str(); };
  api.tfm_status_sentence = [](tfm_status s) { return s->sentence; };
  api.tfm_status_free = [](tfm_status s) {
    --statusesAlive;
    delete s;
  };
  api.tfm_results_free = [](tfm_results *r) {
    --resultsAlive;
    delete r;
  };
  api.tfm_results_count = [](const tfm_results *, int32_t) { return 1; };
  api.tfm_results_tokens = [](const tfm_results *r, int32_t i, int32_t,
                              int32_t *length) {
    *length = int32_t(r->tokens[i].size());
    return r->tokens[i].data();
  };
  api.tfm_results_score = [](const tfm_results *, int32_t i, int32_t) {
    return -float(i);
  };
  api.tfm_results_token_scores = [](const tfm_results *, int32_t, int32_t,
                                    int32_t *length) -> const float * {
    static const float scores[] = {-0.5f, -0.25f};
    *length = 2;
    return scores;
  };
  return api;
}

tfm_search_options options(int32_t beam, int32_t nBest) {
  tfm_search_options o{};
  o.beam_size = beam;
  o.n_best = nBest;
  return o;
}

class ClientTest : public ::testing::Test {
protected:
  void SetUp() override {
    errorMessage = nullptr;
    errorSentence = -1;
    translations = 0;
  }
  void TearDown() override {
    EXPECT_EQ(resultsAlive, 0) << "results leaked";
    EXPECT_EQ(statusesAlive, 0) << "statuses leaked";
  }
  tfm_runtime::RuntimeApi api = fakeApi();
  tfm_client::Client client{api, nullptr};
};

TEST_F(ClientTest, TheBatchHoldsTheCallersSentences) {
  std::vector<int32_t> a = {5, 6, 2}, b = {7, 2}, prefix = {9}, none;
  tfm_client::BatchBuilder batch;
  batch.add(a, prefix, 10);
  batch.add(b, none, 11);
  tfm_batch view = batch.view();
  ASSERT_EQ(view.count, 2);
  EXPECT_EQ(view.sources[0], a.data());
  EXPECT_EQ(view.source_lengths[1], 2);
  EXPECT_EQ(view.prefixes[0], prefix.data());
  EXPECT_EQ(view.prefix_lengths[0], 1);
  EXPECT_EQ(view.prefix_lengths[1], 0);
  EXPECT_EQ(view.indexes[1], 11);
  EXPECT_EQ(view.targets, nullptr) << "no targets unless scoring";
}

TEST_F(ClientTest, AScoredBatchCarriesItsTargets) {
  std::vector<int32_t> source = {5, 2}, none, target = {8, 9};
  tfm_client::BatchBuilder batch;
  batch.addScored(source, none, target, 0);
  tfm_batch view = batch.view();
  ASSERT_NE(view.targets, nullptr);
  EXPECT_EQ(view.targets[0], target.data());
  EXPECT_EQ(view.target_lengths[0], 2);
}

TEST_F(ClientTest, ResultsAreReadAndFreedByTheirOwner) {
  std::vector<int32_t> a = {5, 6, 2}, b = {7, 2}, none;
  tfm_client::BatchBuilder batch;
  batch.add(a, none, 0);
  batch.add(b, none, 1);
  {
    tfm_client::Results results = client.translate(options(1, 1), batch);
    EXPECT_EQ(resultsAlive, 1);
    std::vector<tfm_client::Hypothesis> second = results.hypotheses(1);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(second[0].tokens, b);
    EXPECT_EQ(second[0].score, -1.0f);
    EXPECT_EQ(second[0].tokenScores, (std::vector<float>{-0.5f, -0.25f}));
    EXPECT_TRUE(results.hypotheses(0, 0).empty()) << "at most `most`";
    tfm_client::Results moved = std::move(results);
    EXPECT_EQ(resultsAlive, 1) << "a move frees nothing";
  }
  EXPECT_EQ(resultsAlive, 0);
}

TEST_F(ClientTest, ResultsAreFreedWhenReadingThemThrows) {
  std::vector<int32_t> a = {5, 2}, none;
  tfm_client::BatchBuilder batch;
  batch.add(a, none, 0);
  try {
    tfm_client::Results results = client.translate(options(1, 1), batch);
    throw std::runtime_error("decoding failed");
  } catch (const std::runtime_error &) {
  }
  EXPECT_EQ(resultsAlive, 0);
}

TEST_F(ClientTest, AnErrorCarriesItsSentenceAsData) {
  errorMessage = "sentence 2: token id 9 is outside the vocabulary of 8";
  errorSentence = 1;
  std::vector<int32_t> a = {5, 2}, none;
  tfm_client::BatchBuilder batch;
  batch.add(a, none, 0);
  batch.add(a, none, 1);
  try {
    client.translate(options(1, 1), batch);
    FAIL() << "no error";
  } catch (const tfm_client::Error &e) {
    EXPECT_EQ(e.sentence(), 1);
    EXPECT_STREQ(e.what(), errorMessage);
    EXPECT_EQ(e.detail(), ": token id 9 is outside the vocabulary of 8");
  }
}

TEST_F(ClientTest, AnErrorOfTheRequestNamesNoSentence) {
  errorMessage = "out of memory translating a batch of 1 sentences";
  std::vector<int32_t> a = {5, 2}, none;
  tfm_client::BatchBuilder batch;
  batch.add(a, none, 0);
  try {
    client.translate(options(1, 1), batch);
    FAIL() << "no error";
  } catch (const tfm_client::Error &e) {
    EXPECT_EQ(e.sentence(), -1);
    EXPECT_EQ(e.detail(), errorMessage) << "nothing is cut from it";
  }
}

TEST_F(ClientTest, OptionsAreCheckedByTheRuntimeWithoutASentence) {
  EXPECT_NO_THROW(client.checkOptions(options(2, 2)));
  EXPECT_EQ(translations, 0) << "no batch to check the options";
  try {
    client.checkOptions(options(2, 3));
    FAIL() << "n-best 3 with beam 2 accepted";
  } catch (const tfm_client::Error &e) {
    EXPECT_STREQ(e.what(), "need beam size >= 1 and 1 <= n-best <= beam size");
    EXPECT_EQ(e.sentence(), -1);
  }
  EXPECT_EQ(translations, 0);
}

TEST(CutToPositions, KeepsTheStartAndEndsInEos) {
  tfm_model_config config{};
  config.max_positions = 3;
  config.eos_token_id = 2;
  std::vector<int32_t> ids = {5, 6, 7, 8, 2};
  EXPECT_TRUE(tfm_client::cutToPositions(ids, config));
  EXPECT_EQ(ids, (std::vector<int32_t>{5, 6, 2}));
  EXPECT_FALSE(tfm_client::cutToPositions(ids, config));
}

} // namespace
