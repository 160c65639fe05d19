//===- OutputRowsTest.cpp - The output projection's rows for a batch ------===//
//
// A made-up output projection of 8 tokens in panels of 4 features whose
// words name their token and row: the rows a shortlist chooses, their
// columns, panels and bias, and a row's bans mapped to those columns.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/OutputRows.h"
#include "runtime/src/LogitsRules.h"
#include "runtime/src/Request.h"

#include "gtest/gtest.h"

#include <cstring>
#include <vector>

using namespace tfm_runtime;

namespace {

constexpr int64_t kVocab = 8, kWidth = 4, kFeatures = 2;

/// f32 panels (one word a feature row): token t's row r is t * 10 + r.
struct PanelModel {
  std::vector<uint32_t> words;
  tfm_model model;

  PanelModel() : words(kVocab * kFeatures) {
    for (int64_t t = 0; t < kVocab; ++t)
      for (int64_t r = 0; r < kFeatures; ++r)
        words[(t / kWidth) * kFeatures * kWidth + r * kWidth + t % kWidth] =
            uint32_t(t * 10 + r);
    model.config.target_vocab_size = kVocab;
    model.config.d_model = kFeatures;
    model.outputPanels = reinterpret_cast<const uint8_t *>(words.data());
    model.outputPanelCount = kVocab / kWidth;
    model.outputPanelWidth = kWidth;
    model.outputPanelBytes =
        bytesPerPanel(kFeatures, kWidth, PanelElements::F32);
    model.outputElements = PanelElements::F32;
    model.outputBias.resize(kVocab);
    for (int64_t t = 0; t < kVocab; ++t)
      model.outputBias.data[t] = float(t) + 0.5f;
  }
};

/// The word of feature row `r` of column `c` in `rows`' panels.
uint32_t panelWord(const OutputRows &rows, int64_t c, int64_t r) {
  const auto *words = static_cast<const uint32_t *>(rows.panels());
  return words[(c / kWidth) * kFeatures * kWidth + r * kWidth + c % kWidth];
}

} // namespace

TEST(OutputRows, AllRowsAreTheWeightsFilesOwn) {
  PanelModel m;
  OutputRows rows;
  rows.chooseAll(m.model);
  EXPECT_EQ(rows.columns(), kVocab);
  EXPECT_EQ(rows.tokens(), kVocab);
  EXPECT_EQ(rows.tokenOf(5), 5);
  EXPECT_EQ(rows.columnOf(5), 5);
  EXPECT_EQ(rows.columnsOf({0, 3, 6}), (std::vector<int32_t>{0, 3, 6}));
  EXPECT_EQ(rows.panels(), static_cast<const void *>(m.words.data()));
  EXPECT_EQ(rows.panelsBytes(), 2 * m.model.outputPanelBytes);
  EXPECT_EQ(rows.bias(), m.model.outputBias.data);
}

TEST(OutputRows, AShortlistsRowsAreCopiedIntoPanelsOfTheirOwn) {
  PanelModel m;
  OutputRows rows;
  rows.chooseTokens(m.model, {1, 3, 4, 6, 7});
  // Five tokens: two panels, the last three columns padding.
  EXPECT_EQ(rows.columns(), 8);
  EXPECT_EQ(rows.tokens(), 5);
  EXPECT_EQ(rows.panelsBytes(), 2 * m.model.outputPanelBytes);
  EXPECT_EQ(rows.tokenOf(2), 4);
  EXPECT_EQ(rows.columnOf(3), 1);
  EXPECT_EQ(rows.columnOf(2), -1);
  EXPECT_EQ(rows.columnsOf({0, 3, 6, 7}), (std::vector<int32_t>{1, 3, 4}));
  std::vector<int32_t> chosen = {1, 3, 4, 6, 7};
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t r = 0; r < kFeatures; ++r)
      EXPECT_EQ(panelWord(rows, c, r),
                c < 5 ? uint32_t(chosen[c] * 10 + r) : 0u)
          << "column " << c << ", row " << r;
  std::vector<float> bias(rows.bias(), rows.bias() + rows.columns());
  EXPECT_EQ(bias, (std::vector<float>{1.5f, 3.5f, 4.5f, 6.5f, 7.5f, 0, 0, 0}));
  // Back to the whole vocabulary for the next batch.
  rows.chooseAll(m.model);
  EXPECT_EQ(rows.columnOf(2), 2);
  EXPECT_EQ(rows.tokenOf(2), 2);
}

TEST(OutputRows, ARowsRulesAreInItsColumns) {
  PanelModel m;
  OutputRows rows;
  rows.chooseTokens(m.model, {0, 1, 2, 4, 6});
  tfm_model_config cfg{};
  cfg.eos_token_id = 0;
  cfg.pad_token_id = 1;
  cfg.decoder_start_token_id = 2;
  cfg.forced_eos_token_id = -1;
  std::vector<std::vector<int32_t>> badWords = {{6}, {7}};
  tfm_search_options options = defaultSearchOptions();
  options.repetition_penalty = 2.0f;
  options.no_repeat_ngram_size = 0;
  LogitsRules rules(cfg, badWords, options, false);
  std::vector<float> logits(rows.columns(), 1.0f);
  // Banned: padding, EOS, bad words 6 and 7 (7 not chosen); penalized:
  // 2 and 4 (the start token and the one generated).
  RowRules got = rules.applyToRow(logits.data(), {4}, false, rows);
  EXPECT_EQ(got.banned, (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(got.penalized, (std::vector<int32_t>{2, 3}));
}
