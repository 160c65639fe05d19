//===- Runtime.cpp - Weights, buffers, caches and search -----------*- C++ -*-===//
//
// Everything the compiled entry points need around them: the mapped weights,
// memref descriptors for the arguments, the encoder outputs and per-layer
// key/value caches, and the search that drives decode_step.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime.h"

#include "runtime/src/Heap.h"
#include "tfm/abi/ModelInfo.h"
#include "runtime/src/Search.h"
#include "runtime/src/Status.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using tfm_runtime::bestExtensions;
using tfm_runtime::before;
using tfm_runtime::cacheMoves;
using tfm_runtime::CacheMoves;
using tfm_runtime::Candidate;
using tfm_runtime::makeError;
using tfm_runtime::RowCopy;

namespace {

/// A 64-byte-aligned float buffer.
struct Buffer {
  float *data = nullptr;
  size_t size = 0;
  explicit Buffer(size_t n = 0) { resize(n); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { std::free(data); }
  void resize(size_t n) {
    std::free(data);
    data = nullptr;
    size = n;
    if (n)
      data = static_cast<float *>(
          std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
    if (n && !data)
      throw std::bad_alloc();
  }
};

/// Arguments for a packed entry point: memref descriptors laid out as
/// {allocated, aligned, offset, sizes[N], strides[N]} (CRunnerUtils.h's
/// StridedMemRefType) and scalars, each addressed by one void*.
class ArgPack {
public:
  void memref(const void *data, const std::vector<int64_t> &sizes) {
    add(tfm_runtime::memrefDescriptor(data, sizes));
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

} // namespace

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

struct tfm_model_t {
  void *mapping = MAP_FAILED;
  size_t mappingSize = 0;
  int8_t *weights = nullptr; // 64-byte aligned tensor data
  int64_t weightsSize = 0;
  tfm_model_config config{};
  std::string path; // for messages
  struct Region {
    std::string name;
    uint64_t offset, size, checksum;
  };
  std::vector<Region> regions; // the weights file's table
  /// The checkpoint's bad_words_ids: token sequences never generated.
  std::vector<std::vector<int32_t>> badWords;

  ~tfm_model_t() {
    if (mapping != MAP_FAILED)
      munmap(mapping, mappingSize);
  }
};

extern "C" const char *tfm_status_message(tfm_status status) {
  return status ? status->message.c_str() : "ok";
}

extern "C" void tfm_status_free(tfm_status status) { delete status; }

extern "C" tfm_status tfm_model_open_unverified(const char *path,
                                                tfm_model **out_model) {
  *out_model = nullptr;
  // The compiled code allocates its temporaries afresh at every step: the
  // next step reuses what this one frees.
  tfm_runtime::prepareHeap();
  std::string name = path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeError(name + ": cannot open weights: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return makeError(name + ": cannot stat: " + std::strerror(errno));
  }
  auto model = std::make_unique<tfm_model_t>();
  model->mappingSize = st.st_size;
  if (st.st_size > 0)
    model->mapping =
        mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (model->mapping == MAP_FAILED)
    return makeError(name + ": cannot map: " + std::strerror(errno));
  const char *bytes = static_cast<const char *>(model->mapping);
  uint64_t size = st.st_size;

  // Weights embedded in an executable: a trailer at the end says where.
  uint64_t start = 0;
  if (size >= sizeof(tfm_runtime::EmbedTrailer)) {
    tfm_runtime::EmbedTrailer trailer;
    std::memcpy(&trailer, bytes + size - sizeof trailer, sizeof trailer);
    if (std::memcmp(trailer.magic, tfm_runtime::kEmbedMagic, 8) == 0) {
      if (trailer.offset > size || trailer.size > size - trailer.offset)
        return makeError(name + ": corrupt embedded-weights trailer");
      start = trailer.offset;
      size = trailer.offset + trailer.size;
    }
  }
  if (size - start < tfm_runtime::kWeightsHeaderSize)
    return makeError(name + ": too short for a tfm weights file (" +
                     std::to_string(size - start) + " bytes)");
  tfm_runtime::WeightsHeader header;
  std::memcpy(&header, bytes + start, sizeof header);
  if (std::memcmp(header.magic, tfm_runtime::kWeightsMagic, 8) != 0)
    return makeError(name + ": not a tfm weights file (bad magic)");
  const tfm_model_info &info = tfm_model_info_data;
  if (header.abiVersion != tfm_runtime::kAbiVersion)
    return makeError(name + ": weights file format version " +
                     std::to_string(header.abiVersion) +
                     ", this translator reads version " +
                     std::to_string(tfm_runtime::kAbiVersion) +
                     " (compile the model again with this tfmc)");
  if (header.headerChecksum !=
      tfm_runtime::checksum(&header, offsetof(tfm_runtime::WeightsHeader,
                                              headerChecksum)))
    return makeError(name + ": the weights file's header is damaged "
                            "(checksum mismatch)");
  if (int64_t(header.precision) != info.precision)
    return makeError(name + ": these weights are " +
                     tfm_runtime::precisionName(header.precision) +
                     ", the compiled model reads " +
                     tfm_runtime::precisionName(info.precision) +
                     " (tfmc compile --precision)");
  if (int64_t(header.fingerprint) != info.fingerprint)
    return makeError(name + ": these weights were written for another "
                            "compiled model (layout fingerprint mismatch)");
  if (int64_t(header.dataSize) != info.weightsSize ||
      header.dataSize > size - start - tfm_runtime::kWeightsHeaderSize)
    return makeError(name + ": truncated: expected " +
                     std::to_string(info.weightsSize) + " bytes of weights");
  // The region table after the data: in the file, intact, and every
  // region inside the data.
  uint64_t tableStart =
      start + tfm_runtime::kWeightsHeaderSize + header.dataSize;
  if (header.tableSize > size - tableStart)
    return makeError(name + ": truncated: the tensor table is missing");
  const char *table = bytes + tableStart;
  if (tfm_runtime::checksum(table, header.tableSize) != header.tableChecksum)
    return makeError(name + ": the tensor table is damaged (checksum "
                            "mismatch)");
  for (uint64_t at = 0; at < header.tableSize;) {
    uint64_t words[4];
    if (header.tableSize - at < sizeof words)
      return makeError(name + ": the tensor table is malformed");
    std::memcpy(words, table + at, sizeof words);
    at += sizeof words;
    uint64_t padded = (words[3] + 7) / 8 * 8;
    if (words[3] > header.tableSize - at || padded > header.tableSize - at ||
        words[0] > header.dataSize || words[1] > header.dataSize - words[0])
      return makeError(name + ": the tensor table is malformed");
    model->regions.push_back(
        {std::string(table + at, words[3]), words[0], words[1], words[2]});
    at += padded;
  }
  model->weights =
      const_cast<int8_t *>(reinterpret_cast<const int8_t *>(bytes)) + start +
      tfm_runtime::kWeightsHeaderSize;
  model->weightsSize = header.dataSize;
  model->path = name;
  model->config = {info.dModel,          info.encoderLayers,
                   info.decoderLayers,   info.encoderHeads,
                   info.decoderHeads,    info.sourceVocabSize,
                   info.targetVocabSize, info.maxPositions,
                   info.eosTokenId,      info.padTokenId,
                   info.decoderStartTokenId, info.forcedEosTokenId};
  for (int64_t i = 0, at = 1; i < tfm_model_bad_words[0]; ++i) {
    int64_t length = tfm_model_bad_words[at++];
    model->badWords.emplace_back(tfm_model_bad_words + at,
                                 tfm_model_bad_words + at + length);
    at += length;
    // The search's walk over the banned tokens needs them in the vocabulary
    // (tfmc checks config.json; hand-written IR is not).
    for (int32_t token : model->badWords.back())
      if (token < 0 || token >= info.targetVocabSize)
        return makeError("this translator's bad word " + std::to_string(i) +
                         " holds token " + std::to_string(token) +
                         ", outside the target vocabulary");
  }
  if (info.forcedEosTokenId >= info.targetVocabSize)
    return makeError("this translator's forced EOS token " +
                     std::to_string(info.forcedEosTokenId) +
                     " is outside the target vocabulary");
  *out_model = model.release();
  return nullptr;
}

extern "C" void tfm_model_close(tfm_model *model) { delete model; }

extern "C" tfm_status tfm_model_open(const char *path, tfm_model **out_model) {
  tfm_model *model = nullptr;
  if (tfm_status s = tfm_model_open_unverified(path, &model))
    return s;
  if (tfm_status s = tfm_model_verify_weights(model, nullptr, nullptr)) {
    s->message += " (the weights are checked at every load; compile the "
                  "model again, or copy its weights file again)";
    tfm_model_close(model);
    return s;
  }
  *out_model = model;
  return nullptr;
}

/// Which regions' bytes differ from their checksums: every block of every
/// region is hashed, the blocks spread evenly over the threads.
static std::vector<char> findDamagedRegions(const tfm_model_t &model) {
  const auto &regions = model.regions;
  struct Block {
    size_t region;
    uint64_t index;
  };
  std::vector<Block> blocks;
  std::vector<size_t> firstBlock(regions.size() + 1, 0);
  for (size_t r = 0; r < regions.size(); ++r) {
    firstBlock[r] = blocks.size();
    for (uint64_t b = 0; b < tfm_runtime::checksumBlocks(regions[r].size); ++b)
      blocks.push_back({r, b});
  }
  firstBlock[regions.size()] = blocks.size();
  std::vector<uint64_t> sums(blocks.size());
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto &region = regions[blocks[i].region];
    sums[i] = tfm_runtime::blockChecksum(model.weights + region.offset,
                                         region.size, blocks[i].index);
  }
  std::vector<char> damaged(regions.size());
  for (size_t r = 0; r < regions.size(); ++r)
    damaged[r] = tfm_runtime::checksum(sums.data() + firstBlock[r],
                                       (firstBlock[r + 1] - firstBlock[r]) *
                                           sizeof(uint64_t)) !=
                 regions[r].checksum;
  return damaged;
}

extern "C" tfm_status tfm_model_verify_weights(const tfm_model *model,
                                               int64_t *out_tensors,
                                               int64_t *out_bytes) {
  const auto &regions = model->regions;
  std::vector<char> damaged = findDamagedRegions(*model);
  std::string names;
  size_t count = 0;
  int64_t bytes = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    bytes += regions[i].size;
    if (!damaged[i])
      continue;
    if (count++ < 8)
      names += (names.empty() ? "'" : ", '") + regions[i].name + "'";
  }
  if (count)
    return makeError(model->path + ": " + std::to_string(count) + " of " +
                     std::to_string(regions.size()) +
                     " tensors are damaged (checksum mismatch): " + names +
                     (count > 8 ? ", ..." : ""));
  if (out_tensors)
    *out_tensors = int64_t(regions.size());
  if (out_bytes)
    *out_bytes = bytes;
  return nullptr;
}

extern "C" void tfm_model_get_config(const tfm_model *model,
                                     tfm_model_config *out_config) {
  *out_config = model->config;
}

//===----------------------------------------------------------------------===//
// Search
//===----------------------------------------------------------------------===//

extern "C" void omp_set_num_threads(int); // libomp

extern "C" tfm_status tfm_set_num_threads(int32_t threads) {
  // More threads than this only oversubscribe the cores (and far more
  // abort OpenMP's runtime).
  constexpr int32_t kMaxThreads = 1024;
  if (threads < 1 || threads > kMaxThreads)
    return makeError("the thread count must be in [1, " +
                     std::to_string(kMaxThreads) + "], found " +
                     std::to_string(threads));
  omp_set_num_threads(threads);
  return nullptr;
}

extern "C" void tfm_search_options_default(tfm_search_options *o) {
  o->beam_size = 1;
  o->n_best = 1;
  o->max_length = 256;
  // Marian's default factor: a sentence that runs away (repeats itself)
  // stops after about three times its source's tokens.
  o->max_length_ratio = 3.0f;
  o->min_length = 0;
  o->length_penalty = 1.0f;
  o->suppress_eos = 0;
}

namespace {
struct Hypothesis {
  std::vector<int32_t> tokens; // without EOS
  float score = 0;             // sum of log-probabilities
  float normalized = 0;        // score / length^penalty
};
} // namespace

struct tfm_results_t {
  std::vector<std::vector<Hypothesis>> nbest;
  std::vector<std::vector<float>> firstLogits;
  tfm_translate_timing timing{};
};

namespace {

/// Adds the seconds since it was made to `total` when it goes.
class ScopedTimer {
public:
  explicit ScopedTimer(double &total)
      : total(total), start(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() {
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                 .count();
  }

private:
  double &total;
  std::chrono::steady_clock::time_point start;
};

/// What ends a search with an error instead of results.
struct SearchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Translator {
public:
  Translator(tfm_model &model, const tfm_search_options &options)
      : model(model), cfg(model.config), opts(options) {}

  void run(const int32_t *const *sources, const int32_t *lengths,
           int32_t count, tfm_results &results);

private:
  /// The tokens a row whose generated tokens are `prefix` must not take
  /// next, sorted: padding, EOS when `eosAllowed` is false, and the last
  /// token of every bad word whose other tokens end the row's input
  /// (decoder start token, then `prefix`), as Hugging Face's
  /// NoBadWordsLogitsProcessor bans them.
  std::vector<int32_t> bannedTokens(const std::vector<int32_t> &prefix,
                                    bool eosAllowed) const;
  void encode();
  void decodeStep(int64_t step, const std::vector<int32_t> &tokens);
  /// Row r of every self-attention cache takes row parents[r]'s first
  /// `length` positions; rows that keep their own are not touched.
  void reorderCaches(const std::vector<int64_t> &parents, int64_t length);
  /// Row i of the caches (first `length` positions) takes row keptRows[i],
  /// sentence i of the cross-attention keys/values and of liveLengths takes
  /// sentence keptSentences[i] (both increasing, each kept[i] >= i): the
  /// rows of finished sentences leave the batch.
  void compactRows(const std::vector<int64_t> &keptRows,
                   const std::vector<int64_t> &keptSentences, int64_t length);
  void copyHeads(float *to, int64_t toStride, const float *from,
                 int64_t fromStride, int64_t chunk) const;

  tfm_model &model;
  const tfm_model_config &cfg;
  tfm_search_options opts;

  int64_t batch = 0, srcLen = 0, beam = 1, rows = 0, capacity = 0;
  int64_t heads = 0, headDim = 0;
  // liveLengths: the source lengths of the sentences still decoded.
  std::vector<int32_t> srcIds, srcLengths, liveLengths;
  Buffer encoderOut, logits;
  // Per layer: K, V; cross-attention once per live sentence (its beams
  // share them), caches once per row.
  std::vector<std::unique_ptr<Buffer>> crossKV, caches;
};

std::vector<int32_t>
Translator::bannedTokens(const std::vector<int32_t> &prefix,
                         bool eosAllowed) const {
  std::vector<int32_t> banned = {int32_t(cfg.pad_token_id)};
  if (!eosAllowed)
    banned.push_back(int32_t(cfg.eos_token_id));
  auto input = [&](size_t i) { // the row's input: start token, then prefix
    return i == 0 ? int32_t(cfg.decoder_start_token_id) : prefix[i - 1];
  };
  size_t inputLength = prefix.size() + 1;
  for (const std::vector<int32_t> &word : model.badWords) {
    size_t context = word.size() - 1;
    if (context > inputLength)
      continue;
    bool matches = true;
    for (size_t i = 0; i < context && matches; ++i)
      matches = input(inputLength - context + i) == word[i];
    if (matches)
      banned.push_back(word.back());
  }
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  return banned;
}

void Translator::encode() {
  int64_t d = cfg.d_model;
  encoderOut.resize(batch * srcLen * d);
  crossKV.clear();
  ArgPack args;
  args.memref(model.weights, {model.weightsSize});
  args.memref(srcIds.data(), {batch, srcLen});
  args.memref(srcLengths.data(), {batch});
  args.memref(encoderOut.data, {batch, srcLen, d});
  for (int64_t l = 0; l < 2 * cfg.decoder_layers; ++l) {
    crossKV.push_back(
        std::make_unique<Buffer>(batch * heads * srcLen * headDim));
    args.memref(crossKV.back()->data, {batch, heads, srcLen, headDim});
  }
  tfm_encode(args.data());
}

void Translator::decodeStep(int64_t step, const std::vector<int32_t> &tokens) {
  int64_t vocab = cfg.target_vocab_size;
  ArgPack args;
  args.memref(model.weights, {model.weightsSize});
  args.memref(tokens.data(), {rows, 1});
  args.scalar(step);
  int64_t sentences = rows / beam;
  args.memref(liveLengths.data(), {sentences});
  for (int64_t l = 0; l < cfg.decoder_layers; ++l) {
    args.memref(crossKV[2 * l]->data, {sentences, heads, srcLen, headDim});
    args.memref(crossKV[2 * l + 1]->data, {sentences, heads, srcLen, headDim});
    args.memref(caches[2 * l]->data, {rows, heads, capacity, headDim});
    args.memref(caches[2 * l + 1]->data, {rows, heads, capacity, headDim});
  }
  args.memref(logits.data, {rows, 1, vocab});
  tfm_decode_step(args.data());
}

/// Copies the first `chunk` floats of each head of one cache row: head h
/// starts at to + h * toStride and from + h * fromStride.
void Translator::copyHeads(float *to, int64_t toStride, const float *from,
                           int64_t fromStride, int64_t chunk) const {
  for (int64_t h = 0; h < heads; ++h)
    std::memcpy(to + h * toStride, from + h * fromStride,
                chunk * sizeof(float));
}

void Translator::reorderCaches(const std::vector<int64_t> &parents,
                               int64_t length) {
  CacheMoves moves = cacheMoves(parents);
  const std::vector<int64_t> &staged = moves.staged;
  if (moves.copies.empty())
    return;
  // Per row and head, positions [0, length) are contiguous.
  int64_t chunk = length * headDim, headStride = capacity * headDim;
  int64_t rowChunk = heads * chunk;
  // The caches in parallel, each thread with its staging area.
#pragma omp parallel
  {
    std::unique_ptr<float[]> stage(new float[staged.size() * rowChunk]);
#pragma omp for schedule(static)
    for (size_t c = 0; c < caches.size(); ++c) {
      float *base = caches[c]->data;
      for (size_t i = 0; i < staged.size(); ++i)
        copyHeads(&stage[i * rowChunk], chunk,
                  base + staged[i] * heads * headStride, headStride, chunk);
      for (const RowCopy &copy : moves.copies)
        if (copy.staged)
          copyHeads(base + copy.to * heads * headStride, headStride,
                    &stage[copy.from * rowChunk], chunk, chunk);
        else
          copyHeads(base + copy.to * heads * headStride, headStride,
                    base + copy.from * heads * headStride, headStride, chunk);
    }
  }
}

void Translator::compactRows(const std::vector<int64_t> &keptRows,
                             const std::vector<int64_t> &keptSentences,
                             int64_t length) {
  // Row i is written after rows < i and read from row kept[i] >= i, so no
  // row is overwritten before it is read.
  int64_t chunk = length * headDim, headStride = capacity * headDim;
  int64_t crossRow = heads * srcLen * headDim;
  size_t buffers = caches.size() + crossKV.size();
#pragma omp parallel for schedule(static)
  for (size_t c = 0; c < buffers; ++c) {
    bool cache = c < caches.size();
    const std::vector<int64_t> &kept = cache ? keptRows : keptSentences;
    float *base = cache ? caches[c]->data : crossKV[c - caches.size()]->data;
    for (size_t i = 0; i < kept.size(); ++i) {
      int64_t from = kept[i];
      if (from == int64_t(i))
        continue;
      if (!cache) {
        std::memcpy(base + i * crossRow, base + from * crossRow,
                    crossRow * sizeof(float));
        continue;
      }
      copyHeads(base + i * heads * headStride, headStride,
                base + from * heads * headStride, headStride, chunk);
    }
  }
  for (size_t i = 0; i < keptSentences.size(); ++i)
    liveLengths[i] = liveLengths[keptSentences[i]];
  liveLengths.resize(keptSentences.size());
  rows = int64_t(keptRows.size());
}

void Translator::run(const int32_t *const *sources, const int32_t *lengths,
                     int32_t count, tfm_results &results) {
  batch = count;
  beam = std::max<int64_t>(1, opts.beam_size);
  rows = batch * beam;
  heads = cfg.decoder_heads;
  headDim = cfg.d_model / heads;
  int64_t vocab = cfg.target_vocab_size;
  const int32_t eos = int32_t(cfg.eos_token_id), pad = int32_t(cfg.pad_token_id);

  // Pad the sources to the longest.
  srcLen = *std::max_element(lengths, lengths + count);
  srcIds.assign(batch * srcLen, pad);
  srcLengths.assign(lengths, lengths + count);
  for (int64_t b = 0; b < batch; ++b)
    std::copy(sources[b], sources[b] + lengths[b], &srcIds[b * srcLen]);
  liveLengths = srcLengths;

  // Length limits per sentence; the positions table bounds them all.
  std::vector<int64_t> maxLen(batch);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t limit = opts.max_length;
    if (opts.max_length_ratio > 0 && !opts.suppress_eos)
      limit = int64_t(std::min<double>(
          double(limit), double(opts.max_length_ratio) * lengths[b] + 5));
    maxLen[b] = std::max<int64_t>(1, std::min(limit, cfg.max_positions));
  }
  capacity = *std::max_element(maxLen.begin(), maxLen.end());

  tfm_translate_timing &timing = results.timing;
  timing = {};
  {
    ScopedTimer timer(timing.encode);
    encode();
  }
  caches.clear();
  for (int64_t l = 0; l < 2 * cfg.decoder_layers; ++l)
    caches.push_back(
        std::make_unique<Buffer>(rows * heads * capacity * headDim));
  logits.resize(rows * vocab);

  results.nbest.assign(batch, {});
  results.firstLogits.assign(batch, {});
  std::vector<std::vector<int32_t>> prefixes(rows);
  std::vector<float> scores(rows, 0.0f);
  // Only the first beam of each sentence is live at the start.
  for (int64_t r = 0; r < rows; ++r)
    if (r % beam)
      scores[r] = -std::numeric_limits<float>::infinity();
  std::vector<std::vector<Hypothesis>> finished(batch);
  std::vector<bool> done(batch, false);
  // The sentences still searched, in batch order: slot s has rows
  // s·beam .. s·beam + beam - 1. A finished sentence's rows leave the batch
  // at the end of its step, so the steps after it cost it nothing.
  std::vector<int64_t> live(batch);
  std::iota(live.begin(), live.end(), 0);
  std::vector<int32_t> tokens(rows, int32_t(cfg.decoder_start_token_id));
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<std::vector<Candidate>> rowBest(rows);

  for (int64_t step = 0; step < capacity; ++step) {
    {
      ScopedTimer timer(timing.decode);
      decodeStep(step, tokens);
    }
    ++timing.steps;
    timing.row_steps += rows;
    std::optional<ScopedTimer> searchTimer(std::in_place, timing.search);
    if (step == 0)
      for (int64_t b = 0; b < batch; ++b)
        results.firstLogits[b].assign(logits.data + b * beam * vocab,
                                      logits.data + (b * beam + 1) * vocab);
    // Each live row's best 2k extensions, rows in parallel: a row's
    // log-softmax normalizer sums the exponentials of all its logits.
    // A sentence at its length limit ends with the forced EOS (if the
    // checkpoint names one), as Hugging Face's ForcedEOSTokenLogitsProcessor
    // ends it; it overrides --min-length, and --suppress-eos turns it off.
    bool eosAllowed = !opts.suppress_eos && step + 1 > opts.min_length;
    bool forceEos = cfg.forced_eos_token_id >= 0 && !opts.suppress_eos;
    std::vector<char> nonFinite(rows, 0);
    std::optional<ScopedTimer> scanTimer(std::in_place, timing.scan);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      rowBest[r].clear();
      if (scores[r] == ninf)
        continue;
      bool forced = forceEos && step + 1 >= maxLen[live[r / beam]];
      std::optional<std::vector<Candidate>> best = bestExtensions(
          logits.data + r * vocab, vocab, scores[r], (r % beam) * vocab,
          2 * beam, bannedTokens(prefixes[r], eosAllowed),
          forced ? int32_t(cfg.forced_eos_token_id) : -1);
      if (best)
        rowBest[r] = std::move(*best);
      else
        nonFinite[r] = 1;
    }
    scanTimer.reset();
    // tfmc refuses non-finite weights, so a NaN here means damaged
    // weights (or an fp32 overflow): never a translation to print.
    for (int64_t r = 0; r < rows; ++r)
      if (nonFinite[r])
        throw SearchError(
            "sentence " + std::to_string(live[r / beam] + 1) +
            " of the batch: the logits of step " + std::to_string(step + 1) +
            " are not finite; the weights in " + model.path +
            " are damaged (--verify-weights names the tensors) or the "
            "model overflows fp32");
    std::vector<int64_t> parents(rows);
    std::iota(parents.begin(), parents.end(), 0);
    std::vector<std::vector<int32_t>> nextPrefixes(prefixes);
    std::vector<float> nextScores(scores);

    for (size_t s = 0; s < live.size(); ++s) {
      int64_t b = live[s];
      bool last = step + 1 >= maxLen[b];
      // The best 2k of (beam score + log p(token)) over live beams and
      // tokens: the best of the rows' own best 2k (rowBest).
      size_t want = 2 * beam;
      std::vector<Candidate> best;
      for (int64_t j = 0; j < beam; ++j) {
        const std::vector<Candidate> &row = rowBest[s * beam + j];
        best.insert(best.end(), row.begin(), row.end());
      }
      std::sort(best.begin(), best.end(), before);
      if (best.size() > want)
        best.resize(want);
      size_t keep = best.size();
      const std::vector<Candidate> &candidates = best;
      int64_t next = 0;
      for (size_t c = 0; c < keep && next < beam; ++c) {
        auto [score, flat] = candidates[c];
        int64_t j = flat / vocab;
        int32_t token = int32_t(flat % vocab);
        int64_t parent = s * beam + j;
        if (token == eos) {
          // An EOS ranked beyond the beam width does not count.
          if (int64_t(c) < beam) {
            Hypothesis h{prefixes[parent], score, 0};
            h.normalized =
                score / std::pow(float(h.tokens.size() + 1), opts.length_penalty);
            finished[b].push_back(std::move(h));
          }
          continue;
        }
        int64_t r = s * beam + next++;
        parents[r] = parent;
        nextPrefixes[r] = prefixes[parent];
        nextPrefixes[r].push_back(token);
        nextScores[r] = score;
      }
      for (; next < beam; ++next)
        nextScores[s * beam + next] = ninf;
      if (int64_t(finished[b].size()) >= beam) {
        done[b] = true;
      } else if (last) {
        // Out of length: the live beams end here, unterminated.
        for (int64_t j = 0; j < beam; ++j) {
          int64_t r = s * beam + j;
          if (nextScores[r] == ninf)
            continue;
          Hypothesis h{nextPrefixes[r], nextScores[r], 0};
          h.normalized =
              h.score / std::pow(float(h.tokens.size()), opts.length_penalty);
          finished[b].push_back(std::move(h));
        }
        done[b] = true;
      }
    }
    prefixes.swap(nextPrefixes);
    scores.swap(nextScores);
    searchTimer.reset();
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; }))
      break;
    ScopedTimer cachesTimer(timing.caches);
    reorderCaches(parents, step + 1);
    if (std::any_of(live.begin(), live.end(),
                    [&](int64_t b) { return done[b]; })) {
      // keptSlots: the sentences (of the batch) still decoded; keptLive:
      // their places among the live ones.
      std::vector<int64_t> keptRows, keptSlots, keptLive;
      for (size_t s = 0; s < live.size(); ++s)
        if (!done[live[s]]) {
          keptSlots.push_back(live[s]);
          keptLive.push_back(int64_t(s));
          for (int64_t j = 0; j < beam; ++j)
            keptRows.push_back(int64_t(s) * beam + j);
        }
      compactRows(keptRows, keptLive, step + 1);
      for (size_t i = 0; i < keptRows.size(); ++i)
        if (keptRows[i] != int64_t(i)) { // (a self-move would empty it)
          prefixes[i] = std::move(prefixes[keptRows[i]]);
          scores[i] = scores[keptRows[i]];
        }
      prefixes.resize(rows);
      scores.resize(rows);
      live = std::move(keptSlots);
    }
    tokens.resize(rows);
    for (int64_t r = 0; r < rows; ++r)
      tokens[r] = prefixes[r].empty() ? int32_t(cfg.decoder_start_token_id)
                                      : prefixes[r].back();
  }

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

} // namespace

extern "C" tfm_status tfm_translate(tfm_model *model,
                                    const tfm_search_options *options,
                                    const int32_t *const *sources,
                                    const int32_t *source_lengths,
                                    int32_t count, tfm_results **out_results) {
  *out_results = nullptr;
  const tfm_model_config &cfg = model->config;
  if (count <= 0)
    return makeError("no sentences to translate");
  if (options->beam_size < 1 || options->n_best < 1 ||
      options->n_best > options->beam_size)
    return makeError("need beam size >= 1 and 1 <= n-best <= beam size");
  if (options->max_length < 1)
    return makeError("max length must be at least 1");
  if (options->min_length < 0)
    return makeError("min length must be at least 0");
  if (!std::isfinite(options->length_penalty))
    return makeError("the length penalty must be a finite number");
  if (!(options->max_length_ratio >= 0) ||
      !std::isfinite(options->max_length_ratio))
    return makeError("the max length ratio must be a finite number >= 0");
  for (int32_t i = 0; i < count; ++i) {
    if (source_lengths[i] < 1)
      return makeError("sentence " + std::to_string(i + 1) + " is empty");
    if (source_lengths[i] > cfg.max_positions)
      return makeError("sentence " + std::to_string(i + 1) + " has " +
                       std::to_string(source_lengths[i]) +
                       " tokens; the model takes at most " +
                       std::to_string(cfg.max_positions));
    for (int32_t t = 0; t < source_lengths[i]; ++t)
      if (sources[i][t] < 0 || sources[i][t] >= cfg.source_vocab_size)
        return makeError("sentence " + std::to_string(i + 1) + ": token id " +
                         std::to_string(sources[i][t]) +
                         " is outside the vocabulary of " +
                         std::to_string(cfg.source_vocab_size));
  }
  try {
    auto results = std::make_unique<tfm_results_t>();
    Translator(*model, *options).run(sources, source_lengths, count, *results);
    *out_results = results.release();
    return nullptr;
  } catch (const SearchError &e) {
    return makeError(e.what());
  } catch (const std::bad_alloc &) {
    return makeError("out of memory translating a batch of " +
                     std::to_string(count) + " sentences");
  }
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

extern "C" const float *tfm_results_first_logits(const tfm_results *results,
                                                 int32_t index) {
  return results->firstLogits[index].data();
}

extern "C" void tfm_results_timing(const tfm_results *results,
                                   tfm_translate_timing *out_timing) {
  *out_timing = results->timing;
}

extern "C" void tfm_results_free(tfm_results *results) { delete results; }
