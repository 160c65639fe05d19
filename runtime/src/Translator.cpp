//===- Translator.cpp - Translate a batch: encode, then search --*- C++ -*-===//
//
// The search: encode the batch, then per step decode every row, apply
// the logits rules to each row (LogitsRules.h), scan it for its best
// extensions (Search.h), choose each sentence's next beams from them, move
// the key/value cache rows to follow the beams (KvCaches.h) and retire the
// finished sentences. The sentences are searched in rows: row s·beam + j
// holds beam j of the sentence in slot s; a finished sentence's rows leave
// the batch, so later steps run fewer. In a stream, sentences also join
// the running batch between its steps (continuous batching). The request
// was checked before (Request.h); the output projection's rows for the
// batch are OutputRows.h's.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Translator.h"

#include "runtime/src/Buffer.h"
#include "runtime/src/KernelProfile.h"
#include "runtime/src/KvCaches.h"
#include "runtime/src/LogitsRules.h"
#include "runtime/src/Model.h"
#include "runtime/src/OutputRows.h"
#include "runtime/src/ParallelRegions.h"
#include "runtime/src/Search.h"
#include "runtime/src/Status.h"
#include "tfm/abi/ModelInfo.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using namespace tfm_runtime;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
/// Source positions one call of the encoder takes at most (whole
/// sentences, at least one): its activations grow with them, and a batch's
/// peak memory with its encoder's activations.
constexpr int64_t kEncodeTokens = 512;
/// The self-attention caches first hold this many steps (or a sentence's
/// limit, if less), and grow as the sentences go on.
constexpr int64_t kFirstSteps = 64;

/// Arguments for a packed entry point: memref descriptors laid out as
/// {allocated, aligned, offset, sizes[N], strides[N]} (CRunnerUtils.h's
/// StridedMemRefType) and scalars, each addressed by one void*.
class ArgPack {
public:
  void memref(const void *data, const std::vector<int64_t> &sizes) {
    add(memrefDescriptor(data, sizes));
  }
  void scalar(int64_t value) { add({value}); }
  void **data() { return pointers.data(); }

private:
  void add(std::vector<int64_t> words) {
    storage.push_back(std::move(words));
    pointers.push_back(storage.back().data());
  }
  // A deque: growing it never moves the words the pointers point at.
  std::deque<std::vector<int64_t>> storage;
  std::vector<void *> pointers;
};

static_assert(sizeof(StridedMemRefType<float, 2>) == 7 * sizeof(int64_t),
              "memref descriptors are words");

/// Adds the seconds since it was made to `total` when it goes.
class ScopedTimer {
public:
  explicit ScopedTimer(double &total)
      : total(total), start(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() {
    total +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }

private:
  double &total;
  std::chrono::steady_clock::time_point start;
};

/// What ends a search with an error instead of results.
struct SearchError : std::runtime_error {
  SearchError(const std::string &message, int32_t sentence = -1)
      : std::runtime_error(message), sentence(sentence) {}
  int32_t sentence; ///< of the batch, from 0; -1: the whole batch
};

/// Best first (ties in the order found), the n best kept.
void sortHypotheses(std::vector<Hypothesis> &hyps, int32_t nBest) {
  std::stable_sort(hyps.begin(), hyps.end(),
                   [](const Hypothesis &x, const Hypothesis &y) {
                     return x.normalized > y.normalized;
                   });
  if (int64_t(hyps.size()) > nBest)
    hyps.resize(std::max(1, nBest));
}

/// A sentence of the batch: what its search needs, and what it found.
struct Sentence {
  int64_t order = 0; ///< its place in the results, or its stream's number
  int64_t seed = 0;  ///< its index in the input: its sampling streams
  int64_t start = 0; ///< the batch's step it joined at
  int32_t sourceLength = 0;
  int64_t maxLen = 0; ///< its length limit
  /// The tokens every hypothesis starts with.
  std::vector<int32_t> forcedPrefix;
  /// Scoring: its target, and how many of its first tokens are the forced
  /// prefix's (scored 0, as translating scores them).
  std::vector<int32_t> target;
  size_t forcedTargetTokens = 0;
  std::vector<Hypothesis> finished;
  std::vector<float> firstLogits;
  bool done = false;
};

/// A batch searched step by step: sentences join it at a step boundary
/// (all at step 0 for tfm_translate, whenever they come in a stream) and
/// leave it when done. Slot s of the live sentences has rows s·beam ..
/// s·beam + beam - 1; the caches' positions are the batch's steps, and a
/// sentence's position is the step less the step it joined at.
class Translator {
public:
  Translator(tfm_model &model, const tfm_search_options &options)
      : model(model), cfg(model.config), opts(options),
        sampling(options.sampling != 0),
        beam(std::max<int64_t>(1,
                               sampling ? options.n_best : options.beam_size)),
        vocab(cfg.target_vocab_size), heads(cfg.decoder_heads),
        headDim(cfg.decoder_head_dim),
        rules(cfg, model.badWords, opts, beam == 1 || sampling),
        kv(heads, headDim) {}

  /// tfm_translate and tfm_score_batch: the batch, to its end.
  void run(const Batch &input, tfm_results &results);

  /// A stream: room for `slots` sentences at once, the whole vocabulary.
  void openStream(int64_t slots);
  /// Sentences that join at the next step, numbered from `firstOrder`.
  void join(const Batch &input, int64_t firstOrder);
  /// One step of every live sentence; the sentences it finished.
  std::vector<Sentence> step(tfm_translate_timing &timing);
  int64_t liveSentences() const { return int64_t(sentences.size()); }
  int64_t slotCount() const { return slots; }

private:
  /// The hypotheses of the rows, in row order.
  struct Beams {
    std::vector<std::vector<int32_t>> prefixes; // the tokens generated
    std::vector<float> scores; // sum of log p; -inf: no hypothesis
    std::vector<std::vector<float>> tokenScores; // log p of each token
    std::vector<SplitMix64> generators;          // sampling: each row's stream
  };

  // Sentences joining.
  Sentence sentenceOf(const Batch &input, int32_t i, int64_t order) const;
  /// The length limit: room for the forced prefix and one token more; the
  /// positions table bounds it.
  int64_t lengthLimit(const Sentence &s) const;
  /// Room in the caches for `steps` more steps.
  void reserveSteps(int64_t steps);
  void startRows(int64_t first, int64_t count);
  /// The output projection's rows for the batch: the shortlist's, or all.
  void chooseOutputRows(const Batch &input);
  // The compiled model.
  void encode(const Batch &input, int64_t firstSlot);
  void encodeSentences(const Batch &input, int64_t first, int64_t count,
                       int64_t length, const std::vector<float *> &keysValues);
  void decodeStep();
  // A step's search.
  void search();
  void scanRows(std::vector<char> &nonFinite);
  /// The row's best 2k extensions under the logits rules (or its one, in
  /// scoring and sampling); false when the logits are not finite.
  bool scanRow(int64_t row);
  /// The sentence of a row, and its position: the step less its start.
  const Sentence &sentenceOfRow(int64_t row) const {
    return sentences[row / beam];
  }
  int64_t position(const Sentence &s) const { return batchStep - s.start; }
  /// The token the row's hypothesis must take at its position, or -1: the
  /// target's next (scoring), else the logits rules' forced token.
  int32_t forcedToken(int64_t row) const;
  /// Its column among the batch's output rows, or -1.
  int32_t forcedColumn(int64_t row) const;
  /// Scoring: the row's one extension, its target's next token (then EOS)
  /// with its log p; false when the logits are not finite.
  bool scoreRow(int64_t row);
  /// Sampling: the row's one extension, a token drawn from its filtered
  /// distribution (or the forced one); false when the logits are not
  /// finite.
  bool sampleRow(int64_t row, const std::vector<int32_t> &banned);
  void checkFinite(const std::vector<char> &nonFinite) const;
  void selectBeams();
  std::vector<Candidate> sentenceCandidates(size_t slot) const;
  void selectSentence(size_t slot, Beams &next);
  void selectSamples(size_t slot, Beams &next);
  void endUnterminated(size_t slot, const Beams &next);
  float normalize(float score, size_t length) const {
    return score / std::pow(float(length), opts.length_penalty);
  }
  // Between the steps.
  std::vector<Sentence> dropFinished(int64_t length);
  void setNextTokens();

  tfm_model &model;
  const tfm_model_config &cfg;
  tfm_search_options opts;
  const bool sampling;
  // Rows per sentence: the beam width, or the samples drawn (n-best).
  const int64_t beam;
  const int64_t vocab, heads, headDim;
  const LogitsRules rules;

  // The batch's next step; the sentences it can hold; its live rows.
  int64_t batchStep = 0, slots = 0, rows = 0;
  // Scoring (tfm_score_batch) forces each sentence's target.
  bool scoring = false;
  // A stream's sentences join at later steps. Its caches grow without the
  // live sentences' limits as a bound, so that the steps before the oldest
  // one's start, dropped when the caches are full, are many; and it keeps
  // no first logits (a batch keeps each sentence's for its results).
  bool streaming = false;
  std::vector<Sentence> sentences; // the live ones, by slot
  // sourceLengths: the live sentences' (decode_step's source_lengths).
  std::vector<int32_t> sourceLengths;
  // The output projection's rows this batch: logits rows are `columns()`
  // apart, and their first `outputRows.tokens()` are tokens.
  OutputRows outputRows;
  int64_t columns() const { return outputRows.columns(); }
  // logitBlocks: decode_step's log-sum-exp terms of each row's blocks of
  // kLogitBlock logits (ModelInfo.h).
  Buffer encoderOut, logits, logitBlocks;
  int64_t blocksPerRow() const {
    return (columns() + kLogitBlock - 1) / kLogitBlock;
  }
  KvCaches kv;

  Beams beams;
  std::vector<int32_t> tokens;                 // each row's next input
  std::vector<int32_t> rowStarts;              // each row's sentence's start
  std::vector<std::vector<Candidate>> rowBest; // each row's best 2k
  std::vector<int64_t> parents; // the row each row continues, this step
};

//===----------------------------------------------------------------------===//
// Sentences joining
//===----------------------------------------------------------------------===//

Sentence Translator::sentenceOf(const Batch &input, int32_t i,
                                int64_t order) const {
  Sentence s;
  s.order = order;
  s.seed = input.index(i);
  s.start = batchStep;
  s.sourceLength = input.lengths[i];
  s.forcedPrefix = input.prefix(i);
  if (s.forcedPrefix.empty() && cfg.forced_bos_token_id >= 0)
    s.forcedPrefix = {int32_t(cfg.forced_bos_token_id)};
  if (input.targets) {
    s.target = input.target(i);
    auto [end, _] = std::mismatch(s.forcedPrefix.begin(), s.forcedPrefix.end(),
                                  s.target.begin(), s.target.end());
    s.forcedTargetTokens = size_t(end - s.forcedPrefix.begin());
  }
  s.maxLen = lengthLimit(s);
  return s;
}

int64_t Translator::lengthLimit(const Sentence &s) const {
  if (scoring) // the target and EOS (RequestCheck bounds them)
    return int64_t(s.target.size()) + 1;
  int64_t limit = opts.max_length;
  if (opts.max_length_ratio > 0 && !opts.suppress_eos)
    limit = int64_t(std::min<double>(
        double(limit), double(opts.max_length_ratio) * s.sourceLength + 5));
  limit = std::max<int64_t>(limit, s.forcedPrefix.size() + 1);
  return std::max<int64_t>(1, std::min(limit, cfg.max_positions));
}

/// The steps before every live sentence's start are dropped first; the
/// caches grow only if that is not enough: to what is needed when no row
/// is live, else to twice that (so that growing is rare), but in a batch
/// not past its sentences' limits.
void Translator::reserveSteps(int64_t steps) {
  if (batchStep + steps <= kv.steps())
    return;
  int64_t shift = batchStep;
  for (const Sentence &s : sentences)
    shift = std::min(shift, s.start);
  if (shift > 0) {
    kv.rebase(rows, shift, batchStep);
    batchStep -= shift;
    for (Sentence &s : sentences)
      s.start -= shift;
    for (int32_t &start : rowStarts)
      start -= int32_t(shift);
  }
  if (batchStep + steps <= kv.steps())
    return;
  int64_t needed = batchStep + steps, limit = needed;
  for (const Sentence &s : sentences)
    limit = std::max(limit, s.start + s.maxLen);
  int64_t grown = rows == 0 ? needed : 2 * needed; // none to keep: exactly
  kv.growSelf(rows, streaming ? grown : std::min(grown, limit), batchStep);
}

void Translator::openStream(int64_t streamSlots) {
  slots = streamSlots;
  streaming = true;
  outputRows.chooseAll(model);
  kv.allocateSelf(cfg.decoder_layers, slots * beam, 0);
}

void Translator::join(const Batch &input, int64_t firstOrder) {
  int64_t firstSlot = int64_t(sentences.size());
  int64_t added = input.count, steps = 0;
  if (firstSlot == 0) // the batch had ended: its steps begin again
    batchStep = 0;
  try {
    for (int32_t i = 0; i < input.count; ++i) {
      sentences.push_back(sentenceOf(input, i, firstOrder + i));
      sourceLengths.push_back(input.lengths[i]);
      steps = std::max(steps, sentences.back().maxLen);
    }
    encode(input, firstSlot);
    // Sized after encoding, whose activations are then freed, and only
    // when no row is live: growing a live batch's caches (at its next
    // step) cannot be undone.
    if (firstSlot == 0)
      reserveSteps(std::min(steps, kFirstSteps));
    startRows(firstSlot * beam, added * beam);
  } catch (...) { // out of memory: the batch goes on without them
    sentences.resize(firstSlot);
    sourceLengths.resize(firstSlot);
    rows = firstSlot * beam;
    if (sampling)
      beams.generators.resize(rows);
    throw;
  }
}

/// The rows of new sentences: only the first beam of each is live at the
/// start; every sample is, each with its own stream.
void Translator::startRows(int64_t first, int64_t count) {
  rows = first + count;
  kv.startRows(first, count);
  // Grown, never shrunk: a stream's rows come and go.
  if (logits.size < size_t(rows * columns()))
    logits.resize(rows * columns());
  if (logitBlocks.size < size_t(rows * blocksPerRow() * 2))
    logitBlocks.resize(rows * blocksPerRow() * 2);
  beams.prefixes.resize(rows);
  beams.scores.resize(rows);
  beams.tokenScores.resize(rows);
  tokens.resize(rows);
  rowStarts.resize(rows);
  rowBest.resize(rows);
  for (int64_t r = first; r < rows; ++r) {
    const Sentence &s = sentenceOfRow(r);
    beams.prefixes[r].clear();
    beams.tokenScores[r].clear();
    beams.scores[r] = !sampling && r % beam ? kNegInf : 0.0f;
    if (sampling)
      beams.generators.push_back(
          SplitMix64::stream(opts.seed, uint64_t(s.seed), uint64_t(r % beam)));
    tokens[r] = int32_t(cfg.decoder_start_token_id);
    rowStarts[r] = int32_t(s.start);
  }
}

/// With a shortlist, the rows of the batch's candidates (Shortlist.h); the
/// whole vocabulary when scoring (the targets may hold any token).
void Translator::chooseOutputRows(const Batch &input) {
  if (!model.shortlist || !opts.use_vmap || scoring)
    return outputRows.chooseAll(model);
  std::vector<const int32_t *> sources(input.sources,
                                       input.sources + input.count);
  std::vector<int32_t> lengths(input.lengths, input.lengths + input.count);
  std::vector<std::vector<int32_t>> prefixes;
  for (int32_t i = 0; i < input.count; ++i)
    prefixes.push_back(sentenceOf(input, i, i).forcedPrefix);
  outputRows.chooseTokens(
      model, model.shortlist->candidates(sources, lengths, prefixes));
}

//===----------------------------------------------------------------------===//
// The compiled model
//===----------------------------------------------------------------------===//

/// The input's cross-attention keys and values into slots from
/// `firstSlot` on: written in place when the batch is empty, else beside
/// it and then placed. Every sentence is padded to the longest.
void Translator::encode(const Batch &input, int64_t firstSlot) {
  int64_t count = input.count;
  int64_t srcLen = *std::max_element(input.lengths, input.lengths + count);
  int64_t buffers = 2 * cfg.decoder_layers;
  std::vector<float *> keysValues;
  Buffers placed;
  if (firstSlot == 0)
    kv.allocateCross(buffers, slots, srcLen);
  for (int64_t i = 0; i < buffers; ++i) {
    if (firstSlot != 0)
      placed.push_back(
          std::make_unique<Buffer>(count * heads * srcLen * headDim));
    keysValues.push_back(firstSlot == 0 ? kv.crossData(i) : placed[i]->data);
  }
  int64_t chunk = std::max<int64_t>(1, kEncodeTokens / srcLen);
  for (int64_t first = 0; first < count; first += chunk)
    encodeSentences(input, first, std::min(chunk, count - first), srcLen,
                    keysValues);
  if (firstSlot != 0)
    kv.placeCross(placed, firstSlot, count, srcLen);
}

/// Sentences [first, first + count) of the input, padded to `length`, into
/// their slots of `keysValues` ([.., heads, length, headDim] each).
void Translator::encodeSentences(const Batch &input, int64_t first,
                                 int64_t count, int64_t length,
                                 const std::vector<float *> &keysValues) {
  const int32_t pad = int32_t(cfg.pad_token_id);
  std::vector<int32_t> srcIds(count * length, pad);
  for (int64_t b = 0; b < count; ++b)
    std::copy(input.sources[first + b],
              input.sources[first + b] + input.lengths[first + b],
              &srcIds[b * length]);
  encoderOut.resize(count * length * cfg.d_model);
  ArgPack args;
  args.memref(model.weights, {model.weightsSize});
  args.memref(srcIds.data(), {count, length});
  args.memref(input.lengths + first, {count});
  args.memref(encoderOut.data, {count, length, cfg.d_model});
  int64_t slotSize = heads * length * headDim;
  for (float *buffer : keysValues)
    args.memref(buffer + first * slotSize, {count, heads, length, headDim});
  KernelPhaseScope phase(KernelPhase::Encode);
  tfm_encode(args.data());
}

void Translator::decodeStep() {
  ArgPack args;
  int64_t liveCount = int64_t(sentences.size());
  int64_t srcLen = kv.crossLength(), capacity = kv.steps();
  args.memref(model.weights, {model.weightsSize});
  args.memref(tokens.data(), {rows, 1});
  args.scalar(batchStep);
  args.memref(sourceLengths.data(), {liveCount});
  args.memref(kv.cacheRows(), {rows, capacity});
  args.memref(rowStarts.data(), {rows});
  for (int64_t l = 0; l < cfg.decoder_layers; ++l) {
    args.memref(kv.crossData(2 * l), {liveCount, heads, srcLen, headDim});
    args.memref(kv.crossData(2 * l + 1), {liveCount, heads, srcLen, headDim});
    args.memref(kv.selfData(2 * l), {rows, heads, capacity, headDim});
    args.memref(kv.selfData(2 * l + 1), {rows, heads, capacity, headDim});
  }
  args.memref(outputRows.panels(), {outputRows.panelsBytes()});
  if (const float *bias = outputRows.bias())
    args.memref(bias, {columns() * int64_t(sizeof(float))});
  args.memref(logits.data, {rows, 1, columns()});
  args.memref(logitBlocks.data, {rows, 1, blocksPerRow(), 2});
  KernelPhaseScope phase(KernelPhase::Decode);
  tfm_decode_step(args.data());
}

//===----------------------------------------------------------------------===//
// A step's search
//===----------------------------------------------------------------------===//

void Translator::search() {
  for (size_t slot = 0; !streaming && slot < sentences.size(); ++slot) {
    Sentence &s = sentences[slot];
    if (position(s) != 0)
      continue;
    // The tokens outside the shortlist have no logit: -inf.
    s.firstLogits.assign(vocab, kNegInf);
    const float *row = logits.data + slot * beam * columns();
    for (int64_t c = 0; c < outputRows.tokens(); ++c)
      s.firstLogits[outputRows.tokenOf(c)] = row[c];
  }
  std::vector<char> nonFinite(rows, 0);
  scanRows(nonFinite);
  checkFinite(nonFinite);
  selectBeams();
}

/// Each live row's best 2k extensions, rows in parallel: a row's
/// log-softmax normalizer sums the exponentials of all its logits. One row
/// is scanned on the calling thread (forking would take longer than the
/// scan of its blocks).
void Translator::scanRows(std::vector<char> &nonFinite) {
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    rowBest[r].clear();
    if (beams.scores[r] != kNegInf)
      nonFinite[r] = !scanRow(r);
  }
}

bool Translator::scanRow(int64_t r) {
  if (scoring)
    return scoreRow(r);
  // In the row's columns: the tokens of the batch's output rows.
  float *row = logits.data + r * columns();
  bool eosAllowed = rules.eosAllowed(position(sentenceOfRow(r)));
  RowRules rowRules =
      rules.applyToRow(row, beams.prefixes[r], eosAllowed, outputRows);
  if (sampling)
    return sampleRow(r, rowRules.banned);
  // The blocks' terms hold for the logits as decode_step wrote them.
  bool blocksHold = opts.fused_search && !rowRules.logitsChanged;
  int64_t outputTokens = outputRows.tokens();
  std::optional<std::vector<Candidate>> best =
      blocksHold
          ? bestExtensions(
                BlockedLogits{row, logitBlocks.data + r * blocksPerRow() * 2,
                              kLogitBlock},
                outputTokens, beams.scores[r], 0, 2 * beam, rowRules.banned,
                forcedColumn(r), rowRules.penalized, opts.repetition_penalty)
          : bestExtensions(row, outputTokens, beams.scores[r], 0, 2 * beam,
                           rowRules.banned, forcedColumn(r), rowRules.penalized,
                           opts.repetition_penalty);
  if (!best)
    return false;
  for (Candidate &c : *best) // (beam, token) as the beams' choice reads it
    c.flat = (r % beam) * vocab + outputRows.tokenOf(c.flat);
  rowBest[r] = std::move(*best);
  return true;
}

/// A hypothesis shorter than its sentence's prefix takes the prefix's next
/// token, and one at its length limit may have to end (LogitsRules.h);
/// scoring forces the target, then EOS.
int32_t Translator::forcedToken(int64_t row) const {
  const Sentence &s = sentenceOfRow(row);
  int64_t at = position(s);
  if (scoring)
    return size_t(at) < s.target.size() ? s.target[at]
                                        : int32_t(cfg.eos_token_id);
  return rules.forcedToken(s.forcedPrefix, s.maxLen, at);
}

/// The shortlist holds every forced token (the prefixes and the special
/// tokens are among a batch's candidates).
int32_t Translator::forcedColumn(int64_t row) const {
  int32_t token = forcedToken(row);
  if (token < 0)
    return token;
  int32_t column = outputRows.columnOf(token);
  if (column < 0)
    throw SearchError(fmt::format("the forced token {} is not among the "
                                  "batch's shortlist",
                                  token));
  return column;
}

bool Translator::scoreRow(int64_t r) {
  int32_t token = forcedToken(r); // scoring reads every column
  std::optional<float> logp =
      logProbability(logits.data + r * columns(), outputRows.tokens(), token);
  if (!logp)
    return false;
  const Sentence &s = sentenceOfRow(r);
  if (size_t(position(s)) < s.forcedTargetTokens)
    logp = 0.0f;
  rowBest[r] = {{beams.scores[r] + *logp, (r % beam) * vocab + token, *logp}};
  return true;
}

bool Translator::sampleRow(int64_t row, const std::vector<int32_t> &banned) {
  // In the row's columns, as scanRow; `banned` too.
  const float *logits = this->logits.data + row * columns();
  int64_t outputTokens = outputRows.tokens();
  float score = beams.scores[row];
  if (int32_t forced = forcedColumn(row); forced >= 0) { // no draw
    std::optional<std::vector<Candidate>> best =
        bestExtensions(logits, outputTokens, score, 0, 1, banned, forced);
    if (best)
      rowBest[row] = {
          {(*best)[0].score, outputRows.tokenOf(forced), (*best)[0].logp}};
    return best.has_value();
  }
  SamplingFilter filter{opts.sampling_topk, opts.sampling_topp,
                        opts.sampling_temperature};
  std::vector<TokenProbability> distribution =
      samplingDistribution(logits, outputTokens, banned, filter);
  if (distribution.empty()) // every token banned: the sample ends, empty
    return true;
  int32_t column = drawToken(distribution, beams.generators[row].uniform());
  // The score is the model's: log p under the unfiltered, untempered
  // distribution, as greedy search scores the same token.
  std::optional<float> logp = logProbability(logits, outputTokens, column);
  if (logp)
    rowBest[row] = {{score + *logp, outputRows.tokenOf(column), *logp}};
  return logp.has_value();
}

/// tfmc refuses non-finite weights, so a NaN here means damaged weights
/// (or an fp32 overflow): never a translation to print.
void Translator::checkFinite(const std::vector<char> &nonFinite) const {
  for (int64_t r = 0; r < rows; ++r)
    if (nonFinite[r]) {
      const Sentence &s = sentenceOfRow(r);
      throw SearchError(
          fmt::format(
              "sentence {}: the logits of step {} are not finite; "
              "the weights in {} are damaged (--verify-weights names the "
              "tensors) or the model overflows fp32",
              s.order + 1, position(s) + 1, model.path),
          int32_t(s.order));
    }
}

/// Each live sentence's next beams from its rows' best extensions; sets
/// `parents`.
void Translator::selectBeams() {
  parents.resize(rows);
  std::iota(parents.begin(), parents.end(), 0);
  Beams next = beams;
  for (size_t s = 0; s < sentences.size(); ++s)
    if (sampling)
      selectSamples(s, next);
    else
      selectSentence(s, next);
  std::swap(beams, next);
}

/// The best 2k of (beam score + log p(token)) over the live beams of the
/// sentence in `slot` and all tokens: the best of its rows' own best 2k.
std::vector<Candidate> Translator::sentenceCandidates(size_t slot) const {
  size_t want = 2 * beam;
  std::vector<Candidate> best;
  for (int64_t j = 0; j < beam; ++j) {
    const std::vector<Candidate> &row = rowBest[slot * beam + j];
    best.insert(best.end(), row.begin(), row.end());
  }
  std::sort(best.begin(), best.end(), before);
  if (best.size() > want)
    best.resize(want);
  return best;
}

/// The best candidates of the sentence in `slot` become its next beams in
/// `next` (an EOS among the first `beam` ends a hypothesis instead); the
/// sentence is done when it has `beam` hypotheses or reaches its limit.
void Translator::selectSentence(size_t slot, Beams &next) {
  const int32_t eos = int32_t(cfg.eos_token_id);
  Sentence &sentence = sentences[slot];
  std::vector<Candidate> candidates = sentenceCandidates(slot);
  int64_t kept = 0;
  for (size_t c = 0; c < candidates.size() && kept < beam; ++c) {
    auto [score, flat, logp] = candidates[c];
    int64_t j = flat / vocab;
    int32_t token = int32_t(flat % vocab);
    int64_t parent = slot * beam + j;
    if (token == eos) {
      // An EOS ranked beyond the beam width does not count.
      if (int64_t(c) < beam) {
        const std::vector<int32_t> &prefix = beams.prefixes[parent];
        std::vector<float> tokenScores = beams.tokenScores[parent];
        tokenScores.push_back(logp);
        sentence.finished.push_back({prefix, score,
                                     normalize(score, prefix.size() + 1),
                                     std::move(tokenScores)});
      }
      continue;
    }
    int64_t r = slot * beam + kept++;
    parents[r] = parent;
    next.prefixes[r] = beams.prefixes[parent];
    next.prefixes[r].push_back(token);
    next.scores[r] = score;
    next.tokenScores[r] = beams.tokenScores[parent];
    next.tokenScores[r].push_back(logp);
  }
  for (; kept < beam; ++kept)
    next.scores[slot * beam + kept] = kNegInf;
  if (int64_t(sentence.finished.size()) >= beam) {
    sentence.done = true;
  } else if (position(sentence) + 1 >= sentence.maxLen) {
    endUnterminated(slot, next);
    sentence.done = true;
  }
}

/// Each live sample of the sentence in `slot` takes its drawn token in
/// its own row (an EOS ends it); the sentence is done when every sample
/// has ended or it reaches its limit.
void Translator::selectSamples(size_t slot, Beams &next) {
  Sentence &sentence = sentences[slot];
  bool anyLive = false;
  for (int64_t r = slot * beam; r < int64_t(slot + 1) * beam; ++r) {
    if (rowBest[r].empty()) { // ended before, or nothing to draw
      next.scores[r] = kNegInf;
      continue;
    }
    auto [score, token, logp] = rowBest[r].front();
    next.tokenScores[r].push_back(logp);
    if (token == cfg.eos_token_id) {
      const std::vector<int32_t> &prefix = beams.prefixes[r];
      sentence.finished.push_back({prefix, score,
                                   normalize(score, prefix.size() + 1),
                                   next.tokenScores[r]});
      next.scores[r] = kNegInf;
      continue;
    }
    next.prefixes[r].push_back(int32_t(token));
    next.scores[r] = score;
    anyLive = true;
  }
  if (!anyLive) {
    sentence.done = true;
  } else if (position(sentence) + 1 >= sentence.maxLen) {
    endUnterminated(slot, next);
    sentence.done = true;
  }
}

/// Out of length: the live beams of the sentence in `slot` end here,
/// unterminated.
void Translator::endUnterminated(size_t slot, const Beams &next) {
  Sentence &sentence = sentences[slot];
  for (int64_t j = 0; j < beam; ++j) {
    int64_t r = slot * beam + j;
    if (next.scores[r] == kNegInf)
      continue;
    const std::vector<int32_t> &prefix = next.prefixes[r];
    sentence.finished.push_back({prefix, next.scores[r],
                                 normalize(next.scores[r], prefix.size()),
                                 next.tokenScores[r]});
  }
}

//===----------------------------------------------------------------------===//
// Between the steps
//===----------------------------------------------------------------------===//

/// The slots of the sentences still decoded, in their new order: each
/// keeps its own, but the last ones fill the slots of those done, so that
/// a sentence leaving moves one other's caches, not all after it.
std::vector<int64_t> slotsKept(const std::vector<Sentence> &sentences) {
  int64_t kept = std::count_if(sentences.begin(), sentences.end(),
                               [](const Sentence &s) { return !s.done; });
  std::vector<int64_t> slots;
  int64_t last = int64_t(sentences.size());
  for (int64_t s = 0; s < kept; ++s) {
    if (!sentences[s].done) {
      slots.push_back(s);
      continue;
    }
    do // as many live past `kept` as done before it
      --last;
    while (sentences[last].done);
    slots.push_back(last);
  }
  return slots;
}

/// The sentences done this step leave the batch (returned, their n best
/// hypotheses sorted): the caches, the cross-attention keys/values, the
/// source lengths and the beams of the last others take their places.
std::vector<Sentence> Translator::dropFinished(int64_t length) {
  std::vector<Sentence> leaving;
  if (std::none_of(sentences.begin(), sentences.end(),
                   [](const Sentence &s) { return s.done; }))
    return leaving;
  // keptSlots: the sentences still decoded; keptRows: their rows.
  std::vector<int64_t> keptSlots = slotsKept(sentences), keptRows;
  for (int64_t slot : keptSlots)
    for (int64_t j = 0; j < beam; ++j)
      keptRows.push_back(slot * beam + j);
  for (Sentence &s : sentences)
    if (s.done)
      leaving.push_back(std::move(s));
  std::vector<Sentence> staying;
  for (int64_t slot : keptSlots)
    staying.push_back(std::move(sentences[slot]));
  kv.compact(keptRows, keptSlots, length);
  sentences = std::move(staying);
  for (size_t i = 0; i < keptSlots.size(); ++i)
    sourceLengths[i] = sourceLengths[keptSlots[i]];
  sourceLengths.resize(keptSlots.size());
  rows = int64_t(keptRows.size());
  for (size_t i = 0; i < keptRows.size(); ++i)
    if (keptRows[i] != int64_t(i)) { // (a self-move would empty it)
      int64_t from = keptRows[i];
      beams.prefixes[i] = std::move(beams.prefixes[from]);
      beams.scores[i] = beams.scores[from];
      beams.tokenScores[i] = std::move(beams.tokenScores[from]);
      rowStarts[i] = rowStarts[from];
      if (sampling)
        beams.generators[i] = beams.generators[from];
    }
  beams.prefixes.resize(rows);
  beams.scores.resize(rows);
  beams.tokenScores.resize(rows);
  rowStarts.resize(rows);
  if (sampling)
    beams.generators.resize(rows);
  for (Sentence &s : leaving)
    sortHypotheses(s.finished, opts.n_best);
  return leaving;
}

/// Each row's next input: its last token, or the decoder start token.
void Translator::setNextTokens() {
  tokens.resize(rows);
  for (int64_t r = 0; r < rows; ++r)
    tokens[r] = beams.prefixes[r].empty() ? int32_t(cfg.decoder_start_token_id)
                                          : beams.prefixes[r].back();
}

std::vector<Sentence> Translator::step(tfm_translate_timing &timing) {
  {
    ScopedTimer timer(timing.caches);
    reserveSteps(1);
  }
  {
    ScopedTimer timer(timing.decode);
    std::optional<uint64_t> before = parallelRegionsBegun();
    decodeStep();
    if (before)
      timing.parallel_regions += int64_t(*parallelRegionsBegun() - *before);
  }
  ++timing.steps;
  timing.row_steps += rows;
  {
    ScopedTimer timer(timing.search);
    search();
  }
  ScopedTimer timer(timing.caches);
  kv.reorder(parents, batchStep + 1);
  std::vector<Sentence> leaving = dropFinished(batchStep + 1);
  ++batchStep;
  setNextTokens();
  return leaving;
}

void Translator::run(const Batch &input, tfm_results &results) {
  tfm_translate_timing &timing = results.timing;
  timing = {};
  scoring = input.targets != nullptr;
  slots = input.count;
  chooseOutputRows(input);
  timing.output_tokens = outputRows.tokens();
  kv.allocateSelf(cfg.decoder_layers, slots * beam, 0);
  {
    ScopedTimer timer(timing.encode);
    join(input, 0);
  }
  if (!parallelRegionsBegun())
    timing.parallel_regions = -1;
  results.nbest.assign(input.count, {});
  results.firstLogits.assign(input.count, {});
  while (!sentences.empty())
    for (Sentence &s : step(timing)) {
      results.nbest[s.order] = std::move(s.finished);
      results.firstLogits[s.order] = std::move(s.firstLogits);
    }
}

/// Runs the translator (or scorer) over the batch, errors as statuses.
tfm_status run(tfm_model &model, const tfm_search_options &options,
               const Batch &batch, tfm_results **out_results) {
  try {
    auto results = std::make_unique<tfm_results_t>();
    Translator(model, options).run(batch, *results);
    *out_results = results.release();
    return nullptr;
  } catch (const SearchError &e) {
    tfm_status status = makeError(e.what());
    status->sentence = e.sentence;
    return status;
  } catch (const std::bad_alloc &) {
    return makeError("out of memory {} a batch of {} sentences",
                     batch.targets ? "scoring" : "translating", batch.count);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

/// A stream is a Translator that sentences join while it runs.
struct tfm_stream_t {
  tfm_stream_t(tfm_model &model, const tfm_search_options &options)
      : model(model), options(options), translator(model, options) {}
  tfm_model &model;
  tfm_search_options options;
  Translator translator;
  int64_t added = 0; // sentences added so far: the next one's number
  tfm_translate_timing timing{};
};

tfm_status tfm_runtime::openStream(tfm_model &model,
                                   const tfm_search_options &options,
                                   int32_t maxSentences,
                                   tfm_stream **out_stream) {
  *out_stream = nullptr;
  tfm_search_options resolved = withModelDefaults(model.config, options);
  if (maxSentences < 1)
    return makeError("a stream holds at least 1 sentence, not {}",
                     maxSentences);
  if (tfm_status s = searchOptionsError(resolved))
    return s;
  try {
    auto stream = std::make_unique<tfm_stream_t>(model, resolved);
    stream->translator.openStream(maxSentences);
    *out_stream = stream.release();
    return nullptr;
  } catch (const std::bad_alloc &) {
    return makeError("out of memory opening a stream of {} sentences",
                     maxSentences);
  }
}

tfm_status tfm_runtime::addToStream(tfm_stream &stream, const Batch &batch) {
  Translator &translator = stream.translator;
  if (batch.count > translator.slotCount() - translator.liveSentences())
    return makeError("the stream has room for {} more sentences, not {}",
                     translator.slotCount() - translator.liveSentences(),
                     batch.count);
  if (tfm_status s = RequestCheck(stream.model.config, stream.options, batch)
                         .translation())
    return s;
  try {
    ScopedTimer timer(stream.timing.encode);
    translator.join(batch, stream.added);
    stream.added += batch.count;
    return nullptr;
  } catch (const std::bad_alloc &) {
    return makeError("out of memory adding {} sentences to a stream",
                     batch.count);
  }
}

tfm_status tfm_runtime::stepStream(tfm_stream &stream,
                                   tfm_results **out_results) {
  *out_results = nullptr;
  try {
    auto results = std::make_unique<tfm_results_t>();
    if (stream.translator.liveSentences() > 0)
      for (Sentence &s : stream.translator.step(stream.timing)) {
        results->nbest.push_back(std::move(s.finished));
        results->sentenceNumbers.push_back(s.order);
      }
    results->timing = stream.timing;
    *out_results = results.release();
    return nullptr;
  } catch (const SearchError &e) {
    tfm_status status = makeError(e.what());
    status->sentence = e.sentence;
    return status;
  } catch (const std::bad_alloc &) {
    return makeError("out of memory in a stream's step");
  }
}

int32_t tfm_runtime::streamSentences(const tfm_stream &stream) {
  return int32_t(stream.translator.liveSentences());
}

void tfm_runtime::closeStream(tfm_stream *stream) { delete stream; }

tfm_status tfm_runtime::translate(tfm_model &model,
                                  const tfm_search_options &options,
                                  const Batch &batch,
                                  tfm_results **out_results) {
  *out_results = nullptr;
  tfm_search_options resolved = withModelDefaults(model.config, options);
  if (tfm_status s = RequestCheck(model.config, resolved, batch).translation())
    return s;
  return run(model, resolved, batch, out_results);
}

/// Scoring runs the translator with one row a sentence, each step forcing
/// the target's next token; only the length penalty of the options
/// applies.
tfm_status tfm_runtime::score(tfm_model &model,
                              const tfm_search_options &options,
                              const Batch &batch, tfm_results **out_results) {
  *out_results = nullptr;
  tfm_search_options forcing = scoringOptions(options);
  if (tfm_status s = RequestCheck(model.config, forcing, batch).scoring())
    return s;
  return run(model, forcing, batch, out_results);
}
