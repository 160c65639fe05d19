//===- Module.cpp - tfmc's Python API ---------------------------*- C++ -*-===//
//
// `import tfmc`: a compiled model driven from Python, in the shape of
// CTranslate2's API:
//
//   translator = tfmc.Translator("out", threads=2)   # tfmc compile ... -o out
//   results = translator.translate_batch(["Open file"], beam_size=4)
//   results[0].hypotheses[0]                         # "Datei öffnen"
//
// The bindings and their documentation, with each method's keyword options
// (their names and defaults); the arguments are read in Arguments.cpp,
// Keywords.cpp and Sentences.cpp, the model driven in Translator.cpp. The
// module is tfmc._ext, which the package tfmc (python/tfmc/) re-exports
// beside its command line (python -m tfmc).
//
//===----------------------------------------------------------------------===//

#include "python/Keywords.h"
#include "python/Translator.h"

#include <pybind11/stl.h>

namespace py = pybind11;

using tfm_python::KeywordArgs;
using tfm_python::keywordSignature;
using tfm_python::KeywordTable;
using tfm_python::ScoringResult;
using tfm_python::TranslationResult;
using tfm_python::Translator;

/// translate_batch's options after `source`, keyword-only, as its
/// docstring lists them: the translator's options.
static const KeywordTable kTranslateOptions = {
    {"beam_size", 1},
    {"n_best", 1},
    {"max_length", 256},
    {"max_length_ratio", 3.0},
    {"min_length", 0},
    {"length_penalty", 1.0},
    {"max_batch_size", 32},
    {"return_scores", false},
    {"return_token_scores", false},
    {"target_prefix", nullptr},
    {"source_lang", nullptr},
    {"target_lang", nullptr},
    {"repetition_penalty", nullptr},
    {"no_repeat_ngram_size", nullptr},
    {"sampling_topk", nullptr},
    {"sampling_topp", nullptr},
    {"sampling_temperature", nullptr},
    {"seed", nullptr},
    {"use_vmap", true},
    {"format", "text"},
};

static const char *const kTranslateDescription =
    "Translates a list (any iterable) of sentences, each a str (the "
    "model's tokenizer cuts it) or a sequence of source token ids (EOS "
    "appended if missing); returns one TranslationResult per sentence. "
    "Blank strings give \"\", empty id lists []. As in the translator, "
    "invalid UTF-8 (lone surrogates) becomes U+FFFD and a sentence "
    "longer than the model's positions is cut (EOS kept last), each with "
    "a warning. The options are the translator's (translator --help): 1 "
    "<= n_best <= beam_size <= the target vocabulary's size, max_length "
    ">= 1, max_length_ratio >= 0 (0: off), min_length >= 0, "
    "length_penalty finite, max_batch_size >= 1, repetition_penalty > 0 "
    "(1: off), no_repeat_ngram_size >= 0 (0: off), as the translator's "
    "--repetition-penalty and --no-repeat-ngram-size (None: the "
    "checkpoint's generation_config.json, else off). Any of "
    "sampling_topk (>= 0, 0: all), sampling_topp (in (0, 1]), "
    "sampling_temperature (> 0) and seed (0 to 2**64 - 1) samples "
    "instead of searching, as the translator's --sampling-* and --seed "
    "(beam_size 1; n_best=N draws N samples; sentence i's streams are "
    "seeded from seed and i, its index in source). return_scores gives "
    "each hypothesis's score (translator --with-scores), "
    "return_token_scores its tokens' log-probabilities (--token-scores). "
    "target_prefix, if given, holds for each sentence None or the target "
    "token ids (or vocabulary pieces) its translations start with (None "
    "or []: none), forced as the translator's --target-prefix forces "
    "them. source_lang and target_lang (an ISO code such as \"de\" or "
    "the model's own: \"__de__\", \"deu_Latn\", \"de_DE\"; not \"\") do "
    "what the translator's --source-lang and --target-lang do: str "
    "sentences get the source language's token (id sentences are taken "
    "as given), the target language's token is forced first, before any "
    "target_prefix (MADLAD-400's goes before str sentences instead). "
    "use_vmap=False translates over the whole target vocabulary where "
    "the model has a shortlist (the translator's --no-vmap). "
    "source_lang=\"auto\" detects each str sentence's language among a "
    "multilingual model's (CLD2) and frames it so, as the translator's "
    "--source-lang auto (id sentences are refused). format=\"html\" "
    "takes each str as an HTML document or fragment and returns it "
    "translated, markup kept, as the only hypothesis (the translator's "
    "--format html; source_lang=\"auto\" then detects each document's "
    "language; n_best > 1, return_scores, return_token_scores and "
    "target_prefix are refused). A bad "
    "argument raises TypeError or ValueError naming it and the sentence "
    "(its index in `source`); options the runtime refuses raise its "
    "ValueError; the GIL is released while translating.";

/// score_batch's options after `source` and `target`, keyword-only.
static const KeywordTable kScoreOptions = {
    {"max_batch_size", 32},
    {"length_penalty", 1.0},
    {"source_lang", nullptr},
    {"target_lang", nullptr},
};

static const char *const kScoreDescription =
    "Scores each target[i] as a translation of source[i] (the "
    "translator's --score): its log-probability under the model, the "
    "target's tokens forced through the decoder's steps, then EOS; no "
    "search. source is as translate_batch's; a target is a str (cut by "
    "the model's target tokenizer, after the target language's token) or "
    "a sequence of target token ids (a last EOS dropped). A blank source "
    "scores 0. The score is sum(log p) / length^length_penalty, EOS "
    "counted, as return_scores gives it.";

/// A method's docstring: its signature, the keyword options' names and
/// defaults taken from their table, then `description`.
static std::string methodDoc(const std::string &method,
                             const std::string &positional,
                             const KeywordTable &options,
                             const std::string &returns,
                             const char *description) {
  return method + "(" + positional + ", *, " + keywordSignature(options) +
         ") -> " + returns + "\n\n" + description;
}

PYBIND11_MODULE(_ext, m) {
  // The arguments are Python objects checked by hand (for messages that
  // name them), so pybind11's signatures would say `object`: the
  // docstrings give them.
  py::options options;
  options.disable_function_signatures();
  m.doc() = "Translation with models compiled by tfmc (tfmc compile MODEL_DIR "
            "-o OUT_DIR).";
  py::class_<TranslationResult>(m, "TranslationResult")
      .def_readonly("hypotheses", &TranslationResult::hypotheses,
                    "the n best translations, best first: str for text "
                    "input, lists of token ids (no EOS) for ids input")
      .def_readonly("scores", &TranslationResult::scores,
                    "their scores, sum(log p) / length^length_penalty, "
                    "EOS counted (empty unless return_scores)")
      .def_readonly("token_scores", &TranslationResult::tokenScores,
                    "per hypothesis, each token's log p, then EOS's if it "
                    "ended with it (empty unless return_token_scores)")
      .def("__repr__", [](const TranslationResult &r) {
        return "TranslationResult(hypotheses=" +
               py::repr(py::cast(r.hypotheses)).cast<std::string>() +
               ", scores=" + py::repr(py::cast(r.scores)).cast<std::string>() +
               (r.tokenScores.empty()
                    ? std::string()
                    : ", token_scores=" + py::repr(py::cast(r.tokenScores))
                                              .cast<std::string>()) +
               ")";
      });
  py::class_<ScoringResult>(m, "ScoringResult")
      .def_readonly("score", &ScoringResult::score,
                    "sum(log p) / length^length_penalty, EOS counted")
      .def_readonly("token_scores", &ScoringResult::tokenScores,
                    "each token's log p, EOS's last")
      .def("__repr__", [](const ScoringResult &r) {
        return "ScoringResult(score=" +
               py::repr(py::cast(r.score)).cast<std::string>() +
               ", token_scores=" +
               py::repr(py::cast(r.tokenScores)).cast<std::string>() + ")";
      });
  std::string translateDoc =
      methodDoc("translate_batch", "source", kTranslateOptions,
                "list[TranslationResult]", kTranslateDescription);
  std::string scoreDoc =
      methodDoc("score_batch", "source, target", kScoreOptions,
                "list[ScoringResult]", kScoreDescription);
  py::class_<Translator>(m, "Translator")
      .def(py::init<py::handle, py::handle>(), py::arg("model_dir"),
           py::arg("threads") = 2,
           "Translator(model_dir, threads=2)\n\n"
           "Loads the model that `tfmc compile -o MODEL_DIR` wrote (a str or "
           "os.PathLike); `threads` (1 to 1024) is the process's OpenMP "
           "thread count.")
      .def(
          "translate_batch",
          [](Translator &translator, py::handle source, py::kwargs keywords) {
            return translator.translateBatch(
                source,
                KeywordArgs("translate_batch", kTranslateOptions, keywords));
          },
          py::arg("source"), translateDoc.c_str())
      .def("read_vmap", &Translator::readVmap, py::arg("path"),
           "read_vmap(path) -> str | None\n\n"
           "Replaces the model's vocabulary shortlist with the vmap text "
           "file at `path` (the translator's --vmap; docs/Shortlist.md), "
           "its pieces given ids by the model's tokenizer; returns the "
           "warning about pieces it skipped, or None. Raises ValueError "
           "naming the file and line of a line that is not a rule.")
      .def_property_readonly("has_vmap", &Translator::hasVmap,
                             "Whether the model has a vocabulary shortlist.")
      .def(
          "score_batch",
          [](Translator &translator, py::handle source, py::handle target,
             py::kwargs keywords) {
            return translator.scoreBatch(
                source, target,
                KeywordArgs("score_batch", kScoreOptions, keywords));
          },
          py::arg("source"), py::arg("target"), scoreDoc.c_str());
}
