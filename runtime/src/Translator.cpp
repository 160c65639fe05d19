//===- Translator.cpp - Translate a batch: encode, then search --*- C++ -*-===//
//
// The search: encode the batch, then per step decode every row, apply
// the logits rules to each row (LogitsRules.h), scan it for its best
// extensions (Search.h), choose each sentence's next beams from them, move
// the key/value cache rows to follow the beams (KvCaches.h) and retire the
// finished sentences. A batch of `batch` sentences is searched in rows:
// row s·beam + j holds beam j of the sentence in slot s; a finished
// sentence's rows leave the batch, so later steps run fewer. The request
// was checked before (Request.h); the output projection's rows for the
// batch are OutputRows.h's.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Translator.h"

#include "runtime/src/Buffer.h"
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

  void run(const Batch &input, tfm_results &results);

private:
  /// The hypotheses of the rows, in row order.
  struct Beams {
    std::vector<std::vector<int32_t>> prefixes; // the tokens generated
    std::vector<float> scores; // sum of log p; -inf: no hypothesis
    std::vector<std::vector<float>> tokenScores; // log p of each token
    std::vector<SplitMix64> generators;          // sampling: each row's stream
  };

  // Before the search.
  void setSources(const Batch &input);
  void setLengthLimits(const int32_t *lengths);
  void startSearch();
  /// The output projection's rows for the batch: the shortlist's, or all.
  void chooseOutputRows(const Batch &input);
  // The compiled model.
  void encode();
  void decodeStep(int64_t step);
  // A step's search.
  void search(int64_t step, tfm_results &results);
  void scanRows(int64_t step, std::vector<char> &nonFinite);
  /// The row's best 2k extensions under the logits rules (or its one, in
  /// scoring and sampling); false when the logits are not finite.
  bool scanRow(int64_t row, int64_t step, bool eosAllowed);
  /// The token the row's hypothesis must take at `step`, or -1: the
  /// target's next (scoring), else the logits rules' forced token.
  int32_t forcedToken(int64_t row, int64_t step) const;
  /// Its column among the batch's output rows, or -1.
  int32_t forcedColumn(int64_t row, int64_t step) const;
  /// Scoring: the row's one extension, its target's next token (then EOS)
  /// with its log p; false when the logits are not finite.
  bool scoreRow(int64_t row, int64_t step);
  /// Sampling: the row's one extension, a token drawn from its filtered
  /// distribution (or the forced one); false when the logits are not
  /// finite.
  bool sampleRow(int64_t row, int64_t step, const std::vector<int32_t> &banned);
  void checkFinite(const std::vector<char> &nonFinite, int64_t step) const;
  void selectBeams(int64_t step);
  std::vector<Candidate> sentenceCandidates(size_t slot) const;
  void selectSentence(size_t slot, int64_t step, Beams &next);
  void selectSamples(size_t slot, int64_t step, Beams &next);
  void endUnterminated(size_t slot, const Beams &next);
  float normalize(float score, size_t length) const {
    return score / std::pow(float(length), opts.length_penalty);
  }
  bool allDone() const;
  // Between the steps.
  void dropFinished(int64_t length);
  void setNextTokens();
  void collectResults(tfm_results &results);

  tfm_model &model;
  const tfm_model_config &cfg;
  tfm_search_options opts;
  const bool sampling;
  // Rows per sentence: the beam width, or the samples drawn (n-best).
  const int64_t beam;
  const int64_t vocab, heads, headDim;
  const LogitsRules rules;

  int64_t batch = 0, srcLen = 0, rows = 0, capacity = 0;
  // liveLengths: the source lengths of the sentences still decoded.
  std::vector<int32_t> srcIds, srcLengths, liveLengths;
  std::vector<int64_t> maxLen; // per sentence of the batch
  // Per sentence of the batch: the tokens every hypothesis starts with.
  std::vector<std::vector<int32_t>> forcedPrefixes;
  std::vector<int64_t> inputIndexes; // per sentence: its index in the input
  // Scoring (tfm_score_batch): per sentence its target, and how many of
  // its first tokens are the forced prefix's (scored 0, as translating
  // scores them).
  bool scoring = false;
  std::vector<std::vector<int32_t>> targets;
  std::vector<size_t> forcedTargetTokens;
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
  std::vector<std::vector<Candidate>> rowBest; // each row's best 2k
  std::vector<int64_t> parents; // the row each row continues, this step
  // The sentences still searched, in batch order: slot s has rows
  // s·beam .. s·beam + beam - 1. A finished sentence's rows leave the batch
  // at the end of its step, so the steps after it cost it nothing.
  std::vector<int64_t> live;
  std::vector<std::vector<Hypothesis>> finished; // per sentence
  std::vector<bool> done;                        // per sentence
};

//===----------------------------------------------------------------------===//
// Before the search
//===----------------------------------------------------------------------===//

void Translator::setSources(const Batch &input) {
  const int32_t pad = int32_t(cfg.pad_token_id);
  const int32_t *lengths = input.lengths;
  batch = input.count;
  rows = batch * beam;
  // Pad the sources to the longest.
  srcLen = *std::max_element(lengths, lengths + batch);
  srcIds.assign(batch * srcLen, pad);
  srcLengths.assign(lengths, lengths + batch);
  for (int64_t b = 0; b < batch; ++b)
    std::copy(input.sources[b], input.sources[b] + lengths[b],
              &srcIds[b * srcLen]);
  liveLengths = srcLengths;
  inputIndexes.resize(batch);
  for (int32_t b = 0; b < input.count; ++b)
    inputIndexes[b] = input.index(b);
  forcedPrefixes.assign(batch, {});
  for (int32_t b = 0; b < input.count; ++b) {
    forcedPrefixes[b] = input.prefix(b);
    if (forcedPrefixes[b].empty() && cfg.forced_bos_token_id >= 0)
      forcedPrefixes[b] = {int32_t(cfg.forced_bos_token_id)};
  }
  scoring = input.targets != nullptr;
  targets.assign(scoring ? batch : 0, {});
  forcedTargetTokens.assign(batch, 0);
  for (int64_t b = 0; b < int64_t(targets.size()); ++b) {
    targets[b] = input.target(int32_t(b));
    const std::vector<int32_t> &forced = forcedPrefixes[b];
    auto [end, _] = std::mismatch(forced.begin(), forced.end(),
                                  targets[b].begin(), targets[b].end());
    forcedTargetTokens[b] = size_t(end - forced.begin());
  }
}

/// Length limits per sentence, each room for its forced prefix and one
/// token more; the positions table bounds them all.
void Translator::setLengthLimits(const int32_t *lengths) {
  maxLen.assign(batch, 0);
  for (int64_t b = 0; b < batch; ++b) {
    if (scoring) { // the target and EOS (RequestCheck bounds them)
      maxLen[b] = int64_t(targets[b].size()) + 1;
      continue;
    }
    int64_t limit = opts.max_length;
    if (opts.max_length_ratio > 0 && !opts.suppress_eos)
      limit = int64_t(std::min<double>(
          double(limit), double(opts.max_length_ratio) * lengths[b] + 5));
    limit = std::max<int64_t>(limit, forcedPrefixes[b].size() + 1);
    maxLen[b] = std::max<int64_t>(1, std::min(limit, cfg.max_positions));
  }
  capacity = *std::max_element(maxLen.begin(), maxLen.end());
}

void Translator::startSearch() {
  kv.allocateSelf(cfg.decoder_layers, rows, capacity);
  logits.resize(rows * columns());
  logitBlocks.resize(rows * blocksPerRow() * 2);
  beams.prefixes.assign(rows, {});
  beams.scores.assign(rows, 0.0f);
  beams.tokenScores.assign(rows, {});
  // Only the first beam of each sentence is live at the start; every
  // sample is, each with its own stream.
  beams.generators.clear();
  for (int64_t r = 0; r < rows; ++r) {
    if (sampling)
      beams.generators.push_back(SplitMix64::stream(
          opts.seed, uint64_t(inputIndexes[r / beam]), uint64_t(r % beam)));
    else if (r % beam)
      beams.scores[r] = kNegInf;
  }
  finished.assign(batch, {});
  done.assign(batch, false);
  live.resize(batch);
  std::iota(live.begin(), live.end(), 0);
  tokens.assign(rows, int32_t(cfg.decoder_start_token_id));
  rowBest.assign(rows, {});
}

/// With a shortlist, the rows of the batch's candidates (Shortlist.h); the
/// whole vocabulary when scoring (the targets may hold any token).
void Translator::chooseOutputRows(const Batch &input) {
  if (!model.shortlist || !opts.use_vmap || scoring)
    return outputRows.chooseAll(model);
  std::vector<const int32_t *> sources(input.sources,
                                       input.sources + input.count);
  outputRows.chooseTokens(
      model, model.shortlist->candidates(sources, srcLengths, forcedPrefixes));
}

//===----------------------------------------------------------------------===//
// The compiled model
//===----------------------------------------------------------------------===//

void Translator::encode() {
  int64_t d = cfg.d_model;
  encoderOut.resize(batch * srcLen * d);
  kv.clearCross();
  ArgPack args;
  args.memref(model.weights, {model.weightsSize});
  args.memref(srcIds.data(), {batch, srcLen});
  args.memref(srcLengths.data(), {batch});
  args.memref(encoderOut.data, {batch, srcLen, d});
  for (int64_t l = 0; l < 2 * cfg.decoder_layers; ++l)
    args.memref(kv.addCross(batch, srcLen), {batch, heads, srcLen, headDim});
  tfm_encode(args.data());
}

void Translator::decodeStep(int64_t step) {
  ArgPack args;
  args.memref(model.weights, {model.weightsSize});
  args.memref(tokens.data(), {rows, 1});
  args.scalar(step);
  int64_t sentences = rows / beam;
  args.memref(liveLengths.data(), {sentences});
  args.memref(kv.cacheRows(), {rows, capacity});
  for (int64_t l = 0; l < cfg.decoder_layers; ++l) {
    args.memref(kv.crossData(2 * l), {sentences, heads, srcLen, headDim});
    args.memref(kv.crossData(2 * l + 1), {sentences, heads, srcLen, headDim});
    args.memref(kv.selfData(2 * l), {rows, heads, capacity, headDim});
    args.memref(kv.selfData(2 * l + 1), {rows, heads, capacity, headDim});
  }
  args.memref(outputRows.panels(), {outputRows.panelsBytes()});
  if (const float *bias = outputRows.bias())
    args.memref(bias, {columns() * int64_t(sizeof(float))});
  args.memref(logits.data, {rows, 1, columns()});
  args.memref(logitBlocks.data, {rows, 1, blocksPerRow(), 2});
  tfm_decode_step(args.data());
}

//===----------------------------------------------------------------------===//
// A step's search
//===----------------------------------------------------------------------===//

void Translator::search(int64_t step, tfm_results &results) {
  if (step == 0) {
    results.firstLogits.assign(batch, {});
    for (int64_t b = 0; b < batch; ++b) {
      // The tokens outside the shortlist have no logit: -inf.
      std::vector<float> &first = results.firstLogits[b];
      first.assign(vocab, kNegInf);
      const float *row = logits.data + b * beam * columns();
      for (int64_t c = 0; c < outputRows.tokens(); ++c)
        first[outputRows.tokenOf(c)] = row[c];
    }
  }
  std::vector<char> nonFinite(rows, 0);
  {
    ScopedTimer timer(results.timing.scan);
    scanRows(step, nonFinite);
  }
  checkFinite(nonFinite, step);
  selectBeams(step);
}

/// Each live row's best 2k extensions, rows in parallel: a row's
/// log-softmax normalizer sums the exponentials of all its logits. One row
/// is scanned on the calling thread (forking would take longer than the
/// scan of its blocks).
void Translator::scanRows(int64_t step, std::vector<char> &nonFinite) {
  bool eosAllowed = rules.eosAllowed(step);
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    rowBest[r].clear();
    if (beams.scores[r] != kNegInf)
      nonFinite[r] = !scanRow(r, step, eosAllowed);
  }
}

bool Translator::scanRow(int64_t r, int64_t step, bool eosAllowed) {
  if (scoring)
    return scoreRow(r, step);
  // In the row's columns: the tokens of the batch's output rows.
  float *row = logits.data + r * columns();
  RowRules rowRules =
      rules.applyToRow(row, beams.prefixes[r], eosAllowed, outputRows);
  if (sampling)
    return sampleRow(r, step, rowRules.banned);
  // The blocks' terms hold for the logits as decode_step wrote them.
  bool blocksHold = opts.fused_search && !rowRules.logitsChanged;
  int64_t outputTokens = outputRows.tokens();
  std::optional<std::vector<Candidate>> best =
      blocksHold
          ? bestExtensions(
                BlockedLogits{row, logitBlocks.data + r * blocksPerRow() * 2,
                              kLogitBlock},
                outputTokens, beams.scores[r], 0, 2 * beam, rowRules.banned,
                forcedColumn(r, step), rowRules.penalized,
                opts.repetition_penalty)
          : bestExtensions(row, outputTokens, beams.scores[r], 0, 2 * beam,
                           rowRules.banned, forcedColumn(r, step),
                           rowRules.penalized, opts.repetition_penalty);
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
int32_t Translator::forcedToken(int64_t row, int64_t step) const {
  int64_t b = live[row / beam];
  if (scoring)
    return size_t(step) < targets[b].size() ? targets[b][step]
                                            : int32_t(cfg.eos_token_id);
  return rules.forcedToken(forcedPrefixes[b], maxLen[b], step);
}

/// The shortlist holds every forced token (the prefixes and the special
/// tokens are among a batch's candidates).
int32_t Translator::forcedColumn(int64_t row, int64_t step) const {
  int32_t token = forcedToken(row, step);
  if (token < 0)
    return token;
  int32_t column = outputRows.columnOf(token);
  if (column < 0)
    throw SearchError(fmt::format("the forced token {} is not among the "
                                  "batch's shortlist",
                                  token));
  return column;
}

bool Translator::scoreRow(int64_t r, int64_t step) {
  int32_t token = forcedToken(r, step); // scoring reads every column
  std::optional<float> logp =
      logProbability(logits.data + r * columns(), outputRows.tokens(), token);
  if (!logp)
    return false;
  if (size_t(step) < forcedTargetTokens[live[r / beam]])
    logp = 0.0f;
  rowBest[r] = {{beams.scores[r] + *logp, (r % beam) * vocab + token, *logp}};
  return true;
}

bool Translator::sampleRow(int64_t row, int64_t step,
                           const std::vector<int32_t> &banned) {
  // In the row's columns, as scanRow; `banned` too.
  const float *logits = this->logits.data + row * columns();
  int64_t outputTokens = outputRows.tokens();
  float score = beams.scores[row];
  if (int32_t forced = forcedColumn(row, step); forced >= 0) { // no draw
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
void Translator::checkFinite(const std::vector<char> &nonFinite,
                             int64_t step) const {
  for (int64_t r = 0; r < rows; ++r)
    if (nonFinite[r])
      throw SearchError(
          fmt::format(
              "sentence {}: the logits of step {} are not finite; "
              "the weights in {} are damaged (--verify-weights names the "
              "tensors) or the model overflows fp32",
              live[r / beam] + 1, step + 1, model.path),
          int32_t(live[r / beam]));
}

/// Each live sentence's next beams from its rows' best extensions; sets
/// `parents`.
void Translator::selectBeams(int64_t step) {
  parents.resize(rows);
  std::iota(parents.begin(), parents.end(), 0);
  Beams next = beams;
  for (size_t s = 0; s < live.size(); ++s)
    if (sampling)
      selectSamples(s, step, next);
    else
      selectSentence(s, step, next);
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
void Translator::selectSentence(size_t slot, int64_t step, Beams &next) {
  const int32_t eos = int32_t(cfg.eos_token_id);
  int64_t b = live[slot];
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
        finished[b].push_back({prefix, score,
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
  if (int64_t(finished[b].size()) >= beam) {
    done[b] = true;
  } else if (step + 1 >= maxLen[b]) {
    endUnterminated(slot, next);
    done[b] = true;
  }
}

/// Each live sample of the sentence in `slot` takes its drawn token in
/// its own row (an EOS ends it); the sentence is done when every sample
/// has ended or it reaches its limit.
void Translator::selectSamples(size_t slot, int64_t step, Beams &next) {
  int64_t b = live[slot];
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
      finished[b].push_back({prefix, score, normalize(score, prefix.size() + 1),
                             next.tokenScores[r]});
      next.scores[r] = kNegInf;
      continue;
    }
    next.prefixes[r].push_back(int32_t(token));
    next.scores[r] = score;
    anyLive = true;
  }
  if (!anyLive) {
    done[b] = true;
  } else if (step + 1 >= maxLen[b]) {
    endUnterminated(slot, next);
    done[b] = true;
  }
}

/// Out of length: the live beams of the sentence in `slot` end here,
/// unterminated.
void Translator::endUnterminated(size_t slot, const Beams &next) {
  int64_t b = live[slot];
  for (int64_t j = 0; j < beam; ++j) {
    int64_t r = slot * beam + j;
    if (next.scores[r] == kNegInf)
      continue;
    const std::vector<int32_t> &prefix = next.prefixes[r];
    finished[b].push_back({prefix, next.scores[r],
                           normalize(next.scores[r], prefix.size()),
                           next.tokenScores[r]});
  }
}

bool Translator::allDone() const {
  return std::all_of(done.begin(), done.end(), [](bool d) { return d; });
}

//===----------------------------------------------------------------------===//
// Between the steps
//===----------------------------------------------------------------------===//

/// The rows of the sentences done this step leave the batch: the caches,
/// the cross-attention keys/values, the source lengths and the beams of
/// the others move up.
void Translator::dropFinished(int64_t length) {
  if (std::none_of(live.begin(), live.end(),
                   [&](int64_t b) { return done[b]; }))
    return;
  // keptSlots: the sentences (of the batch) still decoded; keptLive: their
  // places among the live ones.
  std::vector<int64_t> keptRows, keptSlots, keptLive;
  for (size_t s = 0; s < live.size(); ++s)
    if (!done[live[s]]) {
      keptSlots.push_back(live[s]);
      keptLive.push_back(int64_t(s));
      for (int64_t j = 0; j < beam; ++j)
        keptRows.push_back(int64_t(s) * beam + j);
    }
  kv.compact(keptRows, keptLive, length);
  for (size_t i = 0; i < keptLive.size(); ++i)
    liveLengths[i] = liveLengths[keptLive[i]];
  liveLengths.resize(keptLive.size());
  rows = int64_t(keptRows.size());
  for (size_t i = 0; i < keptRows.size(); ++i)
    if (keptRows[i] != int64_t(i)) { // (a self-move would empty it)
      beams.prefixes[i] = std::move(beams.prefixes[keptRows[i]]);
      beams.scores[i] = beams.scores[keptRows[i]];
      beams.tokenScores[i] = std::move(beams.tokenScores[keptRows[i]]);
      if (sampling)
        beams.generators[i] = beams.generators[keptRows[i]];
    }
  beams.prefixes.resize(rows);
  beams.scores.resize(rows);
  beams.tokenScores.resize(rows);
  if (sampling)
    beams.generators.resize(rows);
  live = std::move(keptSlots);
}

/// Each row's next input: its last token, or the decoder start token.
void Translator::setNextTokens() {
  tokens.resize(rows);
  for (int64_t r = 0; r < rows; ++r)
    tokens[r] = beams.prefixes[r].empty() ? int32_t(cfg.decoder_start_token_id)
                                          : beams.prefixes[r].back();
}

/// Each sentence's n best hypotheses, best first (ties in the order found).
void Translator::collectResults(tfm_results &results) {
  results.nbest.assign(batch, {});
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Hypothesis> &hyps = finished[b];
    std::stable_sort(hyps.begin(), hyps.end(),
                     [](const Hypothesis &x, const Hypothesis &y) {
                       return x.normalized > y.normalized;
                     });
    if (int64_t(hyps.size()) > opts.n_best)
      hyps.resize(std::max(1, opts.n_best));
    results.nbest[b] = std::move(hyps);
  }
}

void Translator::run(const Batch &input, tfm_results &results) {
  tfm_translate_timing &timing = results.timing;
  timing = {};
  setSources(input);
  setLengthLimits(input.lengths);
  chooseOutputRows(input);
  timing.output_tokens = outputRows.tokens();
  {
    ScopedTimer timer(timing.encode);
    encode();
  }
  startSearch();
  if (!parallelRegionsBegun())
    timing.parallel_regions = -1;
  for (int64_t step = 0; step < capacity; ++step) {
    {
      ScopedTimer timer(timing.decode);
      std::optional<uint64_t> before = parallelRegionsBegun();
      decodeStep(step);
      if (before)
        timing.parallel_regions += int64_t(*parallelRegionsBegun() - *before);
    }
    ++timing.steps;
    timing.row_steps += rows;
    {
      ScopedTimer timer(timing.search);
      search(step, results);
    }
    if (allDone())
      break;
    ScopedTimer timer(timing.caches);
    kv.reorder(parents, step + 1);
    dropFinished(step + 1);
    setNextTokens();
  }
  collectResults(results);
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
