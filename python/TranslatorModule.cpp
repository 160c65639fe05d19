//===- TranslatorModule.cpp - tfmc's Python API -------------------*- C++ -*-===//
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
//===----------------------------------------------------------------------===//

#include "tfm/runtime.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <string>
#include <variant>
#include <vector>

namespace py = pybind11;

namespace {

/// The runtime's C API, as found in one model's libtranslator.so.
struct RuntimeApi {
#define TFM_API(name) decltype(&::name) name = nullptr;
#define TFM_API_LIST                                                           \
  TFM_API(tfm_status_message)                                                  \
  TFM_API(tfm_status_free)                                                     \
  TFM_API(tfm_model_open)                                                      \
  TFM_API(tfm_model_close)                                                     \
  TFM_API(tfm_model_get_config)                                                \
  TFM_API(tfm_search_options_default)                                          \
  TFM_API(tfm_set_num_threads)                                                 \
  TFM_API(tfm_translate)                                                       \
  TFM_API(tfm_results_count)                                                   \
  TFM_API(tfm_results_tokens)                                                  \
  TFM_API(tfm_results_score)                                                   \
  TFM_API(tfm_results_free)                                                    \
  TFM_API(tfm_tokenizer_open)                                                  \
  TFM_API(tfm_tokenizer_close)                                                 \
  TFM_API(tfm_tokenizer_encode)                                                \
  TFM_API(tfm_tokenizer_decode)                                                \
  TFM_API(tfm_free)
  TFM_API_LIST
#undef TFM_API
};

bool isFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// One sentence's hypotheses, best first: text for text input, token ids
/// for ids input; their scores when asked for.
struct TranslationResult {
  std::vector<std::variant<std::string, std::vector<int32_t>>> hypotheses;
  std::vector<float> scores;
};

class Translator {
public:
  Translator(const std::string &modelDir, int threads) {
    std::string library = modelDir + "/libtranslator.so";
    if (!isFile(library))
      throw std::invalid_argument(
          library + " does not exist: pass the directory `tfmc compile -o` "
                    "wrote (a tfmc older than the Python API wrote none)");
    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      throw std::runtime_error(std::string("cannot load ") + library + ": " +
                               dlerror());
#define TFM_API(name)                                                          \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));       \
  if (!api.name)                                                               \
    throw std::runtime_error(library + " lacks " #name);
    TFM_API_LIST
#undef TFM_API
    // The weights beside the library, else inside the translator.
    weights = modelDir + "/model.tfmw";
    if (!isFile(weights))
      weights = modelDir + "/translator";
    check(api.tfm_model_open(weights.c_str(), &model));
    check(api.tfm_set_num_threads(threads));
    api.tfm_model_get_config(model, &config);
    check(api.tfm_tokenizer_open(weights.c_str(), &config, &tokenizer));
  }

  ~Translator() {
    if (tokenizer)
      api.tfm_tokenizer_close(tokenizer);
    if (model)
      api.tfm_model_close(model);
    // The library stays loaded: OpenMP's threads may still run its code.
  }

  /// Translates `sources`, strings or lists of token ids, in batches of
  /// `maxBatchSize`; the search options are the translator's.
  std::vector<TranslationResult>
  translateBatch(const py::list &sources, int beamSize, int nBest,
                 int maxLength, float maxLengthRatio, int minLength,
                 float lengthPenalty, int maxBatchSize, bool returnScores) {
    tfm_search_options opts;
    api.tfm_search_options_default(&opts);
    opts.beam_size = beamSize;
    opts.n_best = nBest;
    opts.max_length = maxLength;
    opts.max_length_ratio = maxLengthRatio;
    opts.min_length = minLength;
    opts.length_penalty = lengthPenalty;
    if (maxBatchSize < 1)
      throw std::invalid_argument("max_batch_size must be at least 1");

    // Source ids per sentence; none for a blank line, which gets "".
    std::vector<std::vector<int32_t>> ids(sources.size());
    std::vector<bool> text(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      py::handle item = sources[i];
      if (py::isinstance<py::str>(item)) {
        text[i] = true;
        ids[i] = encode(item.cast<std::string>(), i);
      } else if (py::isinstance<py::sequence>(item)) {
        for (py::handle token : item.cast<py::sequence>()) {
          if (!py::isinstance<py::int_>(token))
            throw py::type_error("sentence " + std::to_string(i) +
                                 ": token ids must be integers");
          ids[i].push_back(token.cast<int32_t>());
        }
        // The model reads sentences that end in EOS.
        if (!ids[i].empty() && ids[i].back() != config.eos_token_id)
          ids[i].push_back(int32_t(config.eos_token_id));
      } else {
        throw py::type_error("sentence " + std::to_string(i) +
                             ": expected a str or a list of token ids");
      }
    }

    std::vector<TranslationResult> results(sources.size());
    std::vector<size_t> pending;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!ids[i].empty())
        pending.push_back(i);
      else if (text[i]) {
        results[i].hypotheses.emplace_back(std::string());
        if (returnScores)
          results[i].scores.push_back(0.0f);
      } else {
        throw std::invalid_argument("sentence " + std::to_string(i) +
                                    " has no token ids");
      }
    }
    for (size_t start = 0; start < pending.size(); start += maxBatchSize) {
      size_t count = std::min(pending.size() - start, size_t(maxBatchSize));
      std::vector<const int32_t *> batch;
      std::vector<int32_t> lengths;
      for (size_t k = 0; k < count; ++k) {
        batch.push_back(ids[pending[start + k]].data());
        lengths.push_back(int32_t(ids[pending[start + k]].size()));
      }
      tfm_results *out = nullptr;
      tfm_status status;
      {
        py::gil_scoped_release unlocked;
        status = api.tfm_translate(model, &opts, batch.data(), lengths.data(),
                                   int32_t(count), &out);
      }
      if (status) {
        // Name the sentence by its index in `sources`.
        std::string message = api.tfm_status_message(status);
        api.tfm_status_free(status);
        throw std::runtime_error("batch of sentences " +
                                 std::to_string(pending[start]) + "-" +
                                 std::to_string(pending[start + count - 1]) +
                                 ": " + message);
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
        }
      }
      api.tfm_results_free(out);
    }
    return results;
  }

private:
  void check(tfm_status status) {
    if (!status)
      return;
    std::string message = api.tfm_status_message(status);
    api.tfm_status_free(status);
    throw std::runtime_error(message);
  }

  /// Source ids of a text, or none when it is blank.
  std::vector<int32_t> encode(const std::string &line, size_t index) {
    if (line.find_first_not_of(" \t\r\n\v\f") == std::string::npos)
      return {};
    if (!tokenizer)
      throw std::invalid_argument(
          "this model has no tokenizer (source.spm, target.spm, vocab.json): "
          "pass lists of token ids");
    int32_t *ids = nullptr, length = 0;
    tfm_status status = api.tfm_tokenizer_encode(tokenizer, line.data(),
                                                 line.size(), &ids, &length);
    if (status) {
      std::string message = api.tfm_status_message(status);
      api.tfm_status_free(status);
      throw std::invalid_argument("sentence " + std::to_string(index) + ": " +
                                  message);
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

  void *handle = nullptr;
  RuntimeApi api;
  std::string weights;
  tfm_model *model = nullptr;
  tfm_model_config config{};
  tfm_tokenizer *tokenizer = nullptr;
};

} // namespace

PYBIND11_MODULE(tfmc, m) {
  m.doc() = "Translation with models compiled by tfmc (tfmc compile MODEL_DIR "
            "-o OUT_DIR).";
  py::class_<TranslationResult>(m, "TranslationResult")
      .def_readonly("hypotheses", &TranslationResult::hypotheses,
                    "the n best translations, best first: str for text "
                    "input, lists of token ids (no EOS) for ids input")
      .def_readonly("scores", &TranslationResult::scores,
                    "their scores, sum(log p) / length^length_penalty "
                    "(empty unless return_scores)")
      .def("__repr__", [](const TranslationResult &r) {
        return "TranslationResult(hypotheses=" +
               py::repr(py::cast(r.hypotheses)).cast<std::string>() +
               ", scores=" + py::repr(py::cast(r.scores)).cast<std::string>() +
               ")";
      });
  py::class_<Translator>(m, "Translator")
      .def(py::init<const std::string &, int>(), py::arg("model_dir"),
           py::arg("threads") = 2,
           "Loads the model that `tfmc compile -o MODEL_DIR` wrote; `threads` "
           "is the process's OpenMP thread count.")
      .def("translate_batch", &Translator::translateBatch, py::arg("source"),
           py::kw_only(), py::arg("beam_size") = 1, py::arg("n_best") = 1,
           py::arg("max_length") = 256, py::arg("max_length_ratio") = 3.0f,
           py::arg("min_length") = 0, py::arg("length_penalty") = 1.0f,
           py::arg("max_batch_size") = 32, py::arg("return_scores") = false,
           "Translates a list of sentences, each a str (the model's tokenizer "
           "cuts it) or a list of source token ids (EOS appended if missing); "
           "returns one TranslationResult per sentence. Blank strings give "
           "\"\". The options are the translator's (translator --help); the "
           "GIL is released while translating.");
}
