/*===- runtime.h - The tfm runtime's C API -------------------------*- C -*-===*
 *
 * The thin runtime linked into every translator that tfmc produces: it maps
 * the weights, owns the buffers and key/value caches, runs the compiled
 * `encode` and `decode_step`, and searches (greedy, beam). Every call that
 * can fail returns a tfm_status: NULL on success, else an error to read with
 * tfm_status_message and free with tfm_status_free. No call aborts on user
 * input.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_H
#define TFM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfm_status_t *tfm_status;
typedef struct tfm_model_t tfm_model;
typedef struct tfm_results_t tfm_results;
typedef struct tfm_stream_t tfm_stream;

/* The version of this API: the layout of its structs and what its
 * functions take. A program that loads a model's libtranslator.so (the
 * Python module, tfm-serve) refuses one whose version is not its own
 * rather than pass it structs of another layout. Raised with every change
 * to a struct or a signature of this header. */
#define TFM_C_API_VERSION 6
int32_t tfm_c_api_version(void);

const char *tfm_status_message(tfm_status status);
/* The sentence of the batch (counted from 0) that the error concerns, or -1
 * for an error of the whole request; the message names it too (from 1). */
int32_t tfm_status_sentence(tfm_status status);
void tfm_status_free(tfm_status status);

/* The architecture of the compiled model. */
typedef struct tfm_model_config {
  int64_t d_model, encoder_layers, decoder_layers, encoder_heads, decoder_heads,
      source_vocab_size, target_vocab_size, max_positions, eos_token_id,
      pad_token_id, decoder_start_token_id;
  /* The token that ends a sentence at its length limit (the checkpoint's
   * forced_eos_token_id), or -1. */
  int64_t forced_eos_token_id;
  /* The token forced as the first one generated when a sentence has no
   * target prefix (the checkpoint's forced_bos_token_id), or -1. */
  int64_t forced_bos_token_id;
  /* The width of a decoder attention head (d_model / decoder_heads but
   * for T5's d_kv). */
  int64_t decoder_head_dim;
  /* The checkpoint's repetition guards (generation_config.json's
   * repetition_penalty, 1: off, and no_repeat_ngram_size, 0: off): what
   * a search whose options leave them to the model uses. */
  double repetition_penalty;
  int64_t no_repeat_ngram_size;
} tfm_model_config;

/* Maps a weights file that tfmc wrote for this translator; the path may
 * name the translator itself when the weights are embedded in it. Checks
 * the header and the tensor table (their checksums, sizes, this
 * translator's layout) and every tensor's bytes against its checksum
 * (tfm_model_verify_weights); the error names the damaged tensors. */
tfm_status tfm_model_open(const char *weights_path, tfm_model **out_model);
/* The same without the check of the tensors' bytes, for callers that
 * verify the file otherwise (a checksum of their own, a read-only image). */
tfm_status tfm_model_open_unverified(const char *weights_path,
                                     tfm_model **out_model);
void tfm_model_close(tfm_model *model);
void tfm_model_get_config(const tfm_model *model, tfm_model_config *out_config);

/* Checks every tensor's bytes against the checksum tfmc recorded; the error
 * names the damaged tensors. On success, *out_tensors and *out_bytes (if
 * not null) say how much was checked. */
tfm_status tfm_model_verify_weights(const tfm_model *model,
                                    int64_t *out_tensors, int64_t *out_bytes);

typedef struct tfm_search_options {
  int32_t beam_size;      /* 1: greedy */
  int32_t n_best;         /* hypotheses returned per sentence, <= beam_size */
  int32_t max_length;     /* absolute cap on generated tokens (EOS included) */
  float max_length_ratio; /* if > 0: also cap at ratio * source length + 5
                             (source length with EOS; default 3) */
  int32_t min_length;     /* no EOS before this many tokens */
  float length_penalty;   /* beam scores are sum(log p) / length^penalty */
  int32_t suppress_eos;   /* never emit EOS: decode exactly max_length tokens */
  /* Hugging Face's repetition guards over a hypothesis's input (decoder
   * start token, then its tokens): a token already in it has its logit
   * (greedy) or its log-probability (beam search) multiplied by the
   * penalty where negative, divided where positive (1: off); no n-gram of
   * no_repeat_ngram_size tokens occurs twice (0: off). The defaults, 0
   * and -1, take the model's (tfm_model_config). */
  float repetition_penalty;
  int32_t no_repeat_ngram_size;
  /* Random sampling instead of search when nonzero (beam_size must be 1;
   * n_best independent samples per sentence). Each step divides the
   * logits by sampling_temperature, keeps the sampling_topk largest (0:
   * all), then the fewest most probable whose probabilities reach
   * sampling_topp (1: all), and draws one token from their renormalized
   * softmax with a SplitMix64 stream per sentence and sample, seeded from
   * `seed` and the sentence's index (tfm_batch.indexes): docs/Usage.md. */
  int32_t sampling;
  int32_t sampling_topk;
  float sampling_topp;
  float sampling_temperature;
  uint64_t seed;
  /* Nonzero (the default): with a vocabulary shortlist (the model's, or
   * one tfm_model_read_vmap read), each batch's output projection,
   * log-softmax and search run over the target tokens its sources map to
   * (docs/Shortlist.md); 0: over the whole vocabulary. Scoring always
   * uses the whole vocabulary. */
  int32_t use_vmap;
  /* Nonzero (the default): the search merges the log-sum-exp terms the
   * output projection makes per block of logits and reads only the blocks
   * whose maximum can enter the best tokens (docs/Design/Search.md); 0:
   * it reads every logit. The same tokens either way; the scores may
   * differ in their last bits. */
  int32_t fused_search;
} tfm_search_options;

void tfm_search_options_default(tfm_search_options *out_options);

/* Checks the search options alone, as tfm_translate_batch checks them
 * before any sentence (n-best and beam size, sampling's options, the
 * lengths, the penalties), after taking the repetition guards they leave
 * to the model from `model` (0 and -1): NULL if that model's translation
 * would take them, else the error it would give, of the whole request
 * (tfm_status_sentence -1). A program asks before it reads its input. */
tfm_status tfm_search_options_check(const tfm_model *model,
                                    const tfm_search_options *options);

/* Counts the parallel regions the decoder steps begin
 * (tfm_translate_timing.parallel_regions), through OpenMP's tool
 * interface: only if called before the first parallel region or
 * tfm_set_num_threads of the process, else it has no effect. */
void tfm_count_parallel_regions(void);

/* The time of each compiled kernel (tfmc compile --profile-kernels; no
 * entries otherwise): its name (tfm_kernel_<n>_<op kind>_<place>), the
 * phase it ran in (0: encode, 1: decoder steps, 2: other), its calls and
 * their seconds, the process's totals so far. Writes at most `capacity`
 * entries to `times` and returns how many there are; the names live as
 * long as the process. */
typedef struct tfm_kernel_time {
  const char *name;
  int32_t phase;
  int64_t calls;
  double seconds;
} tfm_kernel_time;
int64_t tfm_kernel_times(tfm_kernel_time *times, int64_t capacity);

/* Threads that the compiled code's parallel loops use (OpenMP). */
tfm_status tfm_set_num_threads(int32_t threads);

/* Translates `count` token-id sentences (each ending in EOS as the model
 * expects) as one padded batch. */
tfm_status tfm_translate(tfm_model *model, const tfm_search_options *options,
                         const int32_t *const *sources,
                         const int32_t *source_lengths, int32_t count,
                         tfm_results **out_results);

/* tfm_translate with a target prefix per sentence: the prefix_lengths[i]
 * tokens at prefixes[i] start every hypothesis of sentence i, each forced
 * with log-probability 0 (as Hugging Face forces a first token), then the
 * search goes on freely. A sentence without a prefix (prefixes or
 * prefixes[i] NULL, or length 0) starts with the model's forced BOS token
 * if it has one. Prefix tokens are part of the hypotheses and of their
 * lengths; a sentence's length limit is raised to hold its prefix and one
 * more token. A prefix may not hold EOS or padding. */
tfm_status tfm_translate_prefixed(tfm_model *model,
                                  const tfm_search_options *options,
                                  const int32_t *const *sources,
                                  const int32_t *source_lengths,
                                  const int32_t *const *prefixes,
                                  const int32_t *prefix_lengths, int32_t count,
                                  tfm_results **out_results);

/* A batch of sentences, for tfm_translate_batch and tfm_score_batch:
 * `count` source sentences of token ids (each ending in EOS), and
 * optionally per sentence a target prefix (as tfm_translate_prefixed's;
 * NULL or a NULL entry: none), a target to score (tfm_score_batch) and
 * its index in the input (NULL: 0 to count - 1), which seeds the
 * sentence's sampling so that it does not depend on the batch. */
typedef struct tfm_batch {
  int32_t count;
  const int32_t *const *sources;
  const int32_t *source_lengths;
  const int32_t *const *prefixes;
  const int32_t *prefix_lengths;
  const int32_t *const *targets;
  const int32_t *target_lengths;
  const int64_t *indexes;
} tfm_batch;

/* tfm_translate_prefixed with the batch in one struct (no targets). */
tfm_status tfm_translate_batch(tfm_model *model,
                               const tfm_search_options *options,
                               const tfm_batch *batch,
                               tfm_results **out_results);

/* Scores given translations, one padded batch, without search: through
 * the decoder's steps the target's tokens are forced one by one, then EOS,
 * and each gets its log-probability under the model (log-softmax of the
 * step's logits). Sentence i's result is one hypothesis: targets[i] (no
 * EOS in it), its score (the sum of the tokens' and EOS's log p divided by
 * (length + 1)^length_penalty, as translating scores it; no other option
 * applies) and its token scores. The leading target tokens that
 * translating would force (the sentence's prefix, or the model's forced
 * first token when it has none) score 0, as there. */
tfm_status tfm_score_batch(tfm_model *model, const tfm_search_options *options,
                           const tfm_batch *batch, tfm_results **out_results);

/* Hypothesis `rank` (0 = best) of sentence `index`: its tokens (without EOS)
 * and its normalized score. */
int32_t tfm_results_count(const tfm_results *results, int32_t index);
const int32_t *tfm_results_tokens(const tfm_results *results, int32_t index,
                                  int32_t rank, int32_t *out_length);
float tfm_results_score(const tfm_results *results, int32_t index,
                        int32_t rank);
/* The log-probability of each of its tokens, then of EOS if the hypothesis
 * ended with it (*out_length is the token count, or one more): the terms
 * of its score's sum (a forced token's is 0). */
const float *tfm_results_token_scores(const tfm_results *results, int32_t index,
                                      int32_t rank, int32_t *out_length);
/* The first decoding step's logits of sentence `index` (target_vocab_size
 * floats), kept for testing against a reference implementation. */
const float *tfm_results_first_logits(const tfm_results *results,
                                      int32_t index);
/* Where tfm_translate's time went, in seconds (a monotonic clock): the
 * encoder (with the cross-attention keys/values per row), the decoder
 * steps, the search over their logits, and the caches' moves (the beams'
 * tables of cache rows, finished sentences leaving the batch). `scan` is the
 * part of `search` that scans each row's logits (log-softmax and best tokens);
 * the rest chooses the beams and keeps the hypotheses. `steps` decoder steps
 * ran over `row_steps` rows in all: a finished sentence's rows leave the
 * batch, so later steps run fewer. */
typedef struct tfm_translate_timing {
  double encode, decode, search, scan, caches;
  int64_t steps, row_steps;
  /* The target tokens the batch's output projection ran over: the
   * vocabulary, or its shortlist's union for the batch. */
  int64_t output_tokens;
  /* The parallel regions (forks and joins of the threads) the decoder
   * steps began, if counted (tfm_count_parallel_regions), else -1. */
  int64_t parallel_regions;
} tfm_translate_timing;
void tfm_results_timing(const tfm_results *results,
                        tfm_translate_timing *out_timing);
/* How many sentences the results hold. */
int32_t tfm_results_sentences(const tfm_results *results);
/* A stream's results: the number of sentence `index` in its stream (the
 * count of sentences added to the stream before it). */
int64_t tfm_results_sentence_number(const tfm_results *results, int32_t index);
void tfm_results_free(tfm_results *results);

/* A stream is a batch that sentences join while it runs (continuous
 * batching): tfm_stream_add encodes sentences, which join the running
 * batch at its next step; tfm_stream_step runs one decoder step of every
 * sentence in it and hands back those that finished at it, each as soon as
 * it has its hypotheses. Every sentence of a stream is searched with the
 * stream's options and the whole target vocabulary (no shortlist); its
 * hypotheses are those tfm_translate_batch gives it. At most
 * `max_sentences` are in it at once. A stream is used by one thread at a
 * time. */
tfm_status tfm_stream_open(tfm_model *model, const tfm_search_options *options,
                           int32_t max_sentences, tfm_stream **out_stream);
/* Adds batch->count sentences (as tfm_translate_batch takes them; no
 * targets), numbered on from the sentences added before; fails, adding
 * none, when they do not fit or a sentence is refused. */
tfm_status tfm_stream_add(tfm_stream *stream, const tfm_batch *batch);
/* One step; *out_results (freed by the caller) holds the sentences that
 * finished at it, maybe none, and the stream's timing so far. A step that
 * fails leaves the stream to be closed. */
tfm_status tfm_stream_step(tfm_stream *stream, tfm_results **out_results);
/* The sentences in the stream: added and not yet handed back. */
int32_t tfm_stream_sentences(const tfm_stream *stream);
void tfm_stream_close(tfm_stream *stream);

/* Text in and out: SentencePiece in Marian's layout. source.spm cuts source
 * text into pieces, vocab.json maps pieces to ids (one vocabulary shared by
 * source and target; a piece not in it is <unk>), target.spm joins the
 * output's pieces into text. */
typedef struct tfm_tokenizer_t tfm_tokenizer;

/* Opens the tokenizer of the model at `model_path` (what tfm_model_open
 * took): embedded in that file when the weights are, else source.spm,
 * target.spm and vocab.json beside it. Checks the files against `config`
 * (vocabulary size, </s> = EOS). A model without tokenizer files is no
 * error: *out_tokenizer is then NULL, and the model reads and writes ids. */
tfm_status tfm_tokenizer_open(const char *model_path,
                              const tfm_model_config *config,
                              tfm_tokenizer **out_tokenizer);
void tfm_tokenizer_close(tfm_tokenizer *tokenizer);

/* Source text (UTF-8, one sentence) -> ids ending in EOS, as the model
 * expects. *out_ids is allocated; free it with tfm_free. */
tfm_status tfm_tokenizer_encode(const tfm_tokenizer *tokenizer,
                                const char *text, size_t length,
                                int32_t **out_ids, int32_t *out_length);

/* Target text (UTF-8, one sentence) -> the ids of the pieces the target's
 * SentencePiece model cuts it into, without EOS (to score a given
 * translation). *out_ids is allocated; free it with tfm_free. */
tfm_status tfm_tokenizer_encode_target(const tfm_tokenizer *tokenizer,
                                       const char *text, size_t length,
                                       int32_t **out_ids, int32_t *out_length);

/* The id of one vocabulary piece (such as "▁Haus" or a language code); an
 * error when the vocabulary has no such piece. */
tfm_status tfm_tokenizer_piece_id(const tfm_tokenizer *tokenizer,
                                  const char *piece, size_t length,
                                  int32_t *out_id);

/* Output ids (EOS and padding are skipped) -> text, NUL-terminated.
 * *out_text is allocated; free it with tfm_free. */
tfm_status tfm_tokenizer_decode(const tfm_tokenizer *tokenizer,
                                const int32_t *ids, int32_t length,
                                char **out_text, size_t *out_length);

/* Frees what the runtime allocated for the caller. */
void tfm_free(void *memory);

/* Replaces the model's vocabulary shortlist (tfmc compile --vmap stores
 * one with it) with the vmap text file at `path` (docs/Shortlist.md), its
 * pieces given ids by `tokenizer`. *out_warning (free with tfm_free) says
 * what it skipped, pieces the vocabulary lacks; NULL when nothing was.
 * Not while the model translates. */
tfm_status tfm_model_read_vmap(tfm_model *model, const char *path,
                               const tfm_tokenizer *tokenizer,
                               char **out_warning);
/* Whether the model has a vocabulary shortlist. */
int32_t tfm_model_has_vmap(const tfm_model *model);

/* Languages, as the family's Hugging Face tokenizer and `generate` use
 * them: a multilingual model (M2M-100, NLLB, mBART-50) frames a source text
 * with its language's token and forces the target language's token first;
 * MADLAD-400 (T5 with <2xx> pieces) puts the target language's token before
 * the source text and forces nothing; a model of one pair (Marian, BART)
 * compiled with `tfmc compile --source-lang L --target-lang L` knows its
 * two languages, which have no tokens. Read from tokenizer.tfm, tfmc's
 * description of the tokenizer (beside the weights or embedded with
 * them). */
typedef struct tfm_languages_t tfm_languages;

/* Opens the languages of the model at `model_path` (what tfm_model_open
 * took) and checks them against `config`. A model without languages is no
 * error: *out_languages is then NULL. */
tfm_status tfm_languages_open(const char *model_path,
                              const tfm_model_config *config,
                              tfm_languages **out_languages);
void tfm_languages_close(tfm_languages *languages);

/* The languages, in the model's order. Language `index` has the model's
 * code ("__de__", "deu_Latn", "de_DE"; a pair's as given to tfmc), other
 * names that choose it, space-separated ("de", "de deu"; may be empty),
 * and its token id (-1 for a one-pair model's). */
int32_t tfm_languages_count(const tfm_languages *languages);
const char *tfm_languages_code(const tfm_languages *languages, int32_t index);
const char *tfm_languages_names(const tfm_languages *languages, int32_t index);
int32_t tfm_languages_token(const tfm_languages *languages, int32_t index);
/* A one-pair model's source and target language (indexes), else -1. */
void tfm_languages_pair(const tfm_languages *languages, int32_t *out_source,
                        int32_t *out_target);

/* The index of the language `code` names: the model's code or another
 * name (an ISO 639-1 code). The error names `code` and a few of the
 * model's. */
tfm_status tfm_languages_find(const tfm_languages *languages, const char *code,
                              int32_t *out_index);

/* Translating from one language to another: a source text becomes
 * source_prefix, its pieces' ids, source_suffix (which ends in EOS); the
 * target_prefix tokens are forced first in every translation (the target
 * language's token, except for MADLAD-400, whose source_prefix holds it).
 * At most 4 tokens each. */
typedef struct tfm_language_tokens {
  int32_t source_prefix[4], source_prefix_length;
  int32_t source_suffix[4], source_suffix_length;
  int32_t target_prefix[4], target_prefix_length;
} tfm_language_tokens;

/* The tokens for `source` and `target` (codes as tfm_languages_find takes
 * them; NULL: not given). Without a source the tokenizer's default frames
 * text (as the Hugging Face tokenizer's: English for M2M-100, NLLB and
 * mBART-50); without a target nothing is forced. A one-pair model takes its
 * own two languages only. The error names the code. */
tfm_status tfm_languages_tokens(const tfm_languages *languages,
                                const char *source, const char *target,
                                tfm_language_tokens *out_tokens);

/* tfm_tokenizer_encode with the source framing of `tokens` (from
 * tfm_languages_tokens): its source prefix, the text's pieces, its source
 * suffix. NULL `tokens` frames as tfm_tokenizer_encode does. */
tfm_status tfm_tokenizer_encode_framed(const tfm_tokenizer *tokenizer,
                                       const tfm_language_tokens *tokens,
                                       const char *text, size_t length,
                                       int32_t **out_ids, int32_t *out_length);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_H */
