//===- Session.cpp - The translator's model, tokenizer, languages -*- C++ -*-//

#include "tools/translator/Session.h"

#include "tfm/abi/EmbeddedFiles.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Vmap.h"
#include "tools/translator/Errors.h"

#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace tfm_translator;

/// This translator's executable, or empty if the system will not say.
std::string tfm_translator::executablePath() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, n) : std::string();
}

/// The weights: embedded in this executable, or model.tfmw beside it.
std::string tfm_translator::defaultWeights() {
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
static void checkMaxLength(const Options &o, const tfm_model_config &cfg) {
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

/// Opens the weights, checked unless told not to.
void tfm_translator::openModel(Options &o, Session &s) {
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
static void openTokenizer(const Options &o, Session &s) {
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
  if (o.html && !s.tokenizer)
    die(fmt::format("--format html translates text, and this model has no "
                    "tokenizer (no source.spm, target.spm and vocab.json "
                    "with {})",
                    o.weights));
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
static void readShortlist(const Options &o, Session &s) {
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

/// --source-lang auto: each line's language detected, on a multilingual
/// model that reads text; a model of one pair has its one source.
static void openSourceDetection(const Options &o, Session &s) {
  if (!s.languages)
    die("--source-lang auto: this model has no languages to detect (a "
        "multilingual model's come with its tokenizer's files)");
  if (s.inputFormat != Format::Text)
    die("--source-lang auto detects the language of text: it needs text "
        "input, not --input-format ids");
  int32_t pairSource = -1, pairTarget = -1;
  tfm_languages_pair(s.languages, &pairSource, &pairTarget);
  if (pairSource < 0)
    s.autoSource =
        std::make_unique<SourceDetection>(s.api, s.languages, o.targetLang);
}

/// The language tokens of --source-lang and --target-lang, each option
/// checked alone first so that an error names it.
static void openLanguages(const Options &o, Session &s) {
  if (tfm_status status =
          tfm_languages_open(o.weights.c_str(), &s.cfg, &s.languages))
    die(tfm_status_message(status));
  bool detect = o.sourceLang == "auto";
  if (detect)
    openSourceDetection(o, s);
  const char *source =
      o.sourceLang.empty() || detect ? nullptr : o.sourceLang.c_str();
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

/// --verify-weights: every tensor checked and the result printed.
int tfm_translator::verifyWeights(const Options &o, const Session &s) {
  int64_t tensors = 0, bytes = 0;
  if (tfm_status status = tfm_model_verify_weights(s.model, &tensors, &bytes))
    die(tfm_status_message(status));
  fmt::print("{}: {} tensors, {:.1f} MB: every checksum matches\n", o.weights,
             tensors, bytes / 1e6);
  return 0;
}

/// The runtime's word on the search options, before any input is read
/// (--score uses none of them).
static void checkSearchOptions(const Options &o, const Session &s) {
  if (o.score)
    return;
  try {
    s.client().checkOptions(o.search);
  } catch (const tfm_client::Error &e) {
    die(e.what());
  }
}

void tfm_translator::openSession(Options &o, Session &s) {
  openTokenizer(o, s);
  readShortlist(o, s);
  openLanguages(o, s);
  checkSearchOptions(o, s);
  checkMaxLength(o, s.cfg);
}

/// Every file the run reads, which no output may overwrite: the inputs,
/// the model's files (the translator, its weights and the files beside
/// them that tfmc writes), the companion inputs.
tfm_tools::ReadFiles tfm_translator::filesRead(const Options &o) {
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
