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

#include "tfm/abi/ModelInfo.h"
#include "tools/translator/Lines.h"
#include "tools/translator/Output.h"
#include "tools/translator/Progress.h"
#include "tools/Version.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tfm_translator;

namespace {

const char *kHelp = R"(usage: translator [options] [INPUT...]

Translates the lines of the INPUT files (default, or '-': stdin), one
sentence a line, and writes one translation a line in the same order. Blank
lines give empty lines. Text is UTF-8; invalid bytes are replaced by U+FFFD
and a line longer than the model's positions is cut, each with a warning.

options:
      --input-format text|ids   sentences as text, or as space-separated
                           source token ids; EOS is appended to a line
                           that does not end in it, as text input and the
                           Python API do   [text if the model has a
                           tokenizer, else ids]
      --output-format text|ids  translations as text or token ids, without
                           EOS (ids output is valid ids input) [likewise]
  -b, --beam-size N        beam width (1: greedy)              [1]
  -n, --n-best N           print the N best hypotheses of each sentence as
                           "INDEX ||| TRANSLATION ||| SCORE" lines [1]
      --batch-size N       sentences decoded together           [32]
      --max-length N       at most N target tokens, EOS included [256]
      --max-length-ratio R also at most R * source tokens + 5 (0: off) [3]
      --min-length N       no EOS before N tokens               [0]
      --length-penalty A   beam scores: sum(log p) / length^A   [1.0]
      --suppress-eos       never end a sentence: decode exactly --max-length
                           tokens (benchmarks)
      --threads N          worker threads                       [2]
      --weights FILE       the weights file (default: embedded, else
                           model.tfmw next to the translator); the tokenizer
                           (source.spm, target.spm, vocab.json) is looked for
                           in the same file or beside it
  -o, --output FILE        write translations to FILE (default: stdout);
                           a file is replaced only when the run succeeds,
                           and an input file is never an output
  -q, --quiet              no warnings, no progress (errors still print)
      --timing             report load and translation seconds on stderr,
                           then the seconds of the encoder, the decoder
                           steps (and the rows they ran), the search and
                           the cache moves
      --dump-first-logits FILE
                           write each sentence's first-step logits (f32,
                           little-endian) to FILE, for testing
      --model-info         print the compiled model's shape and which backend
                           (our code, oneDNN) runs each op kind, and exit
      --verify-weights     check every tensor of the weights against the
                           checksums tfmc recorded, name the damaged ones,
                           and exit (every load does this check too)
      --no-verify-weights  load without checking the tensors' bytes (the
                           header and the tensor table are still checked):
                           for weights verified otherwise
      --version            print the version of tfmc that built this
                           translator, and exit
  -h, --help               this text

Generation follows the checkpoint's config.json as Hugging Face's generate
reads it: a sentence that reaches its length limit ends with the
forced_eos_token_id if one is set (so it keeps at most N - 1 tokens), and
the bad_words_ids are never generated; --model-info shows both.

When stderr is a terminal and the input comes from files, a progress line
shows the sentences done, sentences/s and output tokens/s.
)";

/// What tfmc compiled into this binary: the architecture and the backend
/// chosen for each op kind and shape (tfmc --print-backends).
void printModelInfo() {
  const tfm_model_info &m = tfm_model_info_data;
  std::printf("model: d_model %lld, %lld encoder + %lld decoder layers, "
              "%lld heads, vocabulary %lld -> %lld, %lld positions\n",
              (long long)m.dModel, (long long)m.encoderLayers,
              (long long)m.decoderLayers, (long long)m.encoderHeads,
              (long long)m.sourceVocabSize, (long long)m.targetVocabSize,
              (long long)m.maxPositions);
  std::printf("precision: %s\n", tfm_runtime::precisionName(m.precision));
  if (m.forcedEosTokenId >= 0)
    std::printf("forced EOS at the length limit: %lld\n",
                (long long)m.forcedEosTokenId);
  else
    std::printf("forced EOS at the length limit: none\n");
  std::printf("bad words:");
  if (tfm_model_bad_words[0] == 0)
    std::printf(" none");
  for (int64_t i = 0, at = 1; i < tfm_model_bad_words[0]; ++i) {
    int64_t length = tfm_model_bad_words[at++];
    std::printf(" [");
    for (int64_t j = 0; j < length; ++j)
      std::printf(j ? " %lld" : "%lld", (long long)tfm_model_bad_words[at++]);
    std::printf("]");
  }
  std::printf("\n");
  std::printf("backends:\n%s", tfm_model_backends);
}

/// An explicit --max-length beyond the model's positions cannot be met:
/// with --suppress-eos (exactly N tokens) that is an error, otherwise a
/// warning that the positions bound the length.
void checkMaxLength(const tfm_search_options &opts,
                    const tfm_model_config &cfg, bool given, bool quiet) {
  if (!given || opts.max_length <= cfg.max_positions)
    return;
  std::string what = "--max-length " + std::to_string(opts.max_length) +
                     " exceeds the model's " +
                     std::to_string(cfg.max_positions) + " positions";
  if (opts.suppress_eos)
    die(what + ": --suppress-eos cannot decode that many tokens");
  if (!quiet)
    std::fprintf(stderr, "translator: warning: %s; translations stop at %lld "
                         "tokens\n",
                 what.c_str(), (long long)cfg.max_positions);
}

/// Lines read and translated together: a few batches, so that sentences of
/// similar length can share a batch.
constexpr size_t kBatchesPerWindow = 4;

long parseInt(const char *flag, const char *value, long min) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(value, &end, 10);
  if (errno || end == value || *end || v < min)
    die(std::string(flag) + " expects an integer >= " + std::to_string(min) +
        ", found '" + value + "'");
  return v;
}

/// A finite number, at least `min` if one is given; NaN and infinities
/// are refused.
float parseFloat(const char *flag, const char *value,
                 std::optional<float> min = std::nullopt) {
  char *end = nullptr;
  float v = std::strtof(value, &end);
  if (end == value || *end || !std::isfinite(v))
    die(std::string(flag) + " expects a finite number, found '" + value +
        "'");
  if (min && v < *min)
  {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", double(*min));
    die(std::string(flag) + " expects a number >= " + bound + ", found '" +
        value + "'");
  }
  return v;
}

enum class Format { Default, Text, Ids };

Format parseFormat(const char *flag, const char *value) {
  std::string v = value;
  if (v == "text")
    return Format::Text;
  if (v == "ids")
    return Format::Ids;
  die(std::string(flag) + " expects 'text' or 'ids', found '" + v + "'");
}

/// The weights: embedded in this executable, or model.tfmw beside it.
std::string defaultWeights() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return "model.tfmw";
  self[n] = 0;
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

/// One input line on its way through.
struct Sentence {
  Location where;
  std::vector<int32_t> ids; // empty: a blank line, not translated
  struct Hypothesis {
    std::vector<int32_t> tokens;
    float score;
  };
  std::vector<Hypothesis> nbest;
  std::vector<float> firstLogits;
};

} // namespace

int main(int argc, char **argv) {
  std::signal(SIGPIPE, SIG_DFL); // `| head` ends us quietly
  tfm_search_options opts;
  tfm_search_options_default(&opts);
  long batchSize = 32, threads = 2;
  std::vector<std::string> inputs;
  std::string output, weights, logitsPath;
  Format inputFormat = Format::Default, outputFormat = Format::Default;
  bool timing = false, quiet = false, verifyWeights = false;
  bool maxLengthGiven = false, skipWeightCheck = false;
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto started = now();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        die(a + " expects a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("translator compiled by tfmc %s (commit %s)\n",
                  TFM_VERSION, TFM_COMMIT);
      return 0;
    } else if (a == "--model-info") {
      printModelInfo();
      return 0;
    } else if (a == "--input-format") {
      inputFormat = parseFormat("--input-format", value());
    } else if (a == "--output-format") {
      outputFormat = parseFormat("--output-format", value());
    } else if (a == "-b" || a == "--beam-size") {
      opts.beam_size = int32_t(parseInt("--beam-size", value(), 1));
    } else if (a == "-n" || a == "--n-best") {
      opts.n_best = int32_t(parseInt("--n-best", value(), 1));
    } else if (a == "--batch-size") {
      batchSize = parseInt("--batch-size", value(), 1);
    } else if (a == "--max-length") {
      opts.max_length = int32_t(parseInt("--max-length", value(), 1));
      maxLengthGiven = true;
    } else if (a == "--max-length-ratio") {
      opts.max_length_ratio = parseFloat("--max-length-ratio", value(), 0.0f);
    } else if (a == "--min-length") {
      opts.min_length = int32_t(parseInt("--min-length", value(), 0));
    } else if (a == "--length-penalty") {
      opts.length_penalty = parseFloat("--length-penalty", value());
    } else if (a == "--suppress-eos") {
      opts.suppress_eos = 1;
    } else if (a == "--threads") {
      threads = parseInt("--threads", value(), 1);
    } else if (a == "--weights") {
      weights = value();
    } else if (a == "-o" || a == "--output") {
      output = value();
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (a == "--timing") {
      timing = true;
    } else if (a == "--verify-weights") {
      verifyWeights = true;
    } else if (a == "--no-verify-weights") {
      skipWeightCheck = true;
    } else if (a == "--dump-first-logits") {
      logitsPath = value();
    } else if (a.size() > 1 && a[0] == '-') {
      die("unknown option '" + a + "'; see --help");
    } else {
      inputs.push_back(a);
    }
  }
  if (opts.n_best > opts.beam_size)
    die("--n-best " + std::to_string(opts.n_best) + " exceeds --beam-size " +
        std::to_string(opts.beam_size));
  LineReader reader(inputs);
  reader.checkReadable();

  if (tfm_status s = tfm_set_num_threads(int32_t(threads)))
    die(tfm_status_message(s));
  if (weights.empty())
    weights = defaultWeights();
  tfm_model *model = nullptr;
  auto open = verifyWeights || skipWeightCheck ? tfm_model_open_unverified
                                                : tfm_model_open;
  if (tfm_status s = open(weights.c_str(), &model))
    die(tfm_status_message(s));
  if (verifyWeights) {
    int64_t tensors = 0, bytes = 0;
    if (tfm_status s = tfm_model_verify_weights(model, &tensors, &bytes))
      die(tfm_status_message(s));
    std::printf("%s: %lld tensors, %.1f MB: every checksum matches\n",
                weights.c_str(), static_cast<long long>(tensors), bytes / 1e6);
    tfm_model_close(model);
    return 0;
  }
  tfm_model_config cfg;
  tfm_model_get_config(model, &cfg);
  checkMaxLength(opts, cfg, maxLengthGiven, quiet);

  // Text by default when the model has a tokenizer; ids need none.
  tfm_tokenizer *tokenizer = nullptr;
  if (inputFormat != Format::Ids || outputFormat != Format::Ids)
    if (tfm_status s = tfm_tokenizer_open(weights.c_str(), &cfg, &tokenizer))
      die(tfm_status_message(s));
  Format fallback = tokenizer ? Format::Text : Format::Ids;
  if (inputFormat == Format::Default)
    inputFormat = fallback;
  if (outputFormat == Format::Default)
    outputFormat = fallback;
  if (!tokenizer &&
      (inputFormat == Format::Text || outputFormat == Format::Text))
    die(std::string("--") + (inputFormat == Format::Text ? "input" : "output") +
        "-format text needs a tokenizer, and this model has none (no "
        "source.spm, target.spm and vocab.json with " +
        weights + "); use ids");
  auto loaded = now();
  double translateSeconds = 0;
  tfm_translate_timing parts{}; // summed over the batches

  // Every file the run reads: no output may overwrite one.
  std::vector<std::string> readPaths = inputs.empty()
                                           ? std::vector<std::string>{"-"}
                                           : inputs;
  readPaths.push_back(weights);
  std::vector<InputFile> readFiles = regularFiles(readPaths);
  Output out(output, readFiles);
  std::optional<Output> logitsFile;
  if (!logitsPath.empty())
    logitsFile.emplace(logitsPath, readFiles);
  Progress progress;
  uint64_t totalBytes = 0;
  if (!quiet && isatty(STDERR_FILENO) && reader.allFiles(totalBytes))
    progress.enable(totalBytes);
  Warnings warnings(quiet, progress);

  // The source ids of one line; empty for a blank line.
  auto sourceIds = [&](std::string &line, const Location &where) {
    std::vector<int32_t> ids;
    if (inputFormat == Format::Text) {
      if (replaceInvalidUtf8(line))
        warnings.warn(where, "invalid UTF-8, bytes replaced by U+FFFD");
      if (isBlank(line))
        return ids;
      int32_t *encoded = nullptr, length = 0;
      if (tfm_status s = tfm_tokenizer_encode(tokenizer, line.data(),
                                              line.size(), &encoded, &length))
        die(where.str() + ": " + tfm_status_message(s));
      ids.assign(encoded, encoded + length);
      tfm_free(encoded);
    } else {
      size_t pos = 0;
      while ((pos = line.find_first_not_of(" \t\r\v\f", pos)) !=
             std::string::npos) {
        size_t end = line.find_first_of(" \t\r\v\f", pos);
        std::string tok = line.substr(pos, end - pos);
        pos = end;
        char *stop = nullptr;
        errno = 0;
        long id = std::strtol(tok.c_str(), &stop, 10);
        if (errno || *stop || id < 0 || id >= cfg.source_vocab_size)
          die(where.str() + ": '" + tok + "' is not a token id in [0, " +
              std::to_string(cfg.source_vocab_size) + ")");
        ids.push_back(int32_t(id));
      }
      // The model reads sentences that end in EOS, as the tokenizer and
      // the Python API give them.
      if (!ids.empty() && ids.back() != cfg.eos_token_id)
        ids.push_back(int32_t(cfg.eos_token_id));
    }
    if (int64_t(ids.size()) > cfg.max_positions) {
      warnings.warn(where,
                    "%zu tokens, truncated to the model's %lld positions",
                    ids.size(), (long long)cfg.max_positions);
      // Keep the sentence's end: EOS stays last.
      bool endsInEos = ids.back() == cfg.eos_token_id;
      ids.resize(cfg.max_positions);
      if (endsInEos)
        ids.back() = int32_t(cfg.eos_token_id);
    }
    return ids;
  };

  auto show = [&](const std::vector<int32_t> &tokens, const Location &where) {
    if (outputFormat == Format::Ids) {
      std::string text;
      for (size_t t = 0; t < tokens.size(); ++t)
        text += (t ? " " : "") + std::to_string(tokens[t]);
      return text;
    }
    char *text = nullptr;
    size_t length = 0;
    if (tfm_status s = tfm_tokenizer_decode(
            tokenizer, tokens.data(), int32_t(tokens.size()), &text, &length))
      die(where.str() + ": " + tfm_status_message(s));
    std::string result(text, length);
    tfm_free(text);
    return result;
  };

  const size_t window = size_t(batchSize) * kBatchesPerWindow;
  size_t sentencesDone = 0, tokensOut = 0;
  std::string line;
  Location where{};
  std::vector<Sentence> sentences;
  while (true) {
    sentences.clear();
    uint64_t windowStart = reader.bytesRead;
    while (sentences.size() < window && reader.next(line, where))
      sentences.push_back({where, sourceIds(line, where), {}, {}});
    if (sentences.empty())
      break;
    // The input translated so far, counting this window's share.
    auto bytesDone = [&, windowEnd = reader.bytesRead](size_t done, size_t of) {
      return windowStart +
             (windowEnd - windowStart) * done / std::max<size_t>(of, 1);
    };

    // Batches of similar lengths pad less; results do not depend on them.
    std::vector<size_t> order;
    for (size_t i = 0; i < sentences.size(); ++i)
      if (!sentences[i].ids.empty())
        order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return sentences[x].ids.size() < sentences[y].ids.size();
    });
    for (size_t begin = 0; begin < order.size(); begin += size_t(batchSize)) {
      size_t end = std::min(order.size(), begin + size_t(batchSize));
      std::vector<const int32_t *> ptrs;
      std::vector<int32_t> lengths;
      for (size_t k = begin; k < end; ++k) {
        ptrs.push_back(sentences[order[k]].ids.data());
        lengths.push_back(int32_t(sentences[order[k]].ids.size()));
      }
      tfm_results *results = nullptr;
      auto batchStart = now();
      if (tfm_status s =
              tfm_translate(model, &opts, ptrs.data(), lengths.data(),
                            int32_t(ptrs.size()), &results))
        die(sentences[order[begin]].where.str() + " (in a batch of " +
            std::to_string(ptrs.size()) + "): " + tfm_status_message(s));
      translateSeconds +=
          std::chrono::duration<double>(now() - batchStart).count();
      tfm_translate_timing batchTiming;
      tfm_results_timing(results, &batchTiming);
      parts.encode += batchTiming.encode;
      parts.decode += batchTiming.decode;
      parts.search += batchTiming.search;
      parts.scan += batchTiming.scan;
      parts.caches += batchTiming.caches;
      parts.steps += batchTiming.steps;
      parts.row_steps += batchTiming.row_steps;
      for (size_t k = begin; k < end; ++k) {
        Sentence &s = sentences[order[k]];
        int32_t index = int32_t(k - begin);
        int32_t count =
            std::min(tfm_results_count(results, index), opts.n_best);
        for (int32_t rank = 0; rank < count; ++rank) {
          int32_t len = 0;
          const int32_t *toks = tfm_results_tokens(results, index, rank, &len);
          s.nbest.push_back({std::vector<int32_t>(toks, toks + len),
                             tfm_results_score(results, index, rank)});
        }
        if (!s.nbest.empty())
          tokensOut += s.nbest.front().tokens.size();
        if (logitsFile) {
          const float *logits = tfm_results_first_logits(results, index);
          s.firstLogits.assign(logits, logits + cfg.target_vocab_size);
        }
      }
      tfm_results_free(results);
      progress.update(bytesDone(end, order.size()), sentencesDone + end,
                      tokensOut, false);
    }

    std::string text;
    for (Sentence &s : sentences) {
      size_t index = sentencesDone++;
      if (opts.n_best == 1) {
        text += s.nbest.empty() ? "" : show(s.nbest.front().tokens, s.where);
        text += '\n';
        continue;
      }
      if (s.nbest.empty()) // a blank line
        text += std::to_string(index) + " |||  ||| 0\n";
      for (const Sentence::Hypothesis &h : s.nbest) {
        char score[32];
        std::snprintf(score, sizeof score, "%g", h.score);
        text += std::to_string(index) + " ||| " + show(h.tokens, s.where) +
                " ||| " + score + "\n";
      }
    }
    out.write(text);
    out.flush();
    for (const Sentence &s : sentences)
      if (!s.firstLogits.empty())
        logitsFile->write(s.firstLogits.data(),
                          s.firstLogits.size() * sizeof(float));
    progress.update(bytesDone(1, 1), sentencesDone, tokensOut, false);
  }
  out.close();
  if (logitsFile)
    logitsFile->close();
  progress.update(reader.bytesRead, sentencesDone, tokensOut, true);
  warnings.summarize();
  tfm_tokenizer_close(tokenizer);
  tfm_model_close(model);
  if (timing) {
    std::fprintf(stderr,
                 "translator: load %.4f s, translate %.4f s, %zu lines\n",
                 std::chrono::duration<double>(loaded - started).count(),
                 translateSeconds, sentencesDone);
    std::fprintf(stderr,
                 "translator: encode %.4f s, decode %.4f s in %lld steps of "
                 "%lld rows in all, search %.4f s (row scans %.4f s), "
                 "cache moves %.4f s\n",
                 parts.encode, parts.decode, (long long)parts.steps,
                 (long long)parts.row_steps, parts.search, parts.scan,
                 parts.caches);
  }
  return 0;
}
