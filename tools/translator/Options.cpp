//===- Options.cpp - The translator's command line --------------*- C++ -*-===//

#include "tools/translator/Options.h"

#include "tfm/abi/ModelInfo.h"
#include "tools/common/CommandLine.h"
#include "tools/translator/Errors.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

using namespace tfm_translator;

namespace {

const char *kDescription =
    R"(Translates the lines of the INPUT files (default, or '-': stdin), one
sentence a line, and writes one translation a line in the same order. Blank
lines give empty lines. Text is UTF-8; invalid bytes are replaced by U+FFFD
and a line longer than the model's positions is cut, each with a warning.)";

const char *kFooter =
    R"(Token ids: a line of space-separated source ids gets EOS appended when it
does not end in it, as text input and the Python API do; ids output has no
EOS and is valid ids input.

Generation follows the checkpoint's config.json as Hugging Face's generate
reads it: a sentence that reaches its length limit ends with the
forced_eos_token_id if one is set (so it keeps at most N - 1 tokens), a
sentence without a target prefix starts with the forced_bos_token_id if
one is set, and the bad_words_ids are never generated; --model-info shows
them.

Target prefixes are forced: each of their tokens adds log p = 0 to the
score (as Hugging Face forces a first token), they are part of the output
and of its length (the length limit grows to hold them and one more
token), and they may not hold EOS or padding.

Languages: --source-lang and --target-lang take ISO 639-1 codes (de) or
the model's own (__de__, deu_Latn, de_DE, <2de>) and do what the model's
Hugging Face tokenizer and generate do: source text gets the source
language's token (without --source-lang: the tokenizer's default,
English), and the target language's token is forced first (with ids output
it is printed; text output leaves special and language tokens out).
MADLAD-400 (a T5 with <2xx> pieces) takes the target language in the
source instead: --target-lang de puts <2de> before source text, as
"<2de> text" is cut, and forces nothing; its --source-lang is accepted and
changes no id. Source ids are taken as given. A model of one pair compiled
with tfmc --source-lang/--target-lang takes its two codes only;
--model-info lists a model's languages. --source-lang auto detects each
text line's language (CLD2) among the model's and frames the line as
--source-lang with it would; a line in none of them (or with no letters)
keeps the default framing, with a warning.

Weights are checked against tfmc's checksums at every load (about 50 ms
per GB on 2 threads; --no-verify-weights skips it). An output file is
replaced only when the run succeeds, and an input is never an output.

--format html: each INPUT is one HTML document or fragment, not lines:
its text is cut into sentences (a block's run of inline text, title and
alt attributes), translated in batches of --batch-size, and written back
in place, every tag, attribute and comment kept (docs/Usage.md,
"Translating HTML"). The translated documents are written one after the
other, in the order of the inputs, with nothing between them: for one
output file per document, run the translator once per document.
--source-lang auto detects the language of each document's whole text.
Warnings name a document's sentence as FILE:N, N its number in the
document.

When stderr is a terminal and the input comes from files, a progress line
shows the sentences done, sentences/s and output tokens/s.)";

} // namespace

/// What tfmc compiled into this binary: the architecture and the backend
/// chosen for each op kind and shape (tfmc --print-backends).
void tfm_translator::printModelInfo(const std::string &languages) {
  const tfm_model_info &m = tfm_model_info_data;
  fmt::print("model: d_model {}, {} encoder + {} decoder layers, {} heads, "
             "vocabulary {} -> {}, {} positions\n",
             m.dModel, m.encoderLayers, m.decoderLayers, m.encoderHeads,
             m.sourceVocabSize, m.targetVocabSize, m.maxPositions);
  fmt::print("precision: {}\n", tfm_runtime::precisionName(m.precision));
  auto token = [](int64_t id) {
    return id >= 0 ? std::to_string(id) : std::string("none");
  };
  fmt::print("forced EOS at the length limit: {}\n", token(m.forcedEosTokenId));
  fmt::print("forced first token: {}\n", token(m.forcedBosTokenId));
  fmt::print("bad words:");
  if (tfm_model_bad_words[0] == 0)
    fmt::print(" none");
  for (int64_t i = 0, at = 1; i < tfm_model_bad_words[0]; ++i) {
    int64_t length = tfm_model_bad_words[at++];
    std::vector<int64_t> words(tfm_model_bad_words + at,
                               tfm_model_bad_words + at + length);
    at += length;
    fmt::print(" [{}]", fmt::join(words, " "));
  }
  fmt::print("\n{}backends:\n{}", languages, tfm_model_backends);
}

namespace {

/// CLI11's help with each option's description wrapped beside its name.
class WrappingFormatter : public CLI::Formatter {
public:
  static constexpr size_t kNameWidth = 30, kLineWidth = 79;
  WrappingFormatter() { column_width(kNameWidth); }
  /// The name column without CLI11's "Excludes: ...", which would push the
  /// description to the next line; make_option_desc says it instead.
  std::string make_option_opts(const CLI::Option *option) const override {
    std::string opts = CLI::Formatter::make_option_opts(option);
    return opts.substr(0, opts.find(" " + get_label("Excludes") + ":"));
  }
  std::string make_option_desc(const CLI::Option *option) const override {
    std::string description = option->get_description();
    const char *separator = " (not with ";
    for (const CLI::Option *excluded : option->get_excludes()) {
      description += separator + excluded->get_name();
      separator = ", ";
    }
    if (!option->get_excludes().empty())
      description += ")";
    std::string text, line;
    std::istringstream words(description);
    for (std::string word; words >> word;) {
      if (!line.empty() &&
          line.size() + 1 + word.size() > kLineWidth - kNameWidth) {
        text += line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + word;
    }
    return text + line;
  }
};

/// An integer of at least `min`.
CLI::Validator atLeast(long min) {
  return CLI::Validator(
      [min](std::string &value) -> std::string {
        char *end = nullptr;
        errno = 0;
        long v = std::strtol(value.c_str(), &end, 10);
        if (errno || end == value.c_str() || *end || v < min || v > INT32_MAX)
          return fmt::format("expects an integer >= {}, found '{}'", min,
                             value);
        return "";
      },
      "");
}

/// A number, whatever its value: the options whose values the runtime
/// judges (Session asks it before reading the input).
CLI::Validator number() {
  return CLI::Validator(
      [](std::string &value) -> std::string {
        char *end = nullptr;
        std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end)
          return fmt::format("expects a number, found '{}'", value);
        return "";
      },
      "");
}

/// Refuses `value`, the C API's mark for "the model's" (leaving the
/// option out says that); `off` says which value turns the guard off.
CLI::Validator notDefaultMark(double value, const char *off) {
  return CLI::Validator(
      [value, off](std::string &given) -> std::string {
        if (std::strtod(given.c_str(), nullptr) == value)
          return fmt::format("{} is not allowed: {} turns it off, and "
                             "leaving the option out takes the checkpoint's",
                             given, off);
        return "";
      },
      "");
}

/// A 32-bit integer, whatever its value: the options whose values the
/// runtime judges (Session asks it before reading the input).
CLI::Validator integer() {
  return CLI::Validator(
      [](std::string &value) -> std::string {
        char *end = nullptr;
        errno = 0;
        long v = std::strtol(value.c_str(), &end, 10);
        if (errno || end == value.c_str() || *end || v < INT32_MIN ||
            v > INT32_MAX)
          return fmt::format("expects a 32-bit integer, found '{}'", value);
        return "";
      },
      "");
}

/// An unsigned 64-bit integer, in decimal.
CLI::Validator seedNumber() {
  return CLI::Validator(
      [](std::string &value) -> std::string {
        char *end = nullptr;
        errno = 0;
        std::strtoull(value.c_str(), &end, 10);
        if (errno || end == value.c_str() || *end || value[0] == '-' ||
            value[0] == '+')
          return fmt::format("expects an integer from 0 to 2^64 - 1, found "
                             "'{}'",
                             value);
        return "";
      },
      "");
}

/// Random sampling instead of search: any of these options turns it on.
/// Their values are the runtime's to judge.
void addSamplingOptions(CLI::App &app, tfm_search_options &s) {
  app.add_option("--sampling-topk", s.sampling_topk,
                 "sample instead of searching (any --sampling-* or --seed "
                 "does; beam size 1, --n-best N draws N samples): keep the "
                 "K most probable tokens at each step (0: all; 1: greedy)")
      ->capture_default_str()
      ->check(integer())
      ->type_name("K");
  app.add_option("--sampling-topp", s.sampling_topp,
                 "then keep the fewest most probable tokens whose "
                 "probabilities sum to at least P (1: all)")
      ->capture_default_str()
      ->check(number())
      ->type_name("P");
  app.add_option("--sampling-temperature", s.sampling_temperature,
                 "divide the logits by T first; scores stay the model's "
                 "log p (untempered, unfiltered)")
      ->capture_default_str()
      ->check(number())
      ->type_name("T");
  app.add_option("--seed", s.seed,
                 "sampling's seed: each sentence draws from its own "
                 "SplitMix64 stream seeded from S and its line number, the "
                 "same at any batch size and thread count")
      ->capture_default_str()
      ->check(seedNumber())
      ->type_name("S");
}

/// A value that names something (a file, a language, target tokens):
/// empty, it names nothing and would read as the option not given. Target
/// tokens are split at blanks, so only blanks is none either.
CLI::Validator naming(const std::string &what, bool blanksAreEmpty) {
  return CLI::Validator(
      [what, blanksAreEmpty](std::string &value) -> std::string {
        if (value.empty())
          return fmt::format("expects {}, found an empty value", what);
        if (blanksAreEmpty &&
            value.find_first_not_of(" \t\n\v\f\r") == std::string::npos)
          return fmt::format("expects {}, found only blanks", what);
        return "";
      },
      "");
}

/// Every option that names something refuses an empty value; such an
/// option is known by its type name, so that a new one gets the check.
void refuseEmptyNames(CLI::App &app) {
  for (CLI::Option *option : app.get_options()) {
    std::string type = option->get_type_name();
    if (type == "FILE")
      option->check(naming("a file name", false));
    else if (type == "CODE")
      option->check(naming("a language code", false));
    else if (type == "TOKENS")
      option->check(naming("target tokens", true));
  }
}

const std::map<std::string, Format> kFormats = {{"text", Format::Text},
                                                {"ids", Format::Ids}};

CLI::Validator oneFormat() {
  return CLI::Validator(
      [](std::string &value) -> std::string {
        return kFormats.count(value)
                   ? ""
                   : fmt::format("expects 'text' or 'ids', found '{}'", value);
      },
      "");
}

/// Options that print something and exit.
void addInformation(CLI::App &app, Options &o) {
  app.add_flag("--model-info", o.modelInfo,
               "print the compiled model's shape, its languages and which "
               "backend (our code, oneDNN) runs each op kind, and exit");
  tfm_tools::addVersionFlag(
      app, "translator compiled by tfmc",
      "print the version of tfmc that built this translator, and exit");
}

/// The search's options; beam size and n-best are the runtime's to judge.
void addSearchOptions(CLI::App &app, Options &o) {
  tfm_search_options &s = o.search;
  app.add_option("-b,--beam-size", s.beam_size, "beam width (1: greedy)")
      ->capture_default_str()
      ->check(integer())
      ->type_name("N");
  app.add_option("-n,--n-best", s.n_best,
                 "print the N best hypotheses of each sentence as "
                 "\"INDEX ||| TRANSLATION ||| SCORE\" lines")
      ->capture_default_str()
      ->check(integer())
      ->type_name("N");
  app.add_option("--batch-size", o.batchSize, "sentences decoded together")
      ->capture_default_str()
      ->check(atLeast(1))
      ->type_name("N");
  app.add_flag("--continuous", o.continuous,
               "continuous batching: keep --batch-size sentences decoding, "
               "a sentence joining the running batch as soon as another "
               "finishes (the whole target vocabulary: no shortlist)");
  app.add_option("--max-length", s.max_length,
                 "at most N target tokens, EOS included")
      ->capture_default_str()
      ->check(integer())
      ->type_name("N")
      ->each([&o](const std::string &) { o.maxLengthGiven = true; });
  app.add_option("--max-length-ratio", s.max_length_ratio,
                 "also at most R * source tokens + 5 (0: off)")
      ->capture_default_str()
      ->check(number())
      ->type_name("R");
  app.add_option("--min-length", s.min_length, "no EOS before N tokens")
      ->capture_default_str()
      ->check(integer())
      ->type_name("N");
  app.add_option("--length-penalty", s.length_penalty,
                 "scores are sum(log p) / length^A, EOS counted (0: the "
                 "plain sum); the beam ranks hypotheses by them")
      ->capture_default_str()
      ->check(number())
      ->type_name("A");
  app.add_option("--repetition-penalty", s.repetition_penalty,
                 "a token already in the hypothesis (or the decoder start "
                 "token) has its logit (greedy) or log p (beam) multiplied "
                 "by R where negative, divided where positive, as Hugging "
                 "Face's (1: off; default: the checkpoint's "
                 "generation_config.json, else 1)")
      ->check(number() & notDefaultMark(0, "1"))
      ->type_name("R");
  app.add_option("--no-repeat-ngram-size", s.no_repeat_ngram_size,
                 "no n-gram of N tokens occurs twice in a hypothesis (0: off; "
                 "default: the checkpoint's generation_config.json, else 0)")
      ->check(integer() & notDefaultMark(-1, "0"))
      ->type_name("N");
  app.add_flag("--suppress-eos", s.suppress_eos,
               "never end a sentence: decode exactly --max-length tokens "
               "(benchmarks)");
  auto *prefix =
      app.add_option("--target-prefix", o.targetPrefix,
                     "start every translation with these space-separated "
                     "target tokens (ids with --output-format ids, else "
                     "vocabulary pieces), then decode freely")
          ->type_name("TOKENS");
  app.add_option("--target-prefix-file", o.targetPrefixFile,
                 "a target prefix per input line, in the same order (a "
                 "blank line: none)")
      ->type_name("FILE")
      ->excludes(prefix);
  app.add_option("--source-lang", o.sourceLang,
                 "the source language (de, or the model's code: __de__, "
                 "deu_Latn, de_DE; auto: detected line by line): text is "
                 "framed with its token as the model's tokenizer frames it "
                 "(MADLAD-400: no token, no change); ids are taken as given")
      ->type_name("CODE");
  app.add_option("--target-lang", o.targetLang,
                 "the target language: its token is forced first in every "
                 "translation, before any --target-prefix (MADLAD-400: "
                 "<2de> goes before source text instead)")
      ->type_name("CODE");
}

/// --format text|html: lines of text, or HTML documents.
void addDocumentFormat(CLI::App &app, Options &o) {
  app.add_option_function<std::string>(
         "--format", [&o](const std::string &v) { o.html = v == "html"; },
         "text: one sentence a line; html: each INPUT one HTML document or "
         "fragment, its text translated and its markup kept, the "
         "documents written one after the other [text]")
      ->check(CLI::Validator(
          [](std::string &value) -> std::string {
            return value == "text" || value == "html"
                       ? ""
                       : fmt::format("expects 'text' or 'html', found '{}'",
                                     value);
          },
          ""))
      ->type_name("text|html");
}

void addInputOutputOptions(CLI::App &app, Options &o) {
  addDocumentFormat(app, o);
  auto format = [&app](const char *name, Format &into, const char *help) {
    app.add_option_function<std::string>(
           name, [&into](const std::string &v) { into = kFormats.at(v); }, help)
        ->check(oneFormat())
        ->type_name("text|ids");
  };
  format("--input-format", o.inputFormat,
         "sentences as text, or as space-separated source token ids "
         "[text if the model has a tokenizer, else ids]");
  format("--output-format", o.outputFormat,
         "translations as text or token ids [likewise]");
  app.add_option("--weights", o.weights,
                 "the weights file (default: embedded, else model.tfmw next "
                 "to the translator); the tokenizer is looked for in it or "
                 "beside it")
      ->type_name("FILE");
  app.add_flag("--with-scores", o.withScores,
               "print each translation after its score and a TAB: the sum "
               "of its tokens' log-probabilities, EOS included, divided by "
               "length^A as the beam uses it (--length-penalty A)");
  app.add_flag("--token-scores", o.tokenScores,
               "also print each token's log-probability (EOS's last): after "
               "a TAB, or after \" ||| \" on --n-best lines");
  app.add_flag("--score", o.score,
               "score given translations instead of translating: INPUT is "
               "SOURCE<TAB>TARGET lines, or two files SOURCE TARGET (targets "
               "as --output-format: ids, or text); prints each target's "
               "score as --with-scores defines it (log p under the model, "
               "no search; of the options only --length-penalty, "
               "--batch-size and --target-lang apply)");
  app.add_option("-o,--output", o.output,
                 "write translations to FILE (default: stdout)")
      ->type_name("FILE");
  app.add_flag("-q,--quiet", o.quiet, "no warnings, no progress");
  app.add_flag("--timing", o.timing,
               "report load and translation seconds on stderr, then those "
               "of the encoder, the decoder steps, the search and the cache "
               "moves (and each kernel's, if tfmc compiled the translator "
               "with --profile-kernels)");
  app.add_flag_callback(
      "--plain-search", [&o] { o.search.fused_search = 0; },
      "read every logit in the search instead of the blocks the output "
      "projection's maxima and sums allow (for checking: the same tokens; "
      "scores may differ in their last bits)");
  app.add_option("--dump-first-logits", o.logitsPath,
                 "write each sentence's first-step logits (f32, "
                 "little-endian) to FILE, for testing")
      ->type_name("FILE");
  app.add_option("INPUT", o.inputs, "input files ('-': stdin)")
      ->type_name("FILE");
}

/// The vocabulary shortlist: the model's by default.
void addShortlistOptions(CLI::App &app, Options &o) {
  auto *vmap = app.add_option(
      "--vmap", o.vmapPath,
      "a vocabulary shortlist instead of the model's (tfmc compile --vmap "
      "stores one with it): each batch's output projection, log-softmax and "
      "search run over the target tokens that its sources' n-grams map to "
      "in FILE ('SOURCE PIECES<TAB>TARGET PIECES' lines; docs/Shortlist.md)");
  vmap->type_name("FILE");
  app.add_flag_callback(
         "--no-vmap", [&o] { o.search.use_vmap = 0; },
         "the whole target vocabulary, not the shortlist")
      ->excludes(vmap);
}

void addMachineOptions(CLI::App &app, Options &o) {
  app.add_option("--threads", o.threads, "worker threads")
      ->capture_default_str()
      ->check(atLeast(1))
      ->type_name("N");
  app.add_flag("--verify-weights", o.verifyWeights,
               "check every tensor of the weights against tfmc's checksums, "
               "name the damaged ones, and exit");
  app.add_flag("--no-verify-weights", o.skipWeightCheck,
               "load without checking the tensors' bytes (the header and "
               "tensor table are still checked)");
}

/// --format html writes one translation of each document: the options that
/// print something else per line, or read something per line, do not
/// apply. `app` says which were given.
void checkHtmlOptions(const CLI::App &app, const Options &o) {
  if (!o.html)
    return;
  if (o.search.n_best > 1)
    die(fmt::format("--format html writes one translation of each document: "
                    "it takes no --n-best {}",
                    o.search.n_best));
  for (const char *option :
       {"--with-scores", "--token-scores", "--score", "--target-prefix",
        "--target-prefix-file", "--dump-first-logits"})
    if (app.count(option))
      die(fmt::format("--format html writes translated documents: it takes "
                      "no {} (an option of one sentence a line)",
                      option));
  if (o.inputFormat == Format::Ids || o.outputFormat == Format::Ids)
    die(fmt::format("--format html translates the text of documents: it "
                    "takes no --{}-format ids",
                    o.inputFormat == Format::Ids ? "input" : "output"));
}

} // namespace

Options tfm_translator::parseCommandLine(int argc, char **argv) {
  Options o;
  tfm_search_options_default(&o.search);
  CLI::App app(kDescription, "translator");
  app.footer(kFooter);
  app.formatter(std::make_shared<WrappingFormatter>());
  app.set_help_flag("-h,--help", "this text");
  addInformation(app, o);
  addSearchOptions(app, o);
  addSamplingOptions(app, o.search);
  addShortlistOptions(app, o);
  addInputOutputOptions(app, o);
  addMachineOptions(app, o);
  refuseEmptyNames(app);
  tfm_tools::parseCommandLine(app, argc, argv,
                              [](const std::string &message) { die(message); });
  if (o.score && o.inputs.size() > 2)
    die(fmt::format("--score reads SOURCE<TAB>TARGET lines from one input or "
                    "SOURCE and TARGET from two; found {} inputs",
                    o.inputs.size()));
  if (o.score && (!o.targetPrefix.empty() || !o.targetPrefixFile.empty()))
    die("--score takes no target prefix: the targets are given");
  o.search.sampling =
      app.count("--sampling-topk") + app.count("--sampling-topp") +
          app.count("--sampling-temperature") + app.count("--seed") >
      0;
  // The runtime judges the search options together (n-best and beam size,
  // sampling's): the session asks it before reading the input.
  if (o.search.sampling && o.score)
    die("--score takes no sampling options");
  if (o.continuous && (o.score || !o.logitsPath.empty() || !o.vmapPath.empty()))
    die("--continuous translates with the whole vocabulary: it takes no "
        "--score, --dump-first-logits or --vmap");
  checkHtmlOptions(app, o);
  return o;
}
