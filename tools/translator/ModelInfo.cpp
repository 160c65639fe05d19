//===- ModelInfo.cpp - The translator's --model-info ------------*- C++ -*-===//

#include "tools/translator/Session.h"

#include "tfm/abi/ModelInfo.h"
#include "tools/translator/Errors.h"

#include <fmt/format.h>

using namespace tfm_translator;

/// How many parallel regions a decoder step of one row begins: one greedy
/// step of a source of EOS alone, counted. Weights that cannot be read
/// leave the rest of --model-info to print.
static std::string stepRegions(const Options &o) {
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
int tfm_translator::printModelInfo(Options &o) {
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
