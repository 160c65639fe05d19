//===- CApi.cpp - The entry points of tfm/runtime.h -------------*- C++ -*-===//
//
// Every function of the C API, each a thin wrapper over the object it
// concerns: the model (Model.cpp), the translation of a batch and its
// results (Translator.cpp), the tokenizer (Tokenizer.cpp), the languages
// (Languages.cpp). No exception crosses them: the objects return statuses.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime.h"

#include "runtime/src/KernelProfile.h"
#include "runtime/src/Languages.h"
#include "runtime/src/Model.h"
#include "runtime/src/ParallelRegions.h"
#include "runtime/src/Request.h"
#include "runtime/src/Status.h"
#include "runtime/src/Tokenizer.h"
#include "runtime/src/Translator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace tfm_runtime;

extern "C" void omp_set_num_threads(int); // libomp

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

extern "C" const char *tfm_status_message(tfm_status status) {
  return status ? status->message.c_str() : "ok";
}

extern "C" int32_t tfm_status_sentence(tfm_status status) {
  return status ? status->sentence : -1;
}

extern "C" void tfm_status_free(tfm_status status) { delete status; }

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

extern "C" tfm_status tfm_model_open(const char *path, tfm_model **out_model) {
  return openModel(path, /*verify=*/true, out_model);
}

extern "C" tfm_status tfm_model_open_unverified(const char *path,
                                                tfm_model **out_model) {
  return openModel(path, /*verify=*/false, out_model);
}

extern "C" void tfm_model_close(tfm_model *model) { delete model; }

extern "C" void tfm_model_get_config(const tfm_model *model,
                                     tfm_model_config *out_config) {
  *out_config = model->config;
}

extern "C" tfm_status tfm_model_verify_weights(const tfm_model *model,
                                               int64_t *out_tensors,
                                               int64_t *out_bytes) {
  return verifyWeights(*model, out_tensors, out_bytes);
}

//===----------------------------------------------------------------------===//
// Translation
//===----------------------------------------------------------------------===//

extern "C" int32_t tfm_c_api_version(void) { return TFM_C_API_VERSION; }

extern "C" void tfm_search_options_default(tfm_search_options *out_options) {
  *out_options = defaultSearchOptions();
}

extern "C" tfm_status
tfm_search_options_check(const tfm_model *model,
                         const tfm_search_options *options) {
  return searchOptionsError(withModelDefaults(model->config, *options));
}

extern "C" void tfm_count_parallel_regions(void) {
  tfm_runtime::countParallelRegions();
}

extern "C" int64_t tfm_kernel_times(tfm_kernel_time *times, int64_t capacity) {
  std::vector<tfm_runtime::KernelTime> all = tfm_runtime::kernelTimes();
  for (int64_t i = 0; i < std::min(capacity, int64_t(all.size())); ++i)
    times[i] = {all[i].name, int32_t(all[i].phase), all[i].calls,
                all[i].seconds};
  return int64_t(all.size());
}

extern "C" tfm_status tfm_set_num_threads(int32_t threads) {
  // More threads than this only oversubscribe the cores (and far more
  // abort OpenMP's runtime).
  constexpr int32_t kMaxThreads = 1024;
  if (threads < 1 || threads > kMaxThreads)
    return makeError("the thread count must be in [1, {}], found {}",
                     kMaxThreads, threads);
  omp_set_num_threads(threads);
  return nullptr;
}

extern "C" tfm_status tfm_translate(tfm_model *model,
                                    const tfm_search_options *options,
                                    const int32_t *const *sources,
                                    const int32_t *source_lengths,
                                    int32_t count, tfm_results **out_results) {
  return translate(*model, *options,
                   {sources, source_lengths, nullptr, nullptr, count},
                   out_results);
}

extern "C" tfm_status tfm_translate_prefixed(
    tfm_model *model, const tfm_search_options *options,
    const int32_t *const *sources, const int32_t *source_lengths,
    const int32_t *const *prefixes, const int32_t *prefix_lengths,
    int32_t count, tfm_results **out_results) {
  return translate(*model, *options,
                   {sources, source_lengths, prefixes, prefix_lengths, count},
                   out_results);
}

/// The runtime's view of a tfm_batch.
static Batch batchOf(const tfm_batch &b) {
  return {b.sources, b.source_lengths, b.prefixes,       b.prefix_lengths,
          b.count,   b.targets,        b.target_lengths, b.indexes};
}

extern "C" tfm_status tfm_translate_batch(tfm_model *model,
                                          const tfm_search_options *options,
                                          const tfm_batch *batch,
                                          tfm_results **out_results) {
  return translate(*model, *options, batchOf(*batch), out_results);
}

extern "C" tfm_status tfm_score_batch(tfm_model *model,
                                      const tfm_search_options *options,
                                      const tfm_batch *batch,
                                      tfm_results **out_results) {
  return score(*model, *options, batchOf(*batch), out_results);
}

extern "C" int32_t tfm_results_sentences(const tfm_results *results) {
  return int32_t(results->nbest.size());
}

extern "C" int64_t tfm_results_sentence_number(const tfm_results *results,
                                               int32_t index) {
  return results->sentenceNumbers.empty() ? index
                                          : results->sentenceNumbers[index];
}

extern "C" tfm_status tfm_stream_open(tfm_model *model,
                                      const tfm_search_options *options,
                                      int32_t max_sentences,
                                      tfm_stream **out_stream) {
  return openStream(*model, *options, max_sentences, out_stream);
}

extern "C" tfm_status tfm_stream_add(tfm_stream *stream,
                                     const tfm_batch *batch) {
  return addToStream(*stream, batchOf(*batch));
}

extern "C" tfm_status tfm_stream_step(tfm_stream *stream,
                                      tfm_results **out_results) {
  return stepStream(*stream, out_results);
}

extern "C" int32_t tfm_stream_sentences(const tfm_stream *stream) {
  return streamSentences(*stream);
}

extern "C" int32_t tfm_results_count(const tfm_results *results,
                                     int32_t index) {
  return int32_t(results->nbest[index].size());
}

extern "C" const int32_t *tfm_results_tokens(const tfm_results *results,
                                             int32_t index, int32_t rank,
                                             int32_t *out_length) {
  const Hypothesis &h = results->nbest[index][rank];
  *out_length = int32_t(h.tokens.size());
  return h.tokens.data();
}

extern "C" float tfm_results_score(const tfm_results *results, int32_t index,
                                   int32_t rank) {
  return results->nbest[index][rank].normalized;
}

extern "C" const float *tfm_results_token_scores(const tfm_results *results,
                                                 int32_t index, int32_t rank,
                                                 int32_t *out_length) {
  const Hypothesis &h = results->nbest[index][rank];
  *out_length = int32_t(h.tokenScores.size());
  return h.tokenScores.data();
}

extern "C" const float *tfm_results_first_logits(const tfm_results *results,
                                                 int32_t index) {
  return results->firstLogits[index].data();
}

extern "C" void tfm_results_timing(const tfm_results *results,
                                   tfm_translate_timing *out_timing) {
  *out_timing = results->timing;
}

extern "C" void tfm_results_free(tfm_results *results) { delete results; }

extern "C" void tfm_stream_close(tfm_stream *stream) { closeStream(stream); }

//===----------------------------------------------------------------------===//
// Tokenizer
//===----------------------------------------------------------------------===//

extern "C" tfm_status tfm_tokenizer_open(const char *model_path,
                                         const tfm_model_config *config,
                                         tfm_tokenizer **out_tokenizer) {
  return openTokenizer(model_path, *config, out_tokenizer);
}

extern "C" void tfm_tokenizer_close(tfm_tokenizer *tokenizer) {
  closeTokenizer(tokenizer);
}

extern "C" tfm_status tfm_tokenizer_piece_id(const tfm_tokenizer *tokenizer,
                                             const char *piece, size_t length,
                                             int32_t *out_id) {
  return pieceId(*tokenizer, piece, length, out_id);
}

extern "C" tfm_status tfm_tokenizer_encode(const tfm_tokenizer *tokenizer,
                                           const char *text, size_t length,
                                           int32_t **out_ids,
                                           int32_t *out_length) {
  return encodeText(*tokenizer, nullptr, text, length, out_ids, out_length);
}

extern "C" tfm_status tfm_tokenizer_encode_framed(
    const tfm_tokenizer *tokenizer, const tfm_language_tokens *tokens,
    const char *text, size_t length, int32_t **out_ids, int32_t *out_length) {
  return encodeText(*tokenizer, tokens, text, length, out_ids, out_length);
}

extern "C" tfm_status
tfm_tokenizer_encode_target(const tfm_tokenizer *tokenizer, const char *text,
                            size_t length, int32_t **out_ids,
                            int32_t *out_length) {
  return encodeTarget(*tokenizer, text, length, out_ids, out_length);
}

extern "C" tfm_status tfm_tokenizer_decode(const tfm_tokenizer *tokenizer,
                                           const int32_t *ids, int32_t length,
                                           char **out_text,
                                           size_t *out_length) {
  return decodeIds(*tokenizer, ids, length, out_text, out_length);
}

extern "C" void tfm_free(void *memory) { std::free(memory); }

extern "C" tfm_status tfm_model_read_vmap(tfm_model *model, const char *path,
                                          const tfm_tokenizer *tokenizer,
                                          char **out_warning) {
  *out_warning = nullptr;
  std::optional<Shortlist> read;
  std::string warning;
  if (tfm_status s = Shortlist::read(path, tokenizer,
                                     int32_t(model->config.target_vocab_size),
                                     read, warning))
    return s;
  read->alwaysInclude(specialTokens(model->config));
  model->shortlist = std::move(read);
  if (!warning.empty())
    *out_warning = strdup(warning.c_str());
  return nullptr;
}

extern "C" int32_t tfm_model_has_vmap(const tfm_model *model) {
  return model->shortlist.has_value();
}

//===----------------------------------------------------------------------===//
// Languages
//===----------------------------------------------------------------------===//

extern "C" tfm_status tfm_languages_open(const char *model_path,
                                         const tfm_model_config *config,
                                         tfm_languages **out_languages) {
  return openLanguages(model_path, *config, out_languages);
}

extern "C" void tfm_languages_close(tfm_languages *languages) {
  delete languages;
}

extern "C" int32_t tfm_languages_count(const tfm_languages *languages) {
  return int32_t(languages->info.languages.size());
}

extern "C" const char *tfm_languages_code(const tfm_languages *languages,
                                          int32_t index) {
  return languages->info.languages[index].code.c_str();
}

extern "C" const char *tfm_languages_names(const tfm_languages *languages,
                                           int32_t index) {
  return languages->names[index].c_str();
}

extern "C" int32_t tfm_languages_token(const tfm_languages *languages,
                                       int32_t index) {
  return languages->info.languages[index].id;
}

extern "C" void tfm_languages_pair(const tfm_languages *languages,
                                   int32_t *out_source, int32_t *out_target) {
  *out_source = languages->info.pairSource;
  *out_target = languages->info.pairTarget;
}

extern "C" tfm_status tfm_languages_find(const tfm_languages *languages,
                                         const char *code, int32_t *out_index) {
  return findLanguage(languages->info, code, out_index);
}

extern "C" tfm_status tfm_languages_tokens(const tfm_languages *languages,
                                           const char *source,
                                           const char *target,
                                           tfm_language_tokens *out_tokens) {
  return languageTokens(*languages, source, target, *out_tokens);
}
