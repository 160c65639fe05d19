//===- main.cpp - The compiled translator's command line -----------*- C++ -*-===//
//
// Reads one sentence a line (token ids, EOS last as the model expects) and
// writes one translation a line in the same order. Linked by tfmc with the
// compiled model and the runtime; needs nothing else at run time but its
// weights (next to it, embedded in it, or named by --weights).
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime.h"

#include "runtime/src/ModelInfo.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

const char *kHelp = R"(usage: translator [options] [INPUT]

Translates INPUT (default: stdin), one sentence of space-separated token ids
a line, and writes one translation a line (token ids) in the same order.

options:
  -b, --beam-size N        beam width (1: greedy)              [1]
  -n, --n-best N           print the N best hypotheses of each sentence as
                           "INDEX ||| TOKENS ||| SCORE" lines     [1]
      --batch-size N       sentences decoded together           [32]
      --max-length N       at most N target tokens              [256]
      --max-length-ratio R also at most R * source length + 5   [off]
      --min-length N       no EOS before N tokens               [0]
      --length-penalty A   beam scores: sum(log p) / length^A   [1.0]
      --suppress-eos       never end a sentence: decode exactly --max-length
                           tokens (benchmarks)
      --threads N          worker threads                       [2]
      --weights FILE       the weights file (default: embedded, else
                           model.tfmw next to the translator)
  -o, --output FILE        write translations to FILE (default: stdout)
      --timing             report load and translation seconds on stderr
      --dump-first-logits FILE
                           write each sentence's first-step logits (f32,
                           little-endian) to FILE, for testing
  -h, --help               this text
)";

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "translator: error: %s\n", message.c_str());
  std::exit(1);
}

long parseInt(const char *flag, const char *value, long min) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(value, &end, 10);
  if (errno || end == value || *end || v < min)
    die(std::string(flag) + " expects an integer >= " + std::to_string(min) +
        ", found '" + value + "'");
  return v;
}

float parseFloat(const char *flag, const char *value) {
  char *end = nullptr;
  float v = std::strtof(value, &end);
  if (end == value || *end)
    die(std::string(flag) + " expects a number, found '" + value + "'");
  return v;
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

struct Sentence {
  size_t line;
  std::vector<int32_t> ids;
};

} // namespace

int main(int argc, char **argv) {
  std::signal(SIGPIPE, SIG_DFL); // `| head` ends us quietly
  tfm_search_options opts;
  tfm_search_options_default(&opts);
  long batchSize = 32, threads = 2;
  std::string input, output, weights, logitsPath;
  bool timing = false;
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
    } else if (a == "-b" || a == "--beam-size") {
      opts.beam_size = int32_t(parseInt("--beam-size", value(), 1));
    } else if (a == "-n" || a == "--n-best") {
      opts.n_best = int32_t(parseInt("--n-best", value(), 1));
    } else if (a == "--batch-size") {
      batchSize = parseInt("--batch-size", value(), 1);
    } else if (a == "--max-length") {
      opts.max_length = int32_t(parseInt("--max-length", value(), 1));
    } else if (a == "--max-length-ratio") {
      opts.max_length_ratio = parseFloat("--max-length-ratio", value());
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
    } else if (a == "--timing") {
      timing = true;
    } else if (a == "--dump-first-logits") {
      logitsPath = value();
    } else if (a.size() > 1 && a[0] == '-') {
      die("unknown option '" + a + "'; see --help");
    } else if (input.empty()) {
      input = a;
    } else {
      die("more than one input file: '" + input + "' and '" + a + "'");
    }
  }
  if (opts.n_best > opts.beam_size)
    die("--n-best " + std::to_string(opts.n_best) +
        " exceeds --beam-size " + std::to_string(opts.beam_size));

  if (tfm_status s = tfm_set_num_threads(int32_t(threads)))
    die(tfm_status_message(s));
  tfm_model *model = nullptr;
  if (tfm_status s = tfm_model_open(
          (weights.empty() ? defaultWeights() : weights).c_str(), &model))
    die(tfm_status_message(s));
  tfm_model_config cfg;
  tfm_model_get_config(model, &cfg);
  auto loaded = now();
  double translateSeconds = 0;

  std::ifstream inFile;
  if (!input.empty()) {
    inFile.open(input);
    if (!inFile)
      die(input + ": cannot open: " + std::strerror(errno));
  }
  std::istream &in = input.empty() ? std::cin : inFile;
  std::ofstream outFile;
  if (!output.empty()) {
    outFile.open(output);
    if (!outFile)
      die(output + ": cannot write: " + std::strerror(errno));
  }
  std::ostream &out = output.empty() ? std::cout : outFile;
  std::ofstream logitsFile;
  if (!logitsPath.empty()) {
    logitsFile.open(logitsPath, std::ios::binary);
    if (!logitsFile)
      die(logitsPath + ": cannot write");
  }
  const std::string where = input.empty() ? "stdin" : input;

  // Reads batches of lines, translates the non-empty ones, writes all of
  // them in input order; memory stays bounded by the batch size.
  size_t lineNo = 0;
  std::string line;
  bool more = true;
  while (more) {
    std::vector<Sentence> batch;
    std::vector<bool> empty;
    while (batch.size() < size_t(batchSize) && (more = bool(std::getline(in, line)))) {
      ++lineNo;
      std::istringstream tokens(line);
      Sentence s{lineNo, {}};
      std::string tok;
      while (tokens >> tok) {
        char *end = nullptr;
        errno = 0;
        long id = std::strtol(tok.c_str(), &end, 10);
        if (errno || *end || id < 0 || id >= cfg.source_vocab_size)
          die(where + ":" + std::to_string(lineNo) + ": '" + tok +
              "' is not a token id in [0, " +
              std::to_string(cfg.source_vocab_size) + ")");
        s.ids.push_back(int32_t(id));
      }
      if (int64_t(s.ids.size()) > cfg.max_positions) {
        std::fprintf(stderr,
                     "translator: warning: %s:%zu: %zu tokens, truncated to "
                     "the model's %lld positions\n",
                     where.c_str(), lineNo, s.ids.size(),
                     (long long)cfg.max_positions);
        s.ids.resize(cfg.max_positions);
      }
      empty.push_back(s.ids.empty());
      batch.push_back(std::move(s));
    }
    std::vector<const int32_t *> ptrs;
    std::vector<int32_t> lengths;
    std::vector<size_t> which;
    for (size_t i = 0; i < batch.size(); ++i)
      if (!empty[i]) {
        ptrs.push_back(batch[i].ids.data());
        lengths.push_back(int32_t(batch[i].ids.size()));
        which.push_back(i);
      }
    tfm_results *results = nullptr;
    auto batchStart = now();
    if (!ptrs.empty())
      if (tfm_status s = tfm_translate(model, &opts, ptrs.data(),
                                       lengths.data(), int32_t(ptrs.size()),
                                       &results))
        die(where + ": lines " + std::to_string(batch.front().line) + "-" +
            std::to_string(batch.back().line) + ": " + tfm_status_message(s));
    translateSeconds +=
        std::chrono::duration<double>(now() - batchStart).count();
    size_t next = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      int32_t index = -1;
      if (next < which.size() && which[next] == i)
        index = int32_t(next++);
      int32_t count = index < 0 ? 1 : tfm_results_count(results, index);
      for (int32_t rank = 0; rank < std::min(count, opts.n_best); ++rank) {
        if (opts.n_best > 1)
          out << batch[i].line - 1 << " ||| ";
        if (index >= 0) {
          int32_t len = 0;
          const int32_t *toks = tfm_results_tokens(results, index, rank, &len);
          for (int32_t t = 0; t < len; ++t)
            out << (t ? " " : "") << toks[t];
        }
        if (opts.n_best > 1)
          out << " ||| "
              << (index >= 0 ? tfm_results_score(results, index, rank) : 0.0f);
        out << '\n';
      }
      if (index >= 0 && logitsFile)
        logitsFile.write(
            reinterpret_cast<const char *>(tfm_results_first_logits(results, index)),
            cfg.target_vocab_size * sizeof(float));
    }
    out.flush();
    tfm_results_free(results);
  }
  tfm_model_close(model);
  if (timing)
    std::fprintf(stderr, "translator: load %.4f s, translate %.4f s, %zu lines\n",
                 std::chrono::duration<double>(loaded - started).count(),
                 translateSeconds, lineNo);
  return 0;
}
