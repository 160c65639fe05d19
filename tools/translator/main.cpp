//===- main.cpp - The compiled translator's command line --------*- C++ -*-===//
//
// Reads one sentence a line (text, or token ids) from stdin or files and
// writes one translation a line in the same order. Linked by tfmc with the
// compiled model and the runtime; needs nothing else at run time but its
// weights and tokenizer (next to it, embedded in it, or named by --weights).
//
// Input is streamed: a window of lines is read, translated in batches of
// similar length, and written before the next is read, so memory does not
// grow with the input.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime.h"

#include "tfm/abi/EmbeddedFiles.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Vmap.h"
#include "tools/translator/Lines.h"
#include "tools/translator/Options.h"
#include "tools/translator/Output.h"
#include "tools/translator/Progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tfm_translator;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Lines read and translated together: a few batches, so that sentences of
/// similar length can share a batch.
constexpr size_t kBatchesPerWindow = 4;

/// This translator's executable, or empty if the system will not say.
std::string executablePath() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, n) : std::string();
}

/// The weights: embedded in this executable, or model.tfmw beside it.
std::string defaultWeights() {
  std::string self = executablePath();
  if (self.empty())
    return "model.tfmw";
  std::ifstream exe(self, std::ios::binary | std::ios::ate);
  tfm_runtime::EmbedTrailer trailer{};
  if (exe && exe.tellg() >= std::streamoff(sizeof trailer)) {
    exe.seekg(-std::streamoff(sizeof trailer), std::ios::end);
    exe.read(reinterpret_cast<char *>(&trailer), sizeof trailer);
    if (std::memcmp(trailer.magic, tfm_runtime::kEmbedMagic, 8) == 0)
      return self;
  }
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/') + 1);
  return dir + "model.tfmw";
}

/// An explicit --max-length beyond the model's positions cannot be met:
/// with --suppress-eos (exactly N tokens) that is an error, otherwise a
/// warning that the positions bound the length.
void checkMaxLength(const Options &o, const tfm_model_config &cfg) {
  if (!o.maxLengthGiven || o.search.max_length <= cfg.max_positions)
    return;
  std::string what =
      fmt::format("--max-length {} exceeds the model's {} positions",
                  o.search.max_length, cfg.max_positions);
  if (o.search.suppress_eos)
    die(what + ": --suppress-eos cannot decode that many tokens");
  if (!o.quiet)
    fmt::print(stderr,
               "translator: warning: {}; translations stop at {} tokens\n",
               what, cfg.max_positions);
}

/// One input line on its way through.
struct Sentence {
  Location where;
  std::vector<int32_t> ids;    // empty: a blank line, not translated
  std::vector<int32_t> prefix; // forced start of the translation
  struct Hypothesis {
    std::vector<int32_t> tokens;
    float score;
    std::vector<float> tokenScores;
  };
  std::vector<Hypothesis> nbest;
  std::vector<float> firstLogits;
  std::vector<int32_t> target; // --score: the translation scored
  int64_t index = 0; // in the input, lines counted from 0: seeds sampling
};

/// The model, its tokenizer, its languages and the formats they allow.
struct Session {
  tfm_model *model = nullptr;
  tfm_tokenizer *tokenizer = nullptr;
  tfm_languages *languages = nullptr;
  tfm_model_config cfg{};
  Format inputFormat, outputFormat;
  /// --source-lang and --target-lang's tokens (all empty without them).
  tfm_language_tokens languageTokens{};

  ~Session() {
    tfm_languages_close(languages);
    tfm_tokenizer_close(tokenizer);
    tfm_model_close(model);
  }
};

/// Opens the weights, checked unless told not to.
void openModel(Options &o, Session &s) {
  if (tfm_status status = tfm_set_num_threads(o.threads))
    die(tfm_status_message(status));
  if (o.weights.empty())
    o.weights = defaultWeights();
  auto open = o.verifyWeights || o.skipWeightCheck ? tfm_model_open_unverified
                                                   : tfm_model_open;
  if (tfm_status status = open(o.weights.c_str(), &s.model))
    die(tfm_status_message(status));
  tfm_model_get_config(s.model, &s.cfg);
}

/// Opens the tokenizer where text is in or out, or a --vmap's pieces need
/// ids, and settles the formats.
void openTokenizer(const Options &o, Session &s) {
  if (o.inputFormat != Format::Ids || o.outputFormat != Format::Ids ||
      !o.vmapPath.empty())
    if (tfm_status status =
            tfm_tokenizer_open(o.weights.c_str(), &s.cfg, &s.tokenizer))
      die(tfm_status_message(status));
  // Text by default when the model has a tokenizer; ids need none.
  Format fallback = s.tokenizer ? Format::Text : Format::Ids;
  s.inputFormat = o.inputFormat == Format::Default ? fallback : o.inputFormat;
  s.outputFormat =
      o.outputFormat == Format::Default ? fallback : o.outputFormat;
  if (!s.tokenizer &&
      (s.inputFormat == Format::Text || s.outputFormat == Format::Text))
    die(fmt::format("--{}-format text needs a tokenizer, and this model has "
                    "none (no source.spm, target.spm and vocab.json with "
                    "{}); use ids (tfmc carries the tokenizers of Marian, "
                    "M2M-100, NLLB, mBART-50 and T5; not BART's byte-level "
                    "BPE)",
                    s.inputFormat == Format::Text ? "input" : "output",
                    o.weights));
}

/// --vmap: its shortlist replaces the model's.
void readShortlist(const Options &o, Session &s) {
  if (o.vmapPath.empty())
    return;
  char *warning = nullptr;
  if (tfm_status status = tfm_model_read_vmap(s.model, o.vmapPath.c_str(),
                                              s.tokenizer, &warning))
    die(tfm_status_message(status));
  if (warning && !o.quiet)
    fmt::print(stderr, "translator: warning: {}\n", warning);
  tfm_free(warning);
}

/// The language tokens of --source-lang and --target-lang, each option
/// checked alone first so that an error names it.
void openLanguages(const Options &o, Session &s) {
  if (tfm_status status =
          tfm_languages_open(o.weights.c_str(), &s.cfg, &s.languages))
    die(tfm_status_message(status));
  const char *source = o.sourceLang.empty() ? nullptr : o.sourceLang.c_str();
  const char *target = o.targetLang.empty() ? nullptr : o.targetLang.c_str();
  for (bool isSource : {true, false}) {
    const char *option = isSource ? "--source-lang" : "--target-lang";
    const char *code = isSource ? source : target;
    if (!code)
      continue;
    if (!s.languages)
      die(fmt::format("{} {}: this model has no languages (a multilingual "
                      "model's come with its tokenizer's files; a model of "
                      "one pair gets them from tfmc compile --source-lang "
                      "--target-lang)",
                      option, code));
    if (tfm_status status =
            tfm_languages_tokens(s.languages, isSource ? code : nullptr,
                                 isSource ? nullptr : code, &s.languageTokens))
      die(fmt::format("{}: {} (--model-info lists them)", option,
                      tfm_status_message(status)));
  }
  if (s.languages)
    if (tfm_status status = tfm_languages_tokens(s.languages, source, target,
                                                 &s.languageTokens))
      die(tfm_status_message(status));
}

/// How many parallel regions a decoder step of one row begins: one greedy
/// step of a source of EOS alone, counted. Weights that cannot be read
/// leave the rest of --model-info to print.
std::string stepRegions(const Options &o) {
  Session s;
  tfm_status status = tfm_set_num_threads(o.threads);
  if (!status)
    status = tfm_model_open_unverified(o.weights.c_str(), &s.model);
  tfm_results *results = nullptr;
  if (!status) {
    tfm_model_get_config(s.model, &s.cfg);
    tfm_search_options search;
    tfm_search_options_default(&search);
    search.max_length = 1;
    int32_t eos = int32_t(s.cfg.eos_token_id), length = 1;
    const int32_t *sources[] = {&eos};
    status = tfm_translate(s.model, &search, sources, &length, 1, &results);
  }
  if (status) {
    std::string text =
        fmt::format("decoder step: parallel regions not counted ({})\n",
                    tfm_status_message(status));
    tfm_status_free(status);
    return text;
  }
  tfm_translate_timing t;
  tfm_results_timing(results, &t);
  tfm_results_free(results);
  if (t.parallel_regions < 0 || t.steps < 1)
    return "decoder step: parallel regions not counted (no OpenMP tool "
           "interface)\n";
  return fmt::format("decoder step: {} parallel regions at batch 1 (forks and "
                     "joins of the threads, {} threads)\n",
                     t.parallel_regions / t.steps, o.threads);
}

/// --model-info: what tfmc compiled in, with the languages of the
/// weights' tokenizer.tfm, and a decoder step's parallel regions.
int printModelInfo(Options &o) {
  if (o.weights.empty())
    o.weights = defaultWeights();
  const tfm_model_info &m = tfm_model_info_data;
  tfm_model_config cfg{};
  cfg.source_vocab_size = m.sourceVocabSize;
  cfg.target_vocab_size = m.targetVocabSize;
  cfg.eos_token_id = m.eosTokenId;
  cfg.pad_token_id = m.padTokenId;
  tfm_languages *languages = nullptr;
  if (tfm_status status =
          tfm_languages_open(o.weights.c_str(), &cfg, &languages))
    die(tfm_status_message(status));
  std::string text = "languages: none\n";
  int32_t source = -1, target = -1;
  if (languages)
    tfm_languages_pair(languages, &source, &target);
  if (source >= 0) {
    text = fmt::format("languages: {} -> {} (one pair)\n",
                       tfm_languages_code(languages, source),
                       tfm_languages_code(languages, target));
  } else if (languages) {
    int32_t count = tfm_languages_count(languages);
    text = fmt::format("languages: {} (code, token, other names)\n", count);
    for (int32_t i = 0; i < count; ++i)
      text += fmt::format("  {} {} {}\n", tfm_languages_code(languages, i),
                          tfm_languages_token(languages, i),
                          tfm_languages_names(languages, i));
  }
  tfm_languages_close(languages);
  text += stepRegions(o);
  tfm_translator::printModelInfo(text);
  return 0;
}

/// --verify-weights: every tensor checked and the result printed.
int verifyWeights(const Options &o, const Session &s) {
  int64_t tensors = 0, bytes = 0;
  if (tfm_status status = tfm_model_verify_weights(s.model, &tensors, &bytes))
    die(tfm_status_message(status));
  fmt::print("{}: {} tensors, {:.1f} MB: every checksum matches\n", o.weights,
             tensors, bytes / 1e6);
  return 0;
}

/// The next line of `file`, read in step with the `side` line at `where`
/// (its location in `at`); a file that ends first is an error naming
/// both, `what` saying what its lines give.
std::string companionLine(LineReader &file, const std::string &fileName,
                          const Location &where, const char *what,
                          const char *side, Location &at) {
  std::string line;
  if (!file.next(line, at))
    die(fmt::format("{}: no {} for this line: {} has fewer lines than the {}",
                    where.str(), what, fileName, side));
  return line;
}

/// The target prefix of each input line: --target-prefix for all, or the
/// lines of --target-prefix-file in step with the input's.
class TargetPrefixes {
public:
  TargetPrefixes(const Options &o, const Session &s)
      : s(s), fileName(o.targetPrefixFile) {
    if (!o.targetPrefixFile.empty()) {
      file.emplace(std::vector<std::string>{o.targetPrefixFile});
      file->checkReadable();
    } else if (!o.targetPrefix.empty()) {
      fixed = parse(o.targetPrefix, "--target-prefix");
    }
  }

  /// The prefix for the input line at `where`: the target language's
  /// token, then the line's own.
  std::vector<int32_t> next(const Location &where) {
    const tfm_language_tokens &t = s.languageTokens;
    std::vector<int32_t> prefix(t.target_prefix,
                                t.target_prefix + t.target_prefix_length);
    if (!file) {
      prefix.insert(prefix.end(), fixed.begin(), fixed.end());
      return prefix;
    }
    Location at{};
    std::string line =
        companionLine(*file, fileName, where, "target prefix", "input", at);
    std::vector<int32_t> own = parse(line, at.str());
    prefix.insert(prefix.end(), own.begin(), own.end());
    return prefix;
  }

  /// Fails when the prefix file has lines left over.
  void checkAllUsed() {
    std::string line;
    Location at{};
    if (file && file->next(line, at))
      die(fmt::format("{}: a target prefix beyond the input's last line",
                      at.str()));
  }

private:
  /// Space-separated target ids (ids output) or vocabulary pieces; EOS
  /// and padding are refused here, where the line is known (the runtime
  /// would name the sentence's place in its batch).
  std::vector<int32_t> parse(const std::string &text,
                             const std::string &where) const {
    std::vector<int32_t> ids;
    std::istringstream words(text);
    for (std::string word; words >> word;) {
      int32_t id = s.outputFormat == Format::Ids ? parseId(word, where)
                                                 : pieceId(word, where);
      if (id == s.cfg.eos_token_id || id == s.cfg.pad_token_id)
        die(fmt::format("{}: the target prefix holds '{}', the model's {}",
                        where, word,
                        id == s.cfg.eos_token_id ? "EOS" : "padding"));
      ids.push_back(id);
    }
    return ids;
  }
  int32_t parseId(const std::string &word, const std::string &where) const {
    char *stop = nullptr;
    errno = 0;
    long id = std::strtol(word.c_str(), &stop, 10);
    if (errno || *stop || id < 0 || id >= s.cfg.target_vocab_size)
      die(fmt::format("{}: '{}' is not a target token id in [0, {})", where,
                      word, s.cfg.target_vocab_size));
    return int32_t(id);
  }
  int32_t pieceId(const std::string &word, const std::string &where) const {
    int32_t id = 0;
    if (tfm_status status =
            tfm_tokenizer_piece_id(s.tokenizer, word.data(), word.size(), &id))
      die(fmt::format("{}: {}", where, tfm_status_message(status)));
    return id;
  }

  const Session &s;
  std::string fileName;
  std::optional<LineReader> file;
  std::vector<int32_t> fixed;
};

/// --score's targets: the lines of a second file in step with the
/// source's, or the part after the TAB of each source line (which keeps
/// the part before it).
class ScoredTargets {
public:
  explicit ScoredTargets(const Options &o) {
    if (o.inputs.size() == 2) {
      file.emplace(std::vector<std::string>{o.inputs[1]});
      file->checkReadable();
      fileName = o.inputs[1];
    }
  }

  /// The target text of the source line at `where`.
  std::string next(std::string &sourceLine, const Location &where) {
    if (!file) {
      size_t tab = sourceLine.find('\t');
      if (tab == std::string::npos)
        die(fmt::format("{}: --score expects SOURCE<TAB>TARGET lines (or a "
                        "source file and a target file); this line has no "
                        "TAB",
                        where.str()));
      std::string target = sourceLine.substr(tab + 1);
      sourceLine.resize(tab);
      return target;
    }
    Location at{};
    return companionLine(*file, fileName, where, "target", "source", at);
  }

  /// Fails when the target file has lines left over.
  void checkAllUsed() {
    std::string line;
    Location at{};
    if (file && file->next(line, at))
      die(fmt::format("{}: a target beyond the source's last line", at.str()));
  }

private:
  std::string fileName;
  std::optional<LineReader> file;
};

/// Translates (or scores) the input window by window and writes it.
class Run {
public:
  Run(const Options &o, Session &s, LineReader &reader)
      : o(o), s(s), reader(reader), prefixes(o, s),
        warnings(o.quiet, progress) {}

  void translateAll(Output &out, Output *logits);
  void scoreAll(Output &out);
  void printTiming(double loadSeconds) const;

private:
  std::vector<int32_t> sourceIds(std::string &line, const Location &where);
  std::vector<int32_t> parseIds(const std::string &line,
                                const Location &where) const;
  std::vector<int32_t> targetIds(std::string &line, const Location &where);
  std::string formatScores(const std::vector<Sentence> &sentences);
  void truncate(std::vector<int32_t> &ids, const Location &where);
  void translateWindow(std::vector<Sentence> &sentences, uint64_t start);
  void translateBatch(std::vector<Sentence> &sentences,
                      const std::vector<size_t> &batch);
  void keepResults(tfm_results *results, std::vector<Sentence> &sentences,
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

void Run::translateAll(Output &out, Output *logits) {
  uint64_t totalBytes = 0;
  if (!o.quiet && isatty(STDERR_FILENO) && reader.allFiles(totalBytes))
    progress.enable(totalBytes);
  const size_t window = size_t(o.batchSize) * kBatchesPerWindow;
  std::vector<Sentence> sentences;
  std::string line;
  Location where{};
  while (true) {
    sentences.clear();
    uint64_t windowStart = reader.bytesRead;
    while (sentences.size() < window && reader.next(line, where)) {
      Sentence &sentence = sentences.emplace_back();
      sentence.where = where;
      sentence.ids = sourceIds(line, where);
      sentence.prefix = prefixes.next(where);
      sentence.index = linesRead++;
    }
    if (sentences.empty())
      break;
    translateWindow(sentences, windowStart);
    out.write(format(sentences));
    out.flush();
    if (logits)
      for (const Sentence &sentence : sentences)
        logits->write(sentence.firstLogits.data(),
                      sentence.firstLogits.size() * sizeof(float));
    progress.update(reader.bytesRead, sentencesDone, tokensOut, false);
  }
  prefixes.checkAllUsed();
  progress.update(reader.bytesRead, sentencesDone, tokensOut, true);
  warnings.summarize();
}

/// --score: reads (source, target) pairs a window at a time, scores them
/// in batches as translateAll translates, and writes a score a line.
void Run::scoreAll(Output &out) {
  ScoredTargets targets(o);
  const size_t window = size_t(o.batchSize) * kBatchesPerWindow;
  std::vector<Sentence> sentences;
  std::string line;
  Location where{};
  while (true) {
    sentences.clear();
    uint64_t windowStart = reader.bytesRead;
    while (sentences.size() < window && reader.next(line, where)) {
      std::string target = targets.next(line, where);
      Sentence sentence{
          where, sourceIds(line, where), prefixes.next(where), {}, {}, {}};
      sentence.target = targetIds(target, where);
      sentences.push_back(std::move(sentence));
    }
    if (sentences.empty())
      break;
    translateWindow(sentences, windowStart);
    out.write(formatScores(sentences));
    out.flush();
  }
  targets.checkAllUsed();
  warnings.summarize();
}

/// A target to score: ids (with --output-format ids; a last EOS is
/// dropped, as ids output has none) or text cut by the target's
/// SentencePiece model, after the tokens translating forces first (the
/// target language's), which text output leaves out.
std::vector<int32_t> Run::targetIds(std::string &line, const Location &where) {
  std::vector<int32_t> ids;
  if (s.outputFormat == Format::Ids) {
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      char *stop = nullptr;
      errno = 0;
      long id = std::strtol(word.c_str(), &stop, 10);
      if (errno || *stop || id < 0 || id >= s.cfg.target_vocab_size)
        die(fmt::format("{}: target '{}' is not a target token id in [0, {})",
                        where.str(), word, s.cfg.target_vocab_size));
      ids.push_back(int32_t(id));
    }
    if (!ids.empty() && ids.back() == s.cfg.eos_token_id)
      ids.pop_back();
    return ids;
  }
  if (replaceInvalidUtf8(line))
    warnings.warn(where, "invalid UTF-8 in the target, bytes replaced by "
                         "U+FFFD");
  const tfm_language_tokens &t = s.languageTokens;
  ids.assign(t.target_prefix, t.target_prefix + t.target_prefix_length);
  int32_t *encoded = nullptr, length = 0;
  if (tfm_status status = tfm_tokenizer_encode_target(
          s.tokenizer, line.data(), line.size(), &encoded, &length))
    die(where.str() + ": " + tfm_status_message(status));
  ids.insert(ids.end(), encoded, encoded + length);
  tfm_free(encoded);
  return ids;
}

/// A score a line (0 for a blank source), with --token-scores a TAB and the
/// target's token scores.
std::string Run::formatScores(const std::vector<Sentence> &sentences) {
  std::string text;
  for (const Sentence &sentence : sentences) {
    ++sentencesDone;
    float score = 0;
    std::vector<float> tokenScores;
    if (!sentence.nbest.empty()) {
      score = sentence.nbest.front().score;
      tokenScores = sentence.nbest.front().tokenScores;
    }
    text += fmt::format("{:g}", double(score));
    if (o.tokenScores)
      text += "\t" + showScores(tokenScores);
    text += '\n';
  }
  return text;
}

/// The source ids of one line; empty for a blank line.
std::vector<int32_t> Run::sourceIds(std::string &line, const Location &where) {
  std::vector<int32_t> ids;
  if (s.inputFormat == Format::Text) {
    if (replaceInvalidUtf8(line))
      warnings.warn(where, "invalid UTF-8, bytes replaced by U+FFFD");
    if (isBlank(line))
      return ids;
    // The source language's frame; without languages the tokenizer's.
    const tfm_language_tokens *frame =
        s.languages ? &s.languageTokens : nullptr;
    int32_t *encoded = nullptr, length = 0;
    if (tfm_status status = tfm_tokenizer_encode_framed(
            s.tokenizer, frame, line.data(), line.size(), &encoded, &length))
      die(where.str() + ": " + tfm_status_message(status));
    ids.assign(encoded, encoded + length);
    tfm_free(encoded);
  } else {
    ids = parseIds(line, where);
  }
  truncate(ids, where);
  return ids;
}

/// Space-separated token ids; EOS appended where the line does not end in
/// it, since the model reads sentences that end in EOS (as the tokenizer
/// and the Python API give them).
std::vector<int32_t> Run::parseIds(const std::string &line,
                                   const Location &where) const {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while ((pos = line.find_first_not_of(" \t\r\v\f", pos)) !=
         std::string::npos) {
    size_t end = line.find_first_of(" \t\r\v\f", pos);
    std::string token = line.substr(pos, end - pos);
    pos = end;
    char *stop = nullptr;
    errno = 0;
    long id = std::strtol(token.c_str(), &stop, 10);
    if (errno || *stop || id < 0 || id >= s.cfg.source_vocab_size)
      die(fmt::format("{}: '{}' is not a token id in [0, {})", where.str(),
                      token, s.cfg.source_vocab_size));
    ids.push_back(int32_t(id));
  }
  if (!ids.empty() && ids.back() != s.cfg.eos_token_id)
    ids.push_back(int32_t(s.cfg.eos_token_id));
  return ids;
}

/// A sentence longer than the model's positions keeps its start and its
/// end: EOS stays last.
void Run::truncate(std::vector<int32_t> &ids, const Location &where) {
  if (int64_t(ids.size()) <= s.cfg.max_positions)
    return;
  warnings.warn(where, "{} tokens, truncated to the model's {} positions",
                ids.size(), s.cfg.max_positions);
  bool endsInEos = ids.back() == s.cfg.eos_token_id;
  ids.resize(s.cfg.max_positions);
  if (endsInEos)
    ids.back() = int32_t(s.cfg.eos_token_id);
}

/// Batches of similar lengths pad less; results do not depend on them.
void Run::translateWindow(std::vector<Sentence> &sentences, uint64_t start) {
  std::vector<size_t> order;
  for (size_t i = 0; i < sentences.size(); ++i)
    if (!sentences[i].ids.empty())
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return sentences[x].ids.size() < sentences[y].ids.size();
  });
  uint64_t windowBytes = reader.bytesRead - start;
  for (size_t begin = 0; begin < order.size(); begin += size_t(o.batchSize)) {
    size_t end = std::min(order.size(), begin + size_t(o.batchSize));
    translateBatch(sentences, {order.begin() + begin, order.begin() + end});
    // The input translated so far, counting this window's share.
    progress.update(start + windowBytes * end / order.size(),
                    sentencesDone + end, tokensOut, false);
  }
}

void Run::translateBatch(std::vector<Sentence> &sentences,
                         const std::vector<size_t> &batch) {
  std::vector<const int32_t *> sources, prefixes, targets;
  std::vector<int32_t> lengths, prefixLengths, targetLengths;
  std::vector<int64_t> indexes;
  for (size_t index : batch) {
    const Sentence &sentence = sentences[index];
    indexes.push_back(sentence.index);
    sources.push_back(sentence.ids.data());
    lengths.push_back(int32_t(sentence.ids.size()));
    prefixes.push_back(sentence.prefix.data());
    prefixLengths.push_back(int32_t(sentence.prefix.size()));
    targets.push_back(sentence.target.data());
    targetLengths.push_back(int32_t(sentence.target.size()));
  }
  tfm_batch request{int32_t(sources.size()),
                    sources.data(),
                    lengths.data(),
                    prefixes.data(),
                    prefixLengths.data(),
                    o.score ? targets.data() : nullptr,
                    o.score ? targetLengths.data() : nullptr,
                    indexes.data()};
  tfm_results *results = nullptr;
  auto start = Clock::now();
  auto run = o.score ? tfm_score_batch : tfm_translate_batch;
  if (tfm_status status = run(s.model, &o.search, &request, &results))
    die(fmt::format("{} (in a batch of {}): {}",
                    sentences[batch.front()].where.str(), sources.size(),
                    tfm_status_message(status)));
  translateSeconds += secondsSince(start);
  keepResults(results, sentences, batch);
  tfm_results_free(results);
}

void Run::keepResults(tfm_results *results, std::vector<Sentence> &sentences,
                      const std::vector<size_t> &batch) {
  tfm_translate_timing t;
  tfm_results_timing(results, &t);
  parts.encode += t.encode;
  parts.decode += t.decode;
  parts.search += t.search;
  parts.scan += t.scan;
  parts.caches += t.caches;
  parts.steps += t.steps;
  parts.row_steps += t.row_steps;
  parts.parallel_regions =
      t.parallel_regions < 0 ? -1 : parts.parallel_regions + t.parallel_regions;
  outputTokens.push_back(t.output_tokens);
  for (size_t k = 0; k < batch.size(); ++k) {
    Sentence &sentence = sentences[batch[k]];
    int32_t index = int32_t(k);
    int32_t count =
        std::min(tfm_results_count(results, index), o.search.n_best);
    for (int32_t rank = 0; rank < count; ++rank) {
      int32_t length = 0;
      const int32_t *tokens = tfm_results_tokens(results, index, rank, &length);
      int32_t scored = 0;
      const float *tokenScores =
          tfm_results_token_scores(results, index, rank, &scored);
      sentence.nbest.push_back({std::vector<int32_t>(tokens, tokens + length),
                                tfm_results_score(results, index, rank),
                                {tokenScores, tokenScores + scored}});
    }
    if (!sentence.nbest.empty())
      tokensOut += sentence.nbest.front().tokens.size();
    if (!o.logitsPath.empty()) {
      const float *logits = tfm_results_first_logits(results, index);
      sentence.firstLogits.assign(logits, logits + s.cfg.target_vocab_size);
    }
  }
}

/// The window's output lines: a translation a line (after its score and a
/// TAB with --with-scores), or with --n-best "INDEX ||| TRANSLATION |||
/// SCORE" lines; --token-scores adds the tokens' log-probabilities (a TAB
/// or " ||| " before them).
std::string Run::format(const std::vector<Sentence> &sentences) {
  // A blank line's one hypothesis: empty, scored 0.
  static const std::vector<Sentence::Hypothesis> blank{{{}, 0.0f, {}}};
  std::string text;
  for (const Sentence &sentence : sentences) {
    size_t index = sentencesDone++;
    const std::vector<Sentence::Hypothesis> &nbest =
        sentence.nbest.empty() ? blank : sentence.nbest;
    for (const Sentence::Hypothesis &h : nbest) {
      std::string hypothesis =
          h.tokens.empty() ? "" : show(h.tokens, sentence.where);
      if (o.search.n_best > 1)
        text += fmt::format("{} ||| {} ||| {:g}", index, hypothesis,
                            double(h.score));
      else if (o.withScores || o.tokenScores)
        text += fmt::format("{:g}\t{}", double(h.score), hypothesis);
      else
        text += hypothesis;
      if (o.tokenScores)
        text +=
            (o.search.n_best > 1 ? " ||| " : "\t") + showScores(h.tokenScores);
      text += '\n';
    }
  }
  return text;
}

std::string Run::showScores(const std::vector<float> &scores) {
  std::string text;
  for (float score : scores)
    text += fmt::format("{}{:g}", text.empty() ? "" : " ", double(score));
  return text;
}

std::string Run::show(const std::vector<int32_t> &tokens,
                      const Location &where) const {
  if (s.outputFormat == Format::Ids)
    return fmt::format("{}", fmt::join(tokens, " "));
  char *text = nullptr;
  size_t length = 0;
  if (tfm_status status = tfm_tokenizer_decode(
          s.tokenizer, tokens.data(), int32_t(tokens.size()), &text, &length))
    die(where.str() + ": " + tfm_status_message(status));
  std::string result(text, length);
  tfm_free(text);
  return result;
}

void Run::printTiming(double loadSeconds) const {
  fmt::print(stderr,
             "translator: load {:.4f} s, translate {:.4f} s, {} lines\n",
             loadSeconds, translateSeconds, sentencesDone);
  fmt::print(stderr,
             "translator: encode {:.4f} s, decode {:.4f} s in {} steps of {} "
             "rows in all, search {:.4f} s (row scans {:.4f} s), cache moves "
             "{:.4f} s\n",
             parts.encode, parts.decode, parts.steps, parts.row_steps,
             parts.search, parts.scan, parts.caches);
  if (parts.parallel_regions >= 0 && parts.steps > 0)
    fmt::print(stderr,
               "translator: {:.1f} parallel regions a decoder step (forks "
               "and joins of the threads)\n",
               double(parts.parallel_regions) / double(parts.steps));
  if (outputTokens.empty())
    return;
  std::vector<int64_t> sorted = outputTokens;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2,
                   sorted.end());
  fmt::print(stderr,
             "translator: output projection over a median {} of {} target "
             "tokens a batch ({} batches{})\n",
             sorted[sorted.size() / 2], s.cfg.target_vocab_size,
             outputTokens.size(),
             tfm_model_has_vmap(s.model) && o.search.use_vmap
                 ? ", vocabulary shortlist"
                 : "");
}

/// Every file the run reads, which no output may overwrite: the inputs,
/// the model's files (the translator, its weights and the files beside
/// them that tfmc writes), the companion inputs.
tfm_tools::ReadFiles filesRead(const Options &o) {
  tfm_tools::ReadFiles reads;
  if (o.inputs.empty())
    reads.addFile("-", "standard input");
  for (const std::string &input : o.inputs)
    reads.addFile(input, "the input file");
  reads.addFile(o.weights, "the weights file");
  reads.addFile(executablePath(), "the translator");
  std::string modelDir = o.weights.substr(0, o.weights.rfind('/') + 1);
  for (const char *name :
       {"translator", "libtranslator.so", "model.tfmw",
        tfm_runtime::kTokenizerInfoName, "source.spm", "target.spm",
        "vocab.json", "sentencepiece.bpe.model", "spiece.model",
        tfm_runtime::kVmapFileName, tfm_runtime::kVmapTextFileName})
    reads.addFile(modelDir + name, "the model's file");
  reads.addFile(o.targetPrefixFile, "--target-prefix-file");
  reads.addFile(o.vmapPath, "--vmap");
  return reads;
}

} // namespace

int main(int argc, char **argv) {
  std::signal(SIGPIPE, SIG_DFL); // `| head` ends us quietly
  auto started = Clock::now();
  Options o = parseCommandLine(argc, argv);
  // Before OpenMP starts (tfm_set_num_threads starts it).
  if (o.timing || o.modelInfo)
    tfm_count_parallel_regions();
  if (o.modelInfo)
    return printModelInfo(o);
  // --score reads its sources from the first input (the second holds the
  // targets, if given).
  LineReader reader(o.score && !o.inputs.empty()
                        ? std::vector<std::string>{o.inputs[0]}
                        : o.inputs);
  reader.checkReadable();
  Session s;
  openModel(o, s);
  if (o.verifyWeights)
    return verifyWeights(o, s);
  openTokenizer(o, s);
  readShortlist(o, s);
  openLanguages(o, s);
  checkMaxLength(o, s.cfg);
  double loadSeconds = secondsSince(started);

  tfm_tools::ReadFiles readFiles = filesRead(o);
  Output out(o.output, readFiles);
  std::optional<Output> logits;
  if (!o.logitsPath.empty())
    logits.emplace(o.logitsPath, readFiles);

  Run run(o, s, reader);
  if (o.score)
    run.scoreAll(out);
  else
    run.translateAll(out, logits ? &*logits : nullptr);
  out.close();
  if (logits)
    logits->close();
  if (o.timing)
    run.printTiming(loadSeconds);
  return 0;
}
