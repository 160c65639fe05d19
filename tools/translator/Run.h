//===- Run.h - The translator's run over its input --------------*- C++ -*-===//
//
// Input is streamed: a window of lines is read, translated (or scored) in
// batches of similar length through the runtime's client, and written
// before the next is read, so memory does not grow with the input.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_RUN_H
#define TFM_TOOLS_TRANSLATOR_RUN_H

#include "tools/translator/Companions.h"
#include "tools/translator/Output.h"
#include "tools/translator/Progress.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tfm_translator {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// One input line on its way through.
struct Sentence {
  Location where;
  std::vector<int32_t> ids;    // empty: a blank line, not translated
  std::vector<int32_t> prefix; // forced start of the translation
  std::vector<tfm_client::Hypothesis> nbest;
  std::vector<float> firstLogits;
  std::vector<int32_t> target; // --score: the translation scored
  int64_t index = 0; // in the input, lines counted from 0: seeds sampling
};

/// Translates (or scores) the input window by window and writes it.
class Run {
public:
  Run(const Options &o, Session &s, LineReader &reader)
      : o(o), s(s), reader(reader), prefixes(o, s),
        warnings(o.quiet, progress) {}

  void translateAll(Output &out, Output *logits);
  void scoreAll(Output &out);
  /// --format html: each input one document, translated and written in
  /// turn (HtmlDocuments.cpp).
  void translateDocuments(Output &out);
  void printTiming(double loadSeconds) const;
  void printKernelTimes() const;

private:
  using ReadSentence =
      std::function<Sentence(std::string &line, const Location &where)>;
  using WindowDone = std::function<void(const std::vector<Sentence> &)>;
  void forEachWindow(const ReadSentence &read, const WindowDone &done);
  std::vector<int32_t> sourceIds(std::string &line, const Location &where);
  std::vector<int32_t> encodeText(const std::string &text,
                                  const tfm_language_tokens *frame,
                                  const Location &where);
  const tfm_language_tokens *detectedFrame(const std::string &text,
                                           const std::string &where,
                                           const char *what);
  std::string translateDocument(const std::string &document,
                                const std::string &name);
  std::vector<std::string> translateTexts(const std::vector<std::string> &texts,
                                          const std::string &name,
                                          const tfm_language_tokens *frame);
  std::vector<int32_t> parseIds(const std::string &line,
                                const Location &where) const;
  std::vector<int32_t> targetIds(std::string &line, const Location &where);
  std::string formatScores(const std::vector<Sentence> &sentences);
  void truncate(std::vector<int32_t> &ids, const Location &where);
  void translateWindow(std::vector<Sentence> &sentences, uint64_t start);
  void translateContinuously(std::vector<Sentence> &sentences,
                             const std::vector<size_t> &order);
  void keepTiming(const tfm_translate_timing &t);
  void keepHypotheses(const tfm_client::Results &results, int32_t k,
                      Sentence &sentence);
  void translateBatch(std::vector<Sentence> &sentences,
                      const std::vector<size_t> &batch);
  tfm_client::Results runBatch(const std::vector<Sentence> &sentences,
                               const std::vector<size_t> &batch) const;
  void keepResults(const tfm_client::Results &results,
                   std::vector<Sentence> &sentences,
                   const std::vector<size_t> &batch);
  std::string format(const std::vector<Sentence> &sentences);
  std::string show(const std::vector<int32_t> &tokens,
                   const Location &where) const;
  static std::string showScores(const std::vector<float> &scores);

  const Options &o;
  Session &s;
  LineReader &reader;
  TargetPrefixes prefixes;
  Progress progress;
  Warnings warnings;
  size_t sentencesDone = 0, tokensOut = 0;
  int64_t linesRead = 0;
  double translateSeconds = 0;
  tfm_translate_timing parts{};      // summed over the batches
  std::vector<int64_t> outputTokens; // per batch
};

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_RUN_H
