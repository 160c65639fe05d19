//===- Translator.cpp - tfmc.Translator: a compiled model -------*- C++ -*-===//

#include "python/Translator.h"

#include "python/Arguments.h"
#include "python/Sentences.h"

#include <dlfcn.h>

#include <algorithm>

namespace py = pybind11;

using namespace tfm_python;

Translator::Translator(py::handle modelDirArg, py::handle threadsArg) {
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
  model = owned(api.tfm_model_close, [&](tfm_model **out) {
    return api.tfm_model_open(weights.c_str(), out);
  });
  tfm_client::check(api, api.tfm_set_num_threads(threads));
  api.tfm_model_get_config(model.get(), &config);
  tokenizer = owned(api.tfm_tokenizer_close, [&](tfm_tokenizer **out) {
    return api.tfm_tokenizer_open(weights.c_str(), &config, out);
  });
  languages = owned(api.tfm_languages_close, [&](tfm_languages **out) {
    return api.tfm_languages_open(weights.c_str(), &config, out);
  });
}

py::object Translator::readVmap(py::handle pathValue) {
  std::string path = pathArg(pathValue, "path");
  char *warning = nullptr;
  if (tfm_status status = api.tfm_model_read_vmap(model.get(), path.c_str(),
                                                  tokenizer.get(), &warning))
    throw py::value_error(tfm_client::takeError(api, status).what());
  if (!warning)
    return py::none();
  py::str text(warning);
  api.tfm_free(warning);
  return std::move(text);
}

/// A blank sentence's translation: "" (or no ids), as the translator gives
/// it.
static TranslationResult blankTranslation(bool text, bool returnScores,
                                          bool returnTokenScores) {
  TranslationResult result;
  if (text)
    result.hypotheses.emplace_back(std::string());
  else
    result.hypotheses.emplace_back(std::vector<int32_t>());
  if (returnScores)
    result.scores.push_back(0.0f);
  if (returnTokenScores)
    result.tokenScores.emplace_back();
  return result;
}

std::vector<TranslationResult>
Translator::translateBatch(py::handle source, const KeywordArgs &options) {
  tfm_search_options opts = searchOptions(options);
  setSampling(opts, options);
  try {
    client().checkOptions(opts);
  } catch (const tfm_client::Error &e) {
    throw py::value_error(e.what());
  }
  size_t maxBatchSize = size_t(options.integer("max_batch_size", 1, kInt32Max));
  if (options.choice("format", {"text", "html"}) == 1)
    return translateDocuments(source, options, opts, maxBatchSize);
  bool returnScores = options.boolean("return_scores");
  bool returnTokenScores = options.boolean("return_token_scores");
  SentenceReader reader = sentenceReader();
  Sources sources = readSources(reader, source, options);
  std::vector<std::vector<int32_t>> prefixes =
      reader.targetPrefixes(options["target_prefix"], sources.ids.size());
  // The target language's token first, as the translator forces it.
  const tfm_language_tokens &langTokens = sources.langTokens;
  for (std::vector<int32_t> &prefix : prefixes)
    prefix.insert(prefix.begin(), langTokens.target_prefix,
                  langTokens.target_prefix + langTokens.target_prefix_length);
  std::vector<TranslationResult> results(sources.ids.size());
  for (size_t i = 0; i < sources.ids.size(); ++i)
    if (sources.ids[i].empty())
      results[i] =
          blankTranslation(sources.text[i], returnScores, returnTokenScores);
  runBatches(
      false, opts, sources.pending, maxBatchSize,
      [&](tfm_client::BatchBuilder &batch, size_t i) {
        batch.add(sources.ids[i], prefixes[i], int64_t(i)); // i seeds it
      },
      [&](const tfm_client::Results &out, int32_t k, size_t i) {
        keepTranslations(out.hypotheses(k), sources.text[i], returnScores,
                         returnTokenScores, results[i]);
      });
  return results;
}

/// A beam wider than the target vocabulary finds nothing more at its
/// first step, and the search's logits (rows x vocabulary floats per
/// sentence) would already be vocabulary^2: beam_size=10**6 would exhaust
/// the memory instead of failing. The runtime judges the rest.
int32_t Translator::beamSize(py::handle value) const {
  int64_t beam = intArg(value, "beam_size", kInt32Min, kInt32Max);
  if (beam > config.target_vocab_size)
    throw py::value_error(
        "beam_size must be at most the target vocabulary's size, " +
        std::to_string(config.target_vocab_size) + ", found " +
        reprText(value));
  return int32_t(beam);
}

/// The C API reads a repetition penalty of 0 as "the model's", which
/// Python says with None: 0 given is a mistake the runtime cannot see.
/// The runtime judges the other values.
static float repetitionPenalty(py::handle value) {
  float penalty = floatArg(value, "repetition_penalty");
  if (penalty == 0)
    throw py::value_error("repetition_penalty 0 is no penalty: None takes "
                          "the model's, 1 turns it off");
  return penalty;
}

tfm_search_options Translator::searchOptions(const KeywordArgs &options) const {
  tfm_search_options opts;
  api.tfm_search_options_default(&opts);
  opts.use_vmap = options.boolean("use_vmap");
  // The runtime judges the options' values (Client::checkOptions); here
  // only what fits its types, and the limits of resources.
  opts.beam_size = beamSize(options["beam_size"]);
  opts.n_best = int32_t(options.integer("n_best", kInt32Min, kInt32Max));
  opts.max_length = int32_t(options.integer("max_length", 1, kInt32Max));
  // ratio x source length becomes an integer in the runtime; past the
  // model's positions (which cap every translation) a ratio caps
  // nothing, so a huge one is the same as that and cannot overflow.
  opts.max_length_ratio =
      std::min(options.number("max_length_ratio"), float(config.max_positions));
  opts.min_length = int32_t(options.integer("min_length", 0, kInt32Max));
  opts.length_penalty = options.number("length_penalty");
  // None: the model's (its generation_config.json), as the defaults say.
  if (!options.isNone("repetition_penalty"))
    opts.repetition_penalty = repetitionPenalty(options["repetition_penalty"]);
  if (!options.isNone("no_repeat_ngram_size"))
    opts.no_repeat_ngram_size =
        int32_t(options.integer("no_repeat_ngram_size", 0, kInt32Max));
  return opts;
}

/// Sampling's options: any given (not None) turns sampling on; their
/// values are the runtime's to judge.
void Translator::setSampling(tfm_search_options &opts,
                             const KeywordArgs &options) {
  bool topk = !options.isNone("sampling_topk");
  bool topp = !options.isNone("sampling_topp");
  bool temperature = !options.isNone("sampling_temperature");
  bool seed = !options.isNone("seed");
  opts.sampling = topk || topp || temperature || seed;
  if (topk)
    opts.sampling_topk =
        int32_t(options.integer("sampling_topk", kInt32Min, kInt32Max));
  if (topp)
    opts.sampling_topp = options.number("sampling_topp");
  if (temperature)
    opts.sampling_temperature = options.number("sampling_temperature");
  if (seed)
    opts.seed = seedArg(options["seed"], "seed");
}

std::vector<ScoringResult> Translator::scoreBatch(py::handle source,
                                                  py::handle target,
                                                  const KeywordArgs &options) {
  tfm_search_options opts;
  api.tfm_search_options_default(&opts);
  opts.length_penalty = options.number("length_penalty");
  size_t maxBatchSize = size_t(options.integer("max_batch_size", 1, kInt32Max));
  SentenceReader reader = sentenceReader();
  Sources sources = readSources(reader, source, options);
  const tfm_language_tokens &langTokens = sources.langTokens;
  std::vector<std::vector<int32_t>> targets =
      reader.scoredTargets(target, sources.ids.size(), langTokens);
  std::vector<int32_t> forced(langTokens.target_prefix,
                              langTokens.target_prefix +
                                  langTokens.target_prefix_length);
  // A blank source scores 0.
  std::vector<ScoringResult> results(sources.ids.size());
  runBatches(
      true, opts, sources.pending, maxBatchSize,
      [&](tfm_client::BatchBuilder &batch, size_t i) {
        batch.addScored(sources.ids[i], forced, targets[i], int64_t(i));
      },
      [&](const tfm_client::Results &out, int32_t k, size_t i) {
        tfm_client::Hypothesis scored = out.hypothesis(k, 0);
        results[i] = {scored.score, std::move(scored.tokenScores)};
      });
  return results;
}

Translator::Sources Translator::readSources(SentenceReader &reader,
                                            py::handle source,
                                            const KeywordArgs &options) const {
  Sources sources;
  sources.langTokens =
      reader.languageTokens(options["source_lang"], options["target_lang"]);
  sources.ids =
      reader.sourceSentences(source, sources.langTokens, sources.text);
  for (size_t i = 0; i < sources.ids.size(); ++i)
    if (!sources.ids[i].empty())
      sources.pending.push_back(i);
  return sources;
}

void Translator::runBatches(bool scoring, const tfm_search_options &opts,
                            const std::vector<size_t> &pending,
                            size_t maxBatchSize, const AddSentence &add,
                            const KeepResults &keep) const {
  for (size_t start = 0; start < pending.size(); start += maxBatchSize) {
    size_t count = std::min(pending.size() - start, maxBatchSize);
    tfm_client::BatchBuilder batch;
    for (size_t k = 0; k < count; ++k)
      add(batch, pending[start + k]);
    tfm_client::Results out = run(scoring, opts, batch, &pending[start]);
    for (size_t k = 0; k < count; ++k)
      keep(out, int32_t(k), pending[start + k]);
  }
}

/// A failed batch's error names its sentences by their index in `source`:
/// the one the runtime names, else the batch's first and last.
static std::string batchError(const tfm_client::Error &error,
                              const size_t *sentences, int32_t count) {
  if (error.sentence() >= 0 && error.sentence() < count)
    return "sentence " + std::to_string(sentences[error.sentence()]) +
           error.detail();
  std::string which = count == 1
                          ? "sentence " + std::to_string(sentences[0])
                          : "sentences " + std::to_string(sentences[0]) +
                                " to " + std::to_string(sentences[count - 1]);
  return which + ": " + error.what();
}

tfm_client::Results Translator::run(bool scoring,
                                    const tfm_search_options &opts,
                                    const tfm_client::BatchBuilder &batch,
                                    const size_t *sentences) const {
  try {
    py::gil_scoped_release unlocked;
    return scoring ? client().score(opts, batch)
                   : client().translate(opts, batch);
  } catch (const tfm_client::Error &e) {
    throw std::runtime_error(batchError(e, sentences, batch.size()));
  }
}

void Translator::keepTranslations(
    std::vector<tfm_client::Hypothesis> hypotheses, bool text,
    bool returnScores, bool returnTokenScores,
    TranslationResult &result) const {
  for (tfm_client::Hypothesis &h : hypotheses) {
    if (text)
      result.hypotheses.emplace_back(decode(h.tokens));
    else
      result.hypotheses.emplace_back(std::move(h.tokens));
    if (returnScores)
      result.scores.push_back(h.score);
    if (returnTokenScores)
      result.tokenScores.push_back(std::move(h.tokenScores));
  }
}

std::string Translator::decode(const std::vector<int32_t> &tokens) const {
  char *text = nullptr;
  size_t size = 0;
  tfm_client::check(
      api, api.tfm_tokenizer_decode(tokenizer.get(), tokens.data(),
                                    int32_t(tokens.size()), &text, &size));
  std::string out(text, size);
  api.tfm_free(text);
  return out;
}
