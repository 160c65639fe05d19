//===- Service.h - Texts in, translations out -------------------*- C++ -*-===//
//
// Between the HTTP layer and the batcher: a request's texts become
// sentences (a text of several lines one sentence a line, blank lines left
// out and given back empty), go to their model's queue as one Job, and come
// back as text once all are done, in order; a full queue is a 503, a job
// past its deadline a 504 (its queued sentences dropped), a failed batch a
// 500. No HTTP here either: requests and answers are plain structs.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_SERVICE_H
#define TFM_TOOLS_SERVE_SERVICE_H

#include "tools/serve/Batcher.h"
#include "tools/serve/Catalog.h"
#include "tools/serve/ModelLibrary.h"
#include "tools/serve/Request.h"

#include <memory>
#include <string>
#include <vector>

namespace tfm_serve {

/// LibreTranslate's answer: per q item its translation and alternatives.
struct TextResult {
  std::vector<std::string> translations;
  std::vector<std::vector<std::string>> alternatives;
  /// The source language `auto` picked; empty when it was given.
  std::string detected;
};

/// /v1/translate's answer: per sentence its hypotheses (and scores, and
/// their tokens' log-probabilities).
struct NativeResult {
  std::vector<std::vector<std::string>> hypotheses;
  std::vector<std::vector<float>> scores;
  std::vector<std::vector<std::vector<float>>> tokenScores;
};

struct ServiceOptions {
  /// The beam of a request that asks for nothing else.
  int beamSize = 1;
  /// From a request's arrival to its answer at most (then 504).
  Clock::duration deadline = std::chrono::seconds(30);
};

class Service {
public:
  /// Registers each model's queue with `executor`, which must not have
  /// started yet.
  Service(const std::vector<std::unique_ptr<ModelLibrary>> &models,
          const Catalog &catalog, Executor &executor, BatchLimits limits,
          ServiceOptions options);

  Parsed<TextResult> translate(const TranslateRequest &request,
                               Clock::time_point arrival);
  Parsed<NativeResult> translate(const NativeRequest &request,
                                 Clock::time_point arrival);

private:
  /// Sentences of the lines of `texts`, and per text per line the index of
  /// its sentence (-1: a blank line).
  struct Lines {
    std::vector<Sentence> sentences;
    std::vector<std::vector<long>> index;
  };
  Parsed<Lines> splitLines(const Route &route,
                           const std::vector<std::string> &texts,
                           const char *name, bool batch) const;
  /// Runs a job to its end; the hypotheses of every sentence, or the
  /// error that ended it.
  Parsed<std::vector<Hypotheses>> run(size_t model, std::shared_ptr<Job> job,
                                      Clock::time_point arrival);
  TextResult textResult(const ModelLibrary &model, const Lines &lines,
                        const std::vector<Hypotheses> &results) const;
  Parsed<tfm_search_options> nativeSearch(const ModelLibrary &model,
                                          const NativeRequest &request) const;
  Parsed<bool> addPrefixes(const ModelLibrary &model,
                           const NativeRequest &request, Lines &lines) const;

  const std::vector<std::unique_ptr<ModelLibrary>> &models;
  const Catalog &catalog;
  Executor &executor;
  std::vector<size_t> queueOf;
  size_t maxQueued;
  ServiceOptions options;
};

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_SERVICE_H
