//===- Translator.h - Translate a batch: encode, then search ----*- C++ -*-===//
//
// tfm_results is opaque in the C API; the runtime's sources share its
// definition here. Translator.cpp runs the compiled `encode` over a padded
// batch, then `decode_step` until every sentence has its hypotheses,
// searching (greedy or beam) between the steps.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_TRANSLATOR_H
#define TFM_RUNTIME_TRANSLATOR_H

#include "tfm/runtime.h"

#include <cstdint>
#include <vector>

namespace tfm_runtime {
struct Hypothesis {
  std::vector<int32_t> tokens; // without EOS
  float score = 0;             // sum of log-probabilities
  float normalized = 0;        // score / length^penalty
  /// Each token's log-probability, then EOS's if the hypothesis ended
  /// with it.
  std::vector<float> tokenScores;
};
} // namespace tfm_runtime

struct tfm_results_t {
  std::vector<std::vector<tfm_runtime::Hypothesis>> nbest;
  std::vector<std::vector<float>> firstLogits;
  tfm_translate_timing timing{};
};

namespace tfm_runtime {

/// tfm_search_options_default's options.
tfm_search_options defaultSearchOptions();

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

/// Checks the batch and the options against the model, then translates
/// the sentences as one batch (tfm_translate). No exception leaves it.
tfm_status translate(tfm_model &model, const tfm_search_options &options,
                     const Batch &batch, tfm_results **out_results);

/// Checks the batch (with its targets) against the model, then scores
/// each target as one batch (tfm_score_batch): one hypothesis per
/// sentence. No exception leaves it.
tfm_status score(tfm_model &model, const tfm_search_options &options,
                 const Batch &batch, tfm_results **out_results);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_TRANSLATOR_H
