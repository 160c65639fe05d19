//===- Translator.h - Translate a batch: encode, then search ----*- C++ -*-===//
//
// tfm_results is opaque in the C API; the runtime's sources share its
// definition here. Translator.cpp checks a request (Request.h), runs the
// compiled `encode` over a padded batch, then `decode_step` until every
// sentence has its hypotheses, searching (greedy, beam or sampling)
// between the steps; a stream (tfm_stream) is such a batch that sentences
// join while it runs.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_TRANSLATOR_H
#define TFM_RUNTIME_TRANSLATOR_H

#include "runtime/src/Request.h"
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
  /// A stream's step: each result's sentence, by the order it was added.
  std::vector<int64_t> sentenceNumbers;
};

namespace tfm_runtime {

/// Checks the batch and the options against the model, then translates
/// the sentences as one batch (tfm_translate). No exception leaves it.
tfm_status translate(tfm_model &model, const tfm_search_options &options,
                     const Batch &batch, tfm_results **out_results);

/// Checks the batch (with its targets) against the model, then scores
/// each target as one batch (tfm_score_batch): one hypothesis per
/// sentence. No exception leaves it.
tfm_status score(tfm_model &model, const tfm_search_options &options,
                 const Batch &batch, tfm_results **out_results);

/// tfm_stream_open: a stream of at most `maxSentences` sentences at once,
/// searched with `options` (checked here).
tfm_status openStream(tfm_model &model, const tfm_search_options &options,
                      int32_t maxSentences, tfm_stream **out_stream);
/// tfm_stream_add: checks the batch, then encodes it; its sentences join
/// at the next step.
tfm_status addToStream(tfm_stream &stream, const Batch &batch);
/// tfm_stream_step: one step; the results of the sentences it finished.
tfm_status stepStream(tfm_stream &stream, tfm_results **out_results);
int32_t streamSentences(const tfm_stream &stream);
void closeStream(tfm_stream *stream);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_TRANSLATOR_H
