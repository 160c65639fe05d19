//===- Options.h - The translator's command line ----------------*- C++ -*-===//
//
// The options of the compiled translator, parsed with CLI11: each one with
// its default, its check and one line of help; the longer explanations in
// the help's footer.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_OPTIONS_H
#define TFM_TOOLS_TRANSLATOR_OPTIONS_H

#include "tfm/runtime.h"

#include <string>
#include <vector>

namespace tfm_translator {

enum class Format { Default, Text, Ids };

struct Options {
  tfm_search_options search;
  int batchSize = 32;
  int threads = 2;
  std::vector<std::string> inputs;
  std::string output, weights, logitsPath;
  /// --target-prefix TOKENS, or --target-prefix-file FILE: one per line.
  std::string targetPrefix, targetPrefixFile;
  /// --source-lang, --target-lang: codes of the model's languages.
  std::string sourceLang, targetLang;
  /// --model-info: print what tfmc compiled in, and the languages.
  bool modelInfo = false;
  Format inputFormat = Format::Default, outputFormat = Format::Default;
  bool timing = false, quiet = false;
  /// --with-scores, --token-scores: the hypotheses' scores, and their
  /// tokens' log-probabilities.
  bool withScores = false, tokenScores = false;
  /// --score: print the log-probability of given translations.
  bool score = false;
  /// --verify-weights: check every tensor, report, and exit.
  bool verifyWeights = false;
  /// --no-verify-weights: load without checking the tensors' bytes.
  bool skipWeightCheck = false;
  /// --max-length was given, not the default.
  bool maxLengthGiven = false;
  /// --vmap FILE: the vocabulary shortlist instead of the model's.
  std::string vmapPath;
  /// --continuous: --batch-size sentences decode at once, a sentence
  /// joining as soon as another finishes (a stream, tfm_stream).
  bool continuous = false;
  /// --format html: each input is one HTML document (or fragment) whose
  /// text is translated and its markup kept (tools/common/Html.h).
  bool html = false;
};

/// The options of `argv`; prints the help or the version and exits where
/// asked to, and exits with a message naming the option and its value when
/// one is wrong: an empty value of one that names something (a FILE, a
/// language CODE, target TOKENS) too.
Options parseCommandLine(int argc, char **argv);

/// --model-info: the compiled model's shape, precision, generation rules,
/// `languages` (lines the caller made) and backends.
void printModelInfo(const std::string &languages);

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_OPTIONS_H
