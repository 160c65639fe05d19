//===- TranslatorModule.cpp - tfmc's Python API -----------------*- C++ -*-===//
//
// `import tfmc`: a compiled model driven from Python, in the shape of
// CTranslate2's API:
//
//   translator = tfmc.Translator("out", threads=2)   # tfmc compile ... -o out
//   results = translator.translate_batch(["Open file"], beam_size=4)
//   results[0].hypotheses[0]                         # "Datei öffnen"
//
// `tfmc compile` writes OUT_DIR/libtranslator.so, the model's code with the
// runtime; this module loads it (dlopen) and calls the runtime's C API
// (tfm/runtime.h) through the addresses dlsym finds, so one module serves
// every compiled model and each model keeps its own code.
//
// Every argument is checked here before the runtime sees it: a wrong type or
// value is a TypeError or ValueError naming the argument, and the sentence
// by its index in `source` ("sentence 3", counted from 0 as Python indexes),
// never a pybind11 cast error. Text and ids follow the translator binary's
// rules: invalid UTF-8 becomes U+FFFD and a sentence longer than the model's
// positions is cut, each with a warning (Python's `warnings`).
//
//===----------------------------------------------------------------------===//

#include "tfm/RuntimeApi.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace py = pybind11;

namespace {

using tfm_runtime::RuntimeApi;

bool isFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

/// The most OpenMP threads: libomp aborts the process (no error to return)
/// when it cannot start a team's threads, as with threads=10**6; no model
/// gains from more threads than this on one machine.
constexpr int64_t kMaxThreads = 1024;

[[noreturn]] void throwPythonError() { throw py::error_already_set(); }

/// A value's repr for a message, cut when long (10**400, a long list).
std::string reprText(py::handle value) {
  std::string text = py::repr(value).cast<std::string>();
  if (text.size() > 60)
    text = text.substr(0, 50) + "...";
  return text;
}

/// A value for a type error: its type, and its repr when short ("float
/// 2.5", "NoneType None", "generator").
std::string describe(py::handle value) {
  std::string text = Py_TYPE(value.ptr())->tp_name;
  std::string shown = py::repr(value).cast<std::string>();
  if (shown.size() <= 40 && shown.find(" at 0x") == std::string::npos)
    text += " " + shown;
  return text;
}

/// `value` as an integer in [min, max], else a TypeError or ValueError
/// naming `name`; `why` says where a bound comes from. Whatever has
/// __index__ counts (numpy's integers), bool does not: True for a beam size
/// is a mistake, not a 1.
int64_t intArg(py::handle value, const std::string &name, int64_t min,
               int64_t max, const std::string &why = "") {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
    throw py::type_error(name + " must be an int, found " + describe(value));
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index)
    throwPythonError();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred())
    throwPythonError();
  if (overflow || v < min || v > max)
    throw py::value_error(name + " must be an int in [" + std::to_string(min) +
                          ", " + std::to_string(max) + "]" + why + ", found " +
                          reprText(value));
  return v;
}

/// `value` as an unsigned 64-bit integer (a seed), else a TypeError or
/// ValueError naming `name`.
uint64_t seedArg(py::handle value, const std::string &name) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
    throw py::type_error(name + " must be an int, found " + describe(value));
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index)
    throwPythonError();
  unsigned long long v = PyLong_AsUnsignedLongLong(index.ptr());
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error(name + " must be an int in [0, 2**64 - 1], found " +
                          reprText(value));
  }
  return v;
}

/// `value` as a finite float32 (the runtime's options are float), else a
/// TypeError or ValueError naming `name`: a NaN length penalty would make
/// every score NaN and the ranking arbitrary.
float floatArg(py::handle value, const std::string &name) {
  PyObject *p = value.ptr();
  PyNumberMethods *number = Py_TYPE(p)->tp_as_number;
  auto notANumber = [&] {
    return py::type_error(name + " must be a number, found " + describe(value));
  };
  if (PyBool_Check(p) ||
      !(PyFloat_Check(p) || PyIndex_Check(p) || (number && number->nb_float)))
    throw notANumber();
  double v = PyFloat_AsDouble(p);
  if (v == -1.0 && PyErr_Occurred()) {
    // An int past a double's range is not finite either.
    if (!PyErr_ExceptionMatches(PyExc_OverflowError) &&
        !PyErr_ExceptionMatches(PyExc_TypeError))
      throwPythonError();
    bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (!overflow)
      throw notANumber();
    v = HUGE_VAL;
  }
  if (!std::isfinite(v) || std::fabs(v) > FLT_MAX)
    throw py::value_error(name + " must be a finite number, found " +
                          reprText(value));
  return float(v);
}

/// `value` as a bool (Python's or numpy's), else a TypeError naming `name`:
/// return_scores="no" would be true.
bool boolArg(py::handle value, const std::string &name) {
  std::string type = Py_TYPE(value.ptr())->tp_name;
  if (!PyBool_Check(value.ptr()) && type != "numpy.bool_" &&
      type != "numpy.bool")
    throw py::type_error(name + " must be a bool, found " + describe(value));
  return PyObject_IsTrue(value.ptr()) == 1;
}

/// A str, bytes or os.PathLike path as the file system's bytes (a str with
/// undecodable file-name bytes gets them back, as open() does); an empty
/// one names nothing and is a ValueError.
std::string pathArg(py::handle value, const std::string &name) {
  auto path = py::reinterpret_steal<py::object>(PyOS_FSPath(value.ptr()));
  if (!path) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError))
      throwPythonError();
    PyErr_Clear();
    throw py::type_error(name + " must be a str or os.PathLike, found " +
                         describe(value));
  }
  if (PyUnicode_Check(path.ptr())) {
    path = py::reinterpret_steal<py::object>(
        PyUnicode_EncodeFSDefault(path.ptr()));
    if (!path)
      throwPythonError();
  }
  std::string out(PyBytes_AS_STRING(path.ptr()),
                  size_t(PyBytes_GET_SIZE(path.ptr())));
  if (out.find('\0') != std::string::npos)
    throw py::value_error(name +
                          " contains a NUL character: " + reprText(value));
  if (out.empty())
    throw py::value_error(name +
                          " must not be empty: it names a file or directory");
  return out;
}

void appendUtf8(std::string &out, Py_UCS4 c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

/// The UTF-8 of `text`; returns whether something was replaced by U+FFFD.
/// Only a str with lone surrogates has none. They mostly stand for the
/// invalid bytes of a file read with errors="surrogateescape" (U+DC80 to
/// U+DCFF for bytes 0x80 to 0xFF), and the translator binary replaces each
/// invalid sequence of a file's bytes by U+FFFD (as Python's
/// errors="replace" decoder does): those bytes are restored and decoded so,
/// which gives the translator's text for the same line. Other lone
/// surrogates stand for no bytes and become U+FFFD each.
bool utf8Text(py::handle text, std::string &out) {
  Py_ssize_t size = 0;
  if (const char *data = PyUnicode_AsUTF8AndSize(text.ptr(), &size)) {
    out.assign(data, size_t(size));
    return false;
  }
  if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
    throwPythonError();
  PyErr_Clear();
  std::string bytes;
  int kind = PyUnicode_KIND(text.ptr());
  const void *chars = PyUnicode_DATA(text.ptr());
  for (Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(text.ptr()); i < n; ++i) {
    Py_UCS4 c = PyUnicode_READ(kind, chars, i);
    if (c >= 0xDC80 && c <= 0xDCFF)
      bytes += char(c - 0xDC00);
    else if (c >= 0xD800 && c <= 0xDFFF)
      bytes += "\xEF\xBF\xBD";
    else
      appendUtf8(bytes, c);
  }
  auto repaired = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(bytes.data(), Py_ssize_t(bytes.size()), "replace"));
  const char *data =
      repaired ? PyUnicode_AsUTF8AndSize(repaired.ptr(), &size) : nullptr;
  if (!data)
    throwPythonError();
  out.assign(data, size_t(size));
  return true;
}

/// Issues a Python warning; with warnings turned into errors, raises it.
void warn(PyObject *category, const std::string &message) {
  if (PyErr_WarnEx(category, message.c_str(), 1) < 0)
    throwPythonError();
}

/// One sentence's hypotheses, best first: text for text input, token ids
/// for ids input; their scores when asked for.
struct TranslationResult {
  std::vector<std::variant<std::string, std::vector<int32_t>>> hypotheses;
  std::vector<float> scores;
  std::vector<std::vector<float>> tokenScores;
};

/// One given translation's score (score_batch): sum(log p) /
/// length^length_penalty, EOS counted, and each token's log p, EOS's last.
struct ScoringResult {
  float score = 0;
  std::vector<float> tokenScores;
};

class Translator {
public:
  Translator(py::handle modelDirArg, py::handle threadsArg) {
    std::string modelDir = pathArg(modelDirArg, "model_dir");
    int32_t threads = int32_t(intArg(threadsArg, "threads", 1, kMaxThreads));
    std::string library = modelDir + "/libtranslator.so";
    if (!isFile(library))
      throw std::invalid_argument(
          library + " does not exist: pass the directory `tfmc compile -o` "
                    "wrote (a tfmc older than the Python API wrote none)");
    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      throw std::runtime_error(std::string("cannot load ") + library + ": " +
                               dlerror());
    if (std::string problem = api.bind(handle); !problem.empty())
      throw std::runtime_error(library + ": " + problem);
    // The weights beside the library, else inside the translator.
    weights = modelDir + "/model.tfmw";
    if (!isFile(weights))
      weights = modelDir + "/translator";
    check(api.tfm_model_open(weights.c_str(), &model));
    check(api.tfm_set_num_threads(threads));
    api.tfm_model_get_config(model, &config);
    check(api.tfm_tokenizer_open(weights.c_str(), &config, &tokenizer));
    check(api.tfm_languages_open(weights.c_str(), &config, &languages));
  }

  ~Translator() {
    if (languages)
      api.tfm_languages_close(languages);
    if (tokenizer)
      api.tfm_tokenizer_close(tokenizer);
    if (model)
      api.tfm_model_close(model);
    // The library stays loaded: OpenMP's threads may still run its code.
  }

  py::object readVmap(py::handle pathValue) {
    std::string path = pathArg(pathValue, "path");
    char *warning = nullptr;
    if (tfm_status status =
            api.tfm_model_read_vmap(model, path.c_str(), tokenizer, &warning)) {
      std::string message = api.tfm_status_message(status);
      api.tfm_status_free(status);
      throw py::value_error(message);
    }
    if (!warning)
      return py::none();
    py::str text(warning);
    api.tfm_free(warning);
    return std::move(text);
  }

  bool hasVmap() const { return api.tfm_model_has_vmap(model) != 0; }

  /// Translates `source`, an iterable of strings or sequences of token ids,
  /// in batches of `max_batch_size`; the search options are the
  /// translator's, checked first so that a bad one fails on any input.
  std::vector<TranslationResult>
  translateBatch(py::handle source, py::handle beamSizeArg, py::handle nBestArg,
                 py::handle maxLengthArg, py::handle maxLengthRatioArg,
                 py::handle minLengthArg, py::handle lengthPenaltyArg,
                 py::handle maxBatchSizeArg, py::handle returnScoresArg,
                 py::handle returnTokenScoresArg, py::handle targetPrefixArg,
                 py::handle sourceLangArg, py::handle targetLangArg,
                 py::handle repetitionPenaltyArg,
                 py::handle noRepeatNgramSizeArg, py::handle samplingTopkArg,
                 py::handle samplingToppArg, py::handle samplingTemperatureArg,
                 py::handle seedArgument, py::handle useVmapArg) {
    tfm_search_options opts;
    api.tfm_search_options_default(&opts);
    opts.use_vmap = boolArg(useVmapArg, "use_vmap");
    setSampling(opts, samplingTopkArg, samplingToppArg, samplingTemperatureArg,
                seedArgument);
    // A beam wider than the target vocabulary finds nothing more at its
    // first step, and the search's logits (rows x vocabulary floats per
    // sentence) would already be vocabulary^2: beam_size=10**6 would
    // exhaust the memory instead of failing.
    opts.beam_size =
        int32_t(intArg(beamSizeArg, "beam_size", 1, config.target_vocab_size,
                       " (at most the target vocabulary's size)"));
    opts.n_best = int32_t(intArg(nBestArg, "n_best", 1, kInt32Max));
    if (opts.sampling && opts.beam_size != 1)
      throw py::value_error("sampling (sampling_topk, sampling_topp, "
                            "sampling_temperature, seed) needs beam_size 1, "
                            "found " +
                            std::to_string(opts.beam_size) +
                            "; n_best=N draws N samples");
    if (!opts.sampling && opts.n_best > opts.beam_size)
      throw py::value_error("n_best " + std::to_string(opts.n_best) +
                            " exceeds beam_size " +
                            std::to_string(opts.beam_size) +
                            ": the search keeps beam_size hypotheses");
    opts.max_length = int32_t(intArg(maxLengthArg, "max_length", 1, kInt32Max));
    float ratio = floatArg(maxLengthRatioArg, "max_length_ratio");
    if (ratio < 0)
      throw py::value_error("max_length_ratio must be >= 0 (0: no cap "
                            "from the source's length), found " +
                            reprText(maxLengthRatioArg));
    // ratio x source length becomes an integer in the runtime; past the
    // model's positions (which cap every translation) a ratio caps
    // nothing, so a huge one is the same as that and cannot overflow.
    opts.max_length_ratio = std::min(ratio, float(config.max_positions));
    opts.min_length = int32_t(intArg(minLengthArg, "min_length", 0, kInt32Max));
    opts.length_penalty = floatArg(lengthPenaltyArg, "length_penalty");
    // None: the model's (its generation_config.json), as the defaults say.
    if (!repetitionPenaltyArg.is_none()) {
      opts.repetition_penalty =
          floatArg(repetitionPenaltyArg, "repetition_penalty");
      if (opts.repetition_penalty <= 0)
        throw py::value_error(
            "repetition_penalty must be > 0 (1: off), found " +
            reprText(repetitionPenaltyArg));
    }
    if (!noRepeatNgramSizeArg.is_none())
      opts.no_repeat_ngram_size = int32_t(
          intArg(noRepeatNgramSizeArg, "no_repeat_ngram_size", 0, kInt32Max));
    size_t maxBatchSize =
        size_t(intArg(maxBatchSizeArg, "max_batch_size", 1, kInt32Max));
    bool returnScores = boolArg(returnScoresArg, "return_scores");
    bool returnTokenScores =
        boolArg(returnTokenScoresArg, "return_token_scores");
    tfm_language_tokens langTokens =
        languageTokens(sourceLangArg, targetLangArg);

    std::vector<bool> text;
    std::vector<std::vector<int32_t>> ids =
        sourceSentences(source, langTokens, text);
    std::vector<std::vector<int32_t>> prefixes =
        targetPrefixes(targetPrefixArg, ids.size());
    // The target language's token first, as the translator forces it.
    for (std::vector<int32_t> &prefix : prefixes)
      prefix.insert(prefix.begin(), langTokens.target_prefix,
                    langTokens.target_prefix + langTokens.target_prefix_length);
    std::vector<TranslationResult> results(ids.size());
    std::vector<size_t> pending;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!ids[i].empty()) {
        pending.push_back(i);
        continue;
      }
      if (text[i])
        results[i].hypotheses.emplace_back(std::string());
      else
        results[i].hypotheses.emplace_back(std::vector<int32_t>());
      if (returnScores)
        results[i].scores.push_back(0.0f);
      if (returnTokenScores)
        results[i].tokenScores.emplace_back();
    }
    for (size_t start = 0; start < pending.size(); start += maxBatchSize) {
      size_t count = std::min(pending.size() - start, maxBatchSize);
      std::vector<const int32_t *> batch, batchPrefixes;
      std::vector<int32_t> lengths, prefixLengths;
      std::vector<int64_t> indexes; // in `source`: sampling's seeds
      for (size_t k = 0; k < count; ++k) {
        size_t i = pending[start + k];
        indexes.push_back(int64_t(i));
        batch.push_back(ids[i].data());
        lengths.push_back(int32_t(ids[i].size()));
        batchPrefixes.push_back(prefixes[i].data());
        prefixLengths.push_back(int32_t(prefixes[i].size()));
      }
      tfm_results *out = nullptr;
      tfm_status status;
      {
        py::gil_scoped_release unlocked;
        tfm_batch request{int32_t(count),
                          batch.data(),
                          lengths.data(),
                          batchPrefixes.data(),
                          prefixLengths.data(),
                          nullptr,
                          nullptr,
                          indexes.data()};
        status = api.tfm_translate_batch(model, &opts, &request, &out);
      }
      if (status) {
        std::string message = api.tfm_status_message(status);
        api.tfm_status_free(status);
        throw std::runtime_error(batchError(message, &pending[start], count));
      }
      for (size_t k = 0; k < count; ++k) {
        size_t i = pending[start + k];
        for (int32_t rank = 0; rank < api.tfm_results_count(out, int32_t(k));
             ++rank) {
          int32_t length = 0;
          const int32_t *tokens =
              api.tfm_results_tokens(out, int32_t(k), rank, &length);
          if (text[i])
            results[i].hypotheses.emplace_back(decode(tokens, length));
          else
            results[i].hypotheses.emplace_back(
                std::vector<int32_t>(tokens, tokens + length));
          if (returnScores)
            results[i].scores.push_back(
                api.tfm_results_score(out, int32_t(k), rank));
          if (returnTokenScores) {
            const float *scores =
                api.tfm_results_token_scores(out, int32_t(k), rank, &length);
            results[i].tokenScores.emplace_back(scores, scores + length);
          }
        }
      }
      api.tfm_results_free(out);
    }
    return results;
  }

  /// Sampling's options: any given (not None) turns sampling on.
  static void setSampling(tfm_search_options &opts, py::handle topk,
                          py::handle topp, py::handle temperature,
                          py::handle seed) {
    opts.sampling = !topk.is_none() || !topp.is_none() ||
                    !temperature.is_none() || !seed.is_none();
    if (!topk.is_none())
      opts.sampling_topk =
          int32_t(intArg(topk, "sampling_topk", 0, kInt32Max, " (0: all)"));
    if (!topp.is_none()) {
      opts.sampling_topp = floatArg(topp, "sampling_topp");
      if (!(opts.sampling_topp > 0 && opts.sampling_topp <= 1))
        throw py::value_error("sampling_topp must be in (0, 1], found " +
                              reprText(topp));
    }
    if (!temperature.is_none()) {
      opts.sampling_temperature = floatArg(temperature, "sampling_temperature");
      if (opts.sampling_temperature <= 0)
        throw py::value_error("sampling_temperature must be > 0, found " +
                              reprText(temperature));
    }
    if (!seed.is_none())
      opts.seed = seedArg(seed, "seed");
  }

  /// Scores targets[i] as the translation of source[i] (score_batch), in
  /// batches of `max_batch_size`, as the translator's --score does.
  std::vector<ScoringResult> scoreBatch(py::handle source, py::handle target,
                                        py::handle maxBatchSizeArg,
                                        py::handle lengthPenaltyArg,
                                        py::handle sourceLangArg,
                                        py::handle targetLangArg) {
    tfm_search_options opts;
    api.tfm_search_options_default(&opts);
    opts.length_penalty = floatArg(lengthPenaltyArg, "length_penalty");
    size_t maxBatchSize =
        size_t(intArg(maxBatchSizeArg, "max_batch_size", 1, kInt32Max));
    tfm_language_tokens langTokens =
        languageTokens(sourceLangArg, targetLangArg);
    std::vector<bool> text;
    std::vector<std::vector<int32_t>> ids =
        sourceSentences(source, langTokens, text);
    std::vector<std::vector<int32_t>> targets =
        scoredTargets(target, ids.size(), langTokens);
    std::vector<int32_t> forced(langTokens.target_prefix,
                                langTokens.target_prefix +
                                    langTokens.target_prefix_length);
    std::vector<ScoringResult> results(ids.size());
    std::vector<size_t> pending;
    for (size_t i = 0; i < ids.size(); ++i)
      if (!ids[i].empty()) // a blank source scores 0
        pending.push_back(i);
    for (size_t start = 0; start < pending.size(); start += maxBatchSize) {
      size_t count = std::min(pending.size() - start, maxBatchSize);
      std::vector<const int32_t *> sources, prefixes, scored;
      std::vector<int32_t> lengths, prefixLengths, scoredLengths;
      for (size_t k = 0; k < count; ++k) {
        size_t i = pending[start + k];
        sources.push_back(ids[i].data());
        lengths.push_back(int32_t(ids[i].size()));
        prefixes.push_back(forced.data());
        prefixLengths.push_back(int32_t(forced.size()));
        scored.push_back(targets[i].data());
        scoredLengths.push_back(int32_t(targets[i].size()));
      }
      tfm_batch batch{int32_t(count),       sources.data(),
                      lengths.data(),       prefixes.data(),
                      prefixLengths.data(), scored.data(),
                      scoredLengths.data(), nullptr};
      tfm_results *out = nullptr;
      tfm_status status;
      {
        py::gil_scoped_release unlocked;
        status = api.tfm_score_batch(model, &opts, &batch, &out);
      }
      if (status) {
        std::string message = api.tfm_status_message(status);
        api.tfm_status_free(status);
        throw std::runtime_error(batchError(message, &pending[start], count));
      }
      for (size_t k = 0; k < count; ++k) {
        ScoringResult &r = results[pending[start + k]];
        int32_t length = 0;
        const float *scores =
            api.tfm_results_token_scores(out, int32_t(k), 0, &length);
        r.score = api.tfm_results_score(out, int32_t(k), 0);
        r.tokenScores.assign(scores, scores + length);
      }
      api.tfm_results_free(out);
    }
    return results;
  }

private:
  /// score_batch's targets: one per source sentence, each a str (cut by
  /// the target's SentencePiece model, after the target language's
  /// tokens, which text translations leave out) or target token ids (a
  /// last EOS dropped).
  std::vector<std::vector<int32_t>>
  scoredTargets(py::handle arg, size_t count,
                const tfm_language_tokens &langTokens) {
    auto list = py::reinterpret_steal<py::list>(
        PyUnicode_Check(arg.ptr()) ? nullptr : PySequence_List(arg.ptr()));
    if (!list) {
      PyErr_Clear();
      throw py::type_error("target must be a list with a translation per "
                           "source sentence, found " +
                           describe(arg));
    }
    if (list.size() != count)
      throw py::value_error("target has " + std::to_string(list.size()) +
                            " entries for " + std::to_string(count) +
                            " source sentences");
    std::vector<std::vector<int32_t>> out(count);
    for (size_t i = 0; i < count; ++i) {
      std::string where = "target " + std::to_string(i);
      if (PyUnicode_Check(list[i].ptr()))
        out[i] = targetText(list[i], where, langTokens);
      else
        out[i] = targetTokenIds(list[i], where);
    }
    return out;
  }

  std::vector<int32_t> targetText(py::handle item, const std::string &where,
                                  const tfm_language_tokens &langTokens) {
    if (!tokenizer)
      throw std::invalid_argument(where + ": this model has no tokenizer: "
                                          "give target token ids");
    std::string line;
    if (utf8Text(item, line))
      warn(PyExc_UnicodeWarning, where + ": lone surrogates (invalid UTF-8), "
                                         "replaced by U+FFFD");
    std::vector<int32_t> out(langTokens.target_prefix,
                             langTokens.target_prefix +
                                 langTokens.target_prefix_length);
    int32_t *ids = nullptr, length = 0;
    tfm_status status = api.tfm_tokenizer_encode_target(
        tokenizer, line.data(), line.size(), &ids, &length);
    if (status) {
      std::string message = api.tfm_status_message(status);
      api.tfm_status_free(status);
      throw std::invalid_argument(where + ": " + message);
    }
    out.insert(out.end(), ids, ids + length);
    api.tfm_free(ids);
    return out;
  }

  std::vector<int32_t> targetTokenIds(py::handle item,
                                      const std::string &where) {
    auto list = py::reinterpret_steal<py::list>(PySequence_List(item.ptr()));
    if (!list) {
      PyErr_Clear();
      throw py::type_error(where +
                           ": expected a str or a list of target "
                           "token ids, found " +
                           describe(item));
    }
    std::vector<int32_t> out;
    for (size_t k = 0; k < list.size(); ++k)
      out.push_back(targetId(list[k], where + ": token " + std::to_string(k)));
    if (!out.empty() && out.back() == config.eos_token_id)
      out.pop_back();
    for (int32_t id : out)
      if (id == config.eos_token_id || id == config.pad_token_id)
        throw py::value_error(where + ": token id " + std::to_string(id) +
                              " is the model's " +
                              (id == config.eos_token_id ? "EOS" : "padding") +
                              ", which a target holds only last (EOS)");
    return out;
  }

  /// The source ids of `source` (an iterable of str or sequences of
  /// source ids), each checked, framed and cut as the translator does;
  /// `text[i]` says whether sentence i was a str. A blank sentence has no
  /// ids.
  std::vector<std::vector<int32_t>>
  sourceSentences(py::handle source, const tfm_language_tokens &langTokens,
                  std::vector<bool> &text) {
    // One str is an iterable of one-character sentences: surely a mistake.
    if (PyUnicode_Check(source.ptr()) || PyBytes_Check(source.ptr()) ||
        PyByteArray_Check(source.ptr()))
      throw py::type_error("source must be a list of sentences, found " +
                           std::string(Py_TYPE(source.ptr())->tp_name) +
                           ": put one sentence in a list");
    if (!py::isinstance<py::iterable>(source))
      throw py::type_error("source must be a list of sentences (str or "
                           "lists of token ids), found " +
                           describe(source));
    // Any iterable (a generator, a numpy array of ids), read once into a
    // list of our own: a warnings hook or an __index__ that the loop below
    // calls could change the caller's.
    auto sentences =
        py::reinterpret_steal<py::list>(PySequence_List(source.ptr()));
    if (!sentences)
      throwPythonError();

    // Source ids per sentence; none for a blank line, which gets "" (or no
    // ids for no ids, as the translator gives a blank line for a blank
    // one).
    std::vector<std::vector<int32_t>> ids(sentences.size());
    text.assign(sentences.size(), false);
    for (size_t i = 0; i < sentences.size(); ++i) {
      py::handle item = sentences[i];
      std::string where = "sentence " + std::to_string(i);
      if (PyUnicode_Check(item.ptr())) {
        text[i] = true;
        std::string line;
        if (utf8Text(item, line))
          warn(PyExc_UnicodeWarning,
               where + ": lone surrogates (invalid UTF-8), replaced by "
                       "U+FFFD as the translator does");
        ids[i] = encode(line, where, langTokens);
      } else if (PyBytes_Check(item.ptr()) || PyByteArray_Check(item.ptr()) ||
                 PyMemoryView_Check(item.ptr())) {
        // Bytes are a sequence of ints to Python, yet no one means them as
        // token ids; and which text they are is the caller's to say.
        throw py::type_error(
            where + ": expected a str or a list of token ids, found " +
            Py_TYPE(item.ptr())->tp_name +
            ": decode it first (.decode('utf-8', 'surrogateescape') keeps "
            "invalid bytes, which are then replaced as the translator "
            "does)");
      } else if (PySequence_Check(item.ptr())) {
        ids[i] = tokenIds(item, where);
      } else {
        throw py::type_error(where +
                             ": expected a str or a list of token ids, "
                             "found " +
                             describe(item));
      }
      if (int64_t(ids[i].size()) > config.max_positions) {
        warn(PyExc_UserWarning, where + ": " + std::to_string(ids[i].size()) +
                                    " tokens, truncated to the model's " +
                                    std::to_string(config.max_positions) +
                                    " positions");
        // Keep the sentence's end: EOS stays last (every sentence here
        // ends in EOS).
        ids[i].resize(size_t(config.max_positions));
        ids[i].back() = int32_t(config.eos_token_id);
      }
    }

    return ids;
  }

  void check(tfm_status status) {
    if (!status)
      return;
    std::string message = api.tfm_status_message(status);
    api.tfm_status_free(status);
    throw std::runtime_error(message);
  }

  /// A sequence of token ids, checked against the vocabulary here so that
  /// the error names the sentence as Python counts; EOS appended when
  /// missing (the model reads sentences that end in it).
  std::vector<int32_t> tokenIds(py::handle item, const std::string &where) {
    // A copy, as for the sentences: __index__ could change the original.
    auto list = py::reinterpret_steal<py::list>(PySequence_List(item.ptr()));
    if (!list) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError))
        throwPythonError();
      PyErr_Clear(); // a 0-d numpy array, say
      throw py::type_error(where +
                           ": expected a str or a list of token ids, found " +
                           describe(item));
    }
    std::vector<int32_t> out;
    for (size_t k = 0; k < list.size(); ++k) {
      py::handle token = list[k];
      if (PyBool_Check(token.ptr()) || !PyIndex_Check(token.ptr()))
        throw py::type_error(where + ": token " + std::to_string(k) + " is " +
                             describe(token) + "; token ids must be integers");
      std::optional<long long> id = indexValue(token);
      if (!id || *id < 0 || *id >= config.source_vocab_size)
        throw py::value_error(where + ": token id " + reprText(token) +
                              " is outside the vocabulary [0, " +
                              std::to_string(config.source_vocab_size) + ")");
      out.push_back(int32_t(*id));
    }
    if (!out.empty() && out.back() != config.eos_token_id)
      out.push_back(int32_t(config.eos_token_id));
    return out;
  }

  /// The target prefix of each of `count` sentences: `arg` is None, or a
  /// list holding for each sentence None or a sequence of target token ids
  /// or of vocabulary pieces (str).
  std::vector<std::vector<int32_t>> targetPrefixes(py::handle arg,
                                                   size_t count) {
    std::vector<std::vector<int32_t>> out(count);
    if (arg.is_none())
      return out;
    auto list = py::reinterpret_steal<py::list>(
        PyUnicode_Check(arg.ptr()) ? nullptr : PySequence_List(arg.ptr()));
    if (!list) {
      PyErr_Clear();
      throw py::type_error("target_prefix must be a list with a prefix (or "
                           "None) per sentence, found " +
                           describe(arg));
    }
    if (list.size() != count)
      throw py::value_error("target_prefix has " + std::to_string(list.size()) +
                            " entries for " + std::to_string(count) +
                            " sentences");
    for (size_t i = 0; i < count; ++i)
      if (!list[i].is_none())
        out[i] = prefixIds(list[i], "target_prefix " + std::to_string(i));
    return out;
  }

  /// One target prefix: target token ids, or vocabulary pieces.
  std::vector<int32_t> prefixIds(py::handle item, const std::string &where) {
    auto list = py::reinterpret_steal<py::list>(
        PyUnicode_Check(item.ptr()) ? nullptr : PySequence_List(item.ptr()));
    if (!list) {
      PyErr_Clear();
      throw py::type_error(where +
                           ": expected a list of target token ids or "
                           "pieces, found " +
                           describe(item));
    }
    std::vector<int32_t> out;
    for (size_t k = 0; k < list.size(); ++k) {
      py::handle token = list[k];
      if (PyUnicode_Check(token.ptr()))
        out.push_back(pieceId(token.cast<std::string>(),
                              where + ": token " + std::to_string(k)));
      else
        out.push_back(targetId(token, where + ": token " + std::to_string(k)));
    }
    return out;
  }

  int32_t targetId(py::handle token, const std::string &where) {
    if (PyBool_Check(token.ptr()) || !PyIndex_Check(token.ptr()))
      throw py::type_error(where + " is " + describe(token) +
                           "; expected a token id or a piece");
    std::optional<long long> id = indexValue(token);
    if (!id || *id < 0 || *id >= config.target_vocab_size)
      throw py::value_error(where + ": token id " + reprText(token) +
                            " is outside the target vocabulary [0, " +
                            std::to_string(config.target_vocab_size) + ")");
    return int32_t(*id);
  }

  /// An integer token's value through __index__ (raising what it raises);
  /// none when it does not fit a long long.
  static std::optional<long long> indexValue(py::handle token) {
    auto index = py::reinterpret_steal<py::object>(PyNumber_Index(token.ptr()));
    if (!index)
      throwPythonError();
    int overflow = 0;
    long long id = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (id == -1 && PyErr_Occurred())
      throwPythonError();
    if (overflow)
      return std::nullopt;
    return id;
  }

  int32_t pieceId(const std::string &piece, const std::string &where) {
    if (piece.empty())
      throw py::value_error(where + ": an empty piece names no token");
    if (!tokenizer)
      throw std::invalid_argument(where + ": this model has no tokenizer: "
                                          "give target token ids");
    int32_t id = 0;
    tfm_status status =
        api.tfm_tokenizer_piece_id(tokenizer, piece.data(), piece.size(), &id);
    if (status) {
      std::string message = api.tfm_status_message(status);
      api.tfm_status_free(status);
      throw std::invalid_argument(where + ": " + message);
    }
    return id;
  }

  /// An optional language code argument: None or a str; "" (no code)
  /// would read as None, and is a ValueError.
  static std::string codeArg(py::handle arg, const std::string &name) {
    if (arg.is_none())
      return "";
    if (!PyUnicode_Check(arg.ptr()))
      throw py::type_error(name +
                           " must be a str (a language code such as "
                           "\"de\") or None, found " +
                           describe(arg));
    std::string code = arg.cast<std::string>();
    if (code.empty())
      throw py::value_error(name + " must not be empty: give a language "
                                   "code such as \"de\", or None");
    return code;
  }

  /// The tokens of source_lang and target_lang (each checked alone first,
  /// so that an error names it); none without them or without languages.
  tfm_language_tokens languageTokens(py::handle sourceArg,
                                     py::handle targetArg) {
    std::string codes[2] = {codeArg(sourceArg, "source_lang"),
                            codeArg(targetArg, "target_lang")};
    tfm_language_tokens tokens{};
    for (int side = 0; side < 2; ++side) {
      const char *name = side == 0 ? "source_lang" : "target_lang";
      if (codes[side].empty())
        continue;
      if (!languages)
        throw py::value_error(std::string(name) + " " +
                              reprText(side == 0 ? sourceArg : targetArg) +
                              ": this model has no languages (a multilingual "
                              "model's come with its tokenizer's files; a "
                              "model of one pair gets them from tfmc compile "
                              "--source-lang --target-lang)");
      const char *code = codes[side].c_str();
      tfm_status status =
          api.tfm_languages_tokens(languages, side == 0 ? code : nullptr,
                                   side == 1 ? code : nullptr, &tokens);
      if (status) {
        std::string message = api.tfm_status_message(status);
        api.tfm_status_free(status);
        throw py::value_error(std::string(name) + ": " + message);
      }
    }
    if (languages)
      check(api.tfm_languages_tokens(
          languages, codes[0].empty() ? nullptr : codes[0].c_str(),
          codes[1].empty() ? nullptr : codes[1].c_str(), &tokens));
    return tokens;
  }

  /// Source ids of a text, or none when it is blank; framed with the
  /// source language's tokens where the model has languages.
  std::vector<int32_t> encode(const std::string &line, const std::string &where,
                              const tfm_language_tokens &frame) {
    if (line.find_first_not_of(" \t\r\n\v\f") == std::string::npos)
      return {};
    if (!tokenizer)
      throw std::invalid_argument(
          where + ": this model has no tokenizer (source.spm, target.spm, "
                  "vocab.json): pass lists of token ids");
    int32_t *ids = nullptr, length = 0;
    tfm_status status = api.tfm_tokenizer_encode_framed(
        tokenizer, languages ? &frame : nullptr, line.data(), line.size(), &ids,
        &length);
    if (status) {
      std::string message = api.tfm_status_message(status);
      api.tfm_status_free(status);
      throw std::invalid_argument(where + ": " + message);
    }
    std::vector<int32_t> out(ids, ids + length);
    api.tfm_free(ids);
    return out;
  }

  std::string decode(const int32_t *tokens, int32_t length) {
    char *text = nullptr;
    size_t size = 0;
    check(api.tfm_tokenizer_decode(tokenizer, tokens, length, &text, &size));
    std::string out(text, size);
    api.tfm_free(text);
    return out;
  }

  /// A failed batch's error, its sentences named by their index in
  /// `source`. The runtime counts a batch's sentences from 1 ("sentence 2
  /// of the batch: the logits ... are not finite"): that one is renamed;
  /// other errors name the batch's first and last sentence.
  static std::string batchError(const std::string &message,
                                const size_t *sentences, size_t count) {
    static const std::string prefix = "sentence ", suffix = " of the batch";
    size_t digits = message.find_first_not_of("0123456789", prefix.size());
    if (message.compare(0, prefix.size(), prefix) == 0 &&
        digits != prefix.size() && digits != std::string::npos &&
        digits - prefix.size() < 10 &&
        message.compare(digits, suffix.size(), suffix) == 0) {
      size_t k =
          std::stoul(message.substr(prefix.size(), digits - prefix.size()));
      if (k >= 1 && k <= count)
        return "sentence " + std::to_string(sentences[k - 1]) +
               message.substr(digits + suffix.size());
    }
    std::string which = count == 1
                            ? "sentence " + std::to_string(sentences[0])
                            : "sentences " + std::to_string(sentences[0]) +
                                  " to " + std::to_string(sentences[count - 1]);
    return which + ": " + message;
  }

  void *handle = nullptr;
  RuntimeApi api;
  std::string weights;
  tfm_model *model = nullptr;
  tfm_model_config config{};
  tfm_tokenizer *tokenizer = nullptr;
  tfm_languages *languages = nullptr;
};

} // namespace

PYBIND11_MODULE(tfmc, m) {
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
  py::class_<Translator>(m, "Translator")
      .def(py::init<py::handle, py::handle>(), py::arg("model_dir"),
           py::arg("threads") = 2,
           "Translator(model_dir, threads=2)\n\n"
           "Loads the model that `tfmc compile -o MODEL_DIR` wrote (a str or "
           "os.PathLike); `threads` (1 to 1024) is the process's OpenMP "
           "thread count.")
      .def("translate_batch", &Translator::translateBatch, py::arg("source"),
           py::kw_only(), py::arg("beam_size") = 1, py::arg("n_best") = 1,
           py::arg("max_length") = 256, py::arg("max_length_ratio") = 3.0,
           py::arg("min_length") = 0, py::arg("length_penalty") = 1.0,
           py::arg("max_batch_size") = 32, py::arg("return_scores") = false,
           py::arg("return_token_scores") = false,
           py::arg("target_prefix") = py::none(),
           py::arg("source_lang") = py::none(),
           py::arg("target_lang") = py::none(),
           py::arg("repetition_penalty") = py::none(),
           py::arg("no_repeat_ngram_size") = py::none(),
           py::arg("sampling_topk") = py::none(),
           py::arg("sampling_topp") = py::none(),
           py::arg("sampling_temperature") = py::none(),
           py::arg("seed") = py::none(), py::arg("use_vmap") = true,
           "translate_batch(source, *, beam_size=1, n_best=1, max_length=256, "
           "max_length_ratio=3.0, min_length=0, length_penalty=1.0, "
           "max_batch_size=32, return_scores=False, return_token_scores=False, "
           "target_prefix=None, source_lang=None, target_lang=None, "
           "repetition_penalty=None, no_repeat_ngram_size=None, "
           "sampling_topk=None, sampling_topp=None, sampling_temperature=None, "
           "seed=None, use_vmap=True) -> "
           "list[TranslationResult]\n\n"
           "Translates a list (any iterable) of sentences, each a str (the "
           "model's tokenizer cuts it) or a sequence of source token ids "
           "(EOS appended if missing); returns one TranslationResult per "
           "sentence. Blank strings give \"\", empty id lists []. As in the "
           "translator, invalid UTF-8 (lone surrogates) becomes U+FFFD and a "
           "sentence longer than the model's positions is cut (EOS kept "
           "last), each with a warning. The options are the translator's "
           "(translator --help): 1 <= n_best <= beam_size <= the target "
           "vocabulary's size, max_length >= 1, max_length_ratio >= 0 (0: "
           "off), min_length >= 0, length_penalty finite, max_batch_size >= "
           "1, repetition_penalty > 0 (1: off), no_repeat_ngram_size >= 0 (0: "
           "off), as the translator's --repetition-penalty and "
           "--no-repeat-ngram-size (None: the checkpoint's "
           "generation_config.json, else off). Any of sampling_topk (>= 0, 0: "
           "all), "
           "sampling_topp (in (0, 1]), sampling_temperature (> 0) and seed "
           "(0 to 2**64 - 1) samples instead of searching, as the "
           "translator's --sampling-* and --seed (beam_size 1; n_best=N "
           "draws N samples; sentence i's streams are seeded from seed and "
           "i, its index in source). return_scores gives each hypothesis's "
           "score (translator "
           "--with-scores), return_token_scores its tokens' log-probabilities "
           "(--token-scores). target_prefix, if given, holds for each "
           "sentence None or the target token ids (or vocabulary pieces) its "
           "translations start "
           "with (None or []: none), forced as the translator's "
           "--target-prefix forces them. "
           "source_lang and target_lang (an ISO code such as \"de\" or the "
           "model's own: \"__de__\", \"deu_Latn\", \"de_DE\"; not \"\") do "
           "what the "
           "translator's --source-lang and --target-lang do: str sentences "
           "get the source language's token (id sentences are taken as "
           "given), the target language's token is forced first, before "
           "any target_prefix (MADLAD-400's goes before str sentences "
           "instead). "
           "use_vmap=False translates over the whole target vocabulary "
           "where the model has a shortlist (the translator's --no-vmap). "
           "A bad argument raises TypeError or ValueError naming it and "
           "the sentence (its index in `source`); the GIL is released while "
           "translating.")
      .def("read_vmap", &Translator::readVmap, py::arg("path"),
           "read_vmap(path) -> str | None\n\n"
           "Replaces the model's vocabulary shortlist with the vmap text "
           "file at `path` (the translator's --vmap; docs/Shortlist.md), "
           "its pieces given ids by the model's tokenizer; returns the "
           "warning about pieces it skipped, or None. Raises ValueError "
           "naming the file and line of a line that is not a rule.")
      .def_property_readonly("has_vmap", &Translator::hasVmap,
                             "Whether the model has a vocabulary shortlist.")
      .def("score_batch", &Translator::scoreBatch, py::arg("source"),
           py::arg("target"), py::kw_only(), py::arg("max_batch_size") = 32,
           py::arg("length_penalty") = 1.0, py::arg("source_lang") = py::none(),
           py::arg("target_lang") = py::none(),
           "score_batch(source, target, *, max_batch_size=32, "
           "length_penalty=1.0, source_lang=None, target_lang=None) -> "
           "list[ScoringResult]\n\n"
           "Scores each target[i] as a translation of source[i] (the "
           "translator's --score): its log-probability under the model, the "
           "target's tokens forced through the decoder's steps, then EOS; no "
           "search. source is as translate_batch's; a target is a str (cut "
           "by the model's target tokenizer, after the target language's "
           "token) or a sequence of target token ids (a last EOS dropped). "
           "A blank source scores 0. The score is sum(log p) / "
           "length^length_penalty, EOS counted, as return_scores gives it.");
}
