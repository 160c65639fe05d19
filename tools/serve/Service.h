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

#include "tools/common/LanguageDetector.h"

#include <memory>
#include <string>
#include <vector>

namespace tfm_serve {

using tfm_tools::DetectedLanguage;

/// LibreTranslate's answer: per q item its translation and alternatives.
struct TextResult {
  std::vector<std::string> translations;
  std::vector<std::vector<std::string>> alternatives;
  /// Source `auto`: per item the language detected and translated from
  /// (confidence 0 where none was detected and the target has one
  /// source); empty when the source was given.
  std::vector<DetectedLanguage> detected;
};

/// /v1/translate's answer: per sentence its hypotheses (and scores, and
/// their tokens' log-probabilities).
struct NativeResult {
  std::vector<std::vector<std::string>> hypotheses;
  std::vector<std::vector<float>> scores;
  std::vector<std::vector<std::vector<float>>> tokenScores;
};

/// /translate_file's answer: the translated file and the language it was
/// translated from.
struct FileResult {
  std::string content, contentType;
  DetectedLanguage source;
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

  /// Texts, or with `html` documents whose markup is kept.
  Parsed<TextResult> translate(const TranslateRequest &request,
                               Clock::time_point arrival);
  /// A text file line by line (blank lines kept), an HTML file as a
  /// document; source auto detects the language of the whole file.
  Parsed<FileResult> translate(const FileRequest &request,
                               Clock::time_point arrival);
  Parsed<NativeResult> translate(const NativeRequest &request,
                                 Clock::time_point arrival);
  /// POST /detect: the languages of `text`, best first, those the served
  /// pairs translate from before any other; empty when none was found.
  std::vector<DetectedLanguage> detect(const std::string &text) const;
  /// The language /detect answers when it finds none (LibreTranslate's
  /// "en" if served, else the first source), with confidence 0.
  const std::string &fallbackLanguage() const { return fallback; }

private:
  /// Sentences of the lines of `texts`, and per text per line the index of
  /// its sentence (-1: a blank line).
  struct Lines {
    std::vector<Sentence> sentences;
    std::vector<std::vector<long>> index;
  };
  /// The items of q that one route translates: one job.
  struct RouteGroup {
    Route route;
    std::vector<size_t> items;
    Lines lines;
  };
  /// Lines of the texts `items` (indexes into `texts`; errors name them).
  Parsed<Lines> splitLines(const Route &route,
                           const std::vector<std::string> &texts,
                           const std::vector<size_t> &items, const char *name,
                           bool batch) const;
  /// Per item of q its route: the request's pair, or with source auto the
  /// language detected in the item's `texts` entry (its text without
  /// markup); `detected` then gets each item's language.
  Parsed<std::vector<Route>>
  routeItems(const TranslateRequest &request,
             const std::vector<std::string> &texts,
             std::vector<DetectedLanguage> &detected) const;
  Parsed<Route> routeDetected(const TranslateRequest &request,
                              const std::string &text, size_t item,
                              DetectedLanguage &detected) const;
  Parsed<Route> routeBlank(const std::string &target,
                           DetectedLanguage &detected) const;
  /// `texts` grouped by their routes, their lines encoded.
  Parsed<std::vector<RouteGroup>>
  groupByRoute(const std::vector<std::string> &texts, bool batch,
               const std::vector<Route> &routes) const;
  /// One job per group, all queued at once; per text its translation and
  /// alternatives (up to `alternatives`).
  Parsed<TextResult> runGroups(std::vector<RouteGroup> &groups, size_t texts,
                               int alternatives, Clock::time_point arrival);
  Parsed<TextResult> translateText(const TranslateRequest &request,
                                   Clock::time_point arrival);
  Parsed<TextResult> translateHtml(const TranslateRequest &request,
                                   Clock::time_point arrival);
  /// Sentences on one route (a fallback pass of the HTML writer); throws
  /// the error as an HtmlJobError.
  std::vector<std::string> translateOrThrow(const Route &route,
                                            const std::vector<std::string> &s,
                                            Clock::time_point arrival);
  /// Source auto of a file: the language of its whole text.
  Parsed<std::string> fileSource(const FileRequest &request,
                                 const std::string &text,
                                 DetectedLanguage &detected) const;
  /// Runs jobs to their end, each on its model, all queued at once; the
  /// hypotheses of every job, or the first error (the others cancelled).
  Parsed<std::vector<std::vector<Hypotheses>>>
  runAll(const std::vector<std::pair<size_t, std::shared_ptr<Job>>> &jobs,
         Clock::time_point arrival);
  Parsed<std::vector<Hypotheses>> await(size_t model, std::shared_ptr<Job> job,
                                        Clock::time_point arrival);
  /// Runs one job to its end.
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
  tfm_tools::LanguageDetector detector;
  std::string fallback;
};

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_SERVICE_H
