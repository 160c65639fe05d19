//===- Model.cpp - Map a weights file and check it --------------*- C++ -*-===//
//
// A weights file is a header, the tensors' data and a table of the tensors'
// regions with their checksums (tfm/abi/ModelInfo.h), on its own or
// embedded at the end of a translator. Opening one maps it and checks the
// header and the table against the compiled model, every message naming
// the file; verifying it hashes every region's bytes.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Model.h"

#include "runtime/src/Heap.h"
#include "runtime/src/Status.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Panels.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace tfm_runtime;

namespace {

/// Maps the whole file `name` read-only into `model`.
tfm_status mapFile(const std::string &name, tfm_model_t &model) {
  int fd = open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeError("{}: cannot open weights: {}", name, std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int error = errno;
    close(fd);
    return makeError("{}: cannot stat: {}", name, std::strerror(error));
  }
  model.mappingSize = st.st_size;
  if (st.st_size > 0)
    model.mapping = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  close(fd);
  if (model.mapping == MAP_FAILED)
    return makeError("{}: cannot map: {}", name, std::strerror(error));
  return nullptr;
}

/// Where the weights file lies in the mapped `bytes`: all of them, or,
/// for weights embedded in an executable, where its trailer says.
struct Span {
  uint64_t start, end;
};

tfm_status findWeights(const std::string &name, const char *bytes,
                       uint64_t size, Span &out) {
  out = {0, size};
  if (size < sizeof(EmbedTrailer))
    return nullptr;
  EmbedTrailer trailer;
  std::memcpy(&trailer, bytes + size - sizeof trailer, sizeof trailer);
  if (std::memcmp(trailer.magic, kEmbedMagic, 8) != 0)
    return nullptr;
  if (trailer.offset > size || trailer.size > size - trailer.offset)
    return makeError("{}: corrupt embedded-weights trailer", name);
  out = {trailer.offset, trailer.offset + trailer.size};
  return nullptr;
}

/// Checks the header of a weights file of `available` bytes against this
/// translator's format and compiled model.
tfm_status checkHeader(const std::string &name, const WeightsHeader &header,
                       uint64_t available) {
  if (std::memcmp(header.magic, kWeightsMagic, 8) != 0)
    return makeError("{}: not a tfm weights file (bad magic)", name);
  const tfm_model_info &info = tfm_model_info_data;
  if (header.abiVersion != kAbiVersion)
    return makeError("{}: weights file format version {}, this translator "
                     "reads version {} (compile the model again with this "
                     "tfmc)",
                     name, header.abiVersion, kAbiVersion);
  if (header.headerChecksum !=
      checksum(&header, offsetof(WeightsHeader, headerChecksum)))
    return makeError(
        "{}: the weights file's header is damaged (checksum mismatch)", name);
  if (int64_t(header.precision) != info.precision)
    return makeError("{}: these weights are {}, the compiled model reads {} "
                     "(tfmc compile --precision)",
                     name, precisionName(header.precision),
                     precisionName(info.precision));
  if (int64_t(header.fingerprint) != info.fingerprint)
    return makeError("{}: these weights were written for another compiled "
                     "model (layout fingerprint mismatch)",
                     name);
  if (int64_t(header.dataSize) != info.weightsSize ||
      header.dataSize > available - kWeightsHeaderSize)
    return makeError("{}: truncated: expected {} bytes of weights", name,
                     info.weightsSize);
  return nullptr;
}

/// Reads the region table of `available` bytes after the data: in the
/// file, intact, and every region inside the data.
tfm_status readRegionTable(const std::string &name, const char *table,
                           uint64_t available, const WeightsHeader &header,
                           std::vector<tfm_model_t::Region> &regions) {
  if (header.tableSize > available)
    return makeError("{}: truncated: the tensor table is missing", name);
  if (checksum(table, header.tableSize) != header.tableChecksum)
    return makeError("{}: the tensor table is damaged (checksum mismatch)",
                     name);
  for (uint64_t at = 0; at < header.tableSize;) {
    uint64_t words[4]; // offset, size, checksum, name length
    if (header.tableSize - at < sizeof words)
      return makeError("{}: the tensor table is malformed", name);
    std::memcpy(words, table + at, sizeof words);
    at += sizeof words;
    uint64_t padded = (words[3] + 7) / 8 * 8;
    if (words[3] > header.tableSize - at || padded > header.tableSize - at ||
        words[0] > header.dataSize || words[1] > header.dataSize - words[0])
      return makeError("{}: the tensor table is malformed", name);
    regions.push_back(
        {std::string(table + at, words[3]), words[0], words[1], words[2]});
    at += padded;
  }
  return nullptr;
}

/// What the output projection's panels hold at `precision`.
tfm_runtime::PanelElements panelElements(int64_t precision) {
  using tfm_runtime::PanelElements;
  switch (precision) {
  case kPrecisionBf16:
    return PanelElements::Bf16Pairs;
  case kPrecisionInt8:
    return PanelElements::Int8Quads;
  case kPrecisionInt4:
    return PanelElements::Int4Octets;
  default:
    return PanelElements::F32;
  }
}

/// Where the output projection's panels and bias are, checked against
/// the weights' size (the header's fingerprint ties them to the code).
tfm_status readOutputProjection(tfm_model_t &model) {
  const tfm_model_info &info = tfm_model_info_data;
  int64_t width = info.outputPanelWidth, vocab = info.targetVocabSize;
  model.outputPanelWidth = width;
  model.outputElements = panelElements(info.precision);
  model.outputPanelCount = (vocab + width - 1) / width;
  model.outputPanelBytes =
      tfm_runtime::bytesPerPanel(info.dModel, width, model.outputElements);
  int64_t end =
      info.outputPanelsOffset + model.outputPanelCount * model.outputPanelBytes;
  int64_t biasEnd = info.outputBiasOffset + vocab * int64_t(sizeof(float));
  if (width <= 0 || info.outputPanelsOffset < 0 || end > model.weightsSize ||
      (info.outputBiasOffset >= 0 && biasEnd > model.weightsSize))
    return makeError("{}: the output projection lies outside the weights' "
                     "{} bytes",
                     model.path, model.weightsSize);
  model.outputPanels = reinterpret_cast<const uint8_t *>(model.weights) +
                       info.outputPanelsOffset;
  model.outputBias.resize(0);
  if (info.outputBiasOffset >= 0) {
    const auto *bias =
        reinterpret_cast<const float *>(model.weights + info.outputBiasOffset);
    model.outputBias.resize(model.outputPanelCount * width);
    std::fill_n(model.outputBias.data, model.outputBias.size, 0.0f);
    std::copy(bias, bias + vocab, model.outputBias.data);
  }
  return nullptr;
}

/// The compiled model's configuration and generation rules
/// (tfm_model_info_data, tfm_model_bad_words), checked where the search
/// relies on them.
tfm_status readModelInfo(tfm_model_t &model) {
  const tfm_model_info &info = tfm_model_info_data;
  model.config = {
      info.dModel,           info.encoderLayers,       info.decoderLayers,
      info.encoderHeads,     info.decoderHeads,        info.sourceVocabSize,
      info.targetVocabSize,  info.maxPositions,        info.eosTokenId,
      info.padTokenId,       info.decoderStartTokenId, info.forcedEosTokenId,
      info.forcedBosTokenId, info.decoderHeadDim,      info.repetitionPenalty,
      info.noRepeatNgramSize};
  for (int64_t i = 0, at = 1; i < tfm_model_bad_words[0]; ++i) {
    int64_t length = tfm_model_bad_words[at++];
    model.badWords.emplace_back(tfm_model_bad_words + at,
                                tfm_model_bad_words + at + length);
    at += length;
    // The search's walk over the banned tokens needs them in the vocabulary
    // (tfmc checks config.json; hand-written IR is not).
    for (int32_t token : model.badWords.back())
      if (token < 0 || token >= info.targetVocabSize)
        return makeError("this translator's bad word {} holds token {}, "
                         "outside the target vocabulary",
                         i, token);
  }
  for (auto [which, token] :
       {std::pair<const char *, int64_t>{"EOS", info.forcedEosTokenId},
        {"BOS", info.forcedBosTokenId}})
    if (token >= info.targetVocabSize)
      return makeError("this translator's forced {} token {} is outside the "
                       "target vocabulary",
                       which, token);
  if (!(info.repetitionPenalty > 0) || !std::isfinite(info.repetitionPenalty) ||
      info.noRepeatNgramSize < 0)
    return makeError("this translator's repetition guards (penalty {}, "
                     "n-gram size {}) are not a penalty > 0 and a size >= 0",
                     info.repetitionPenalty, info.noRepeatNgramSize);
  return readOutputProjection(model);
}

/// The shortlist stored with the model, if any, with the tokens every
/// batch may need whatever its sources: EOS, padding, the decoder's start
/// and the forced first and last tokens.
tfm_status loadShortlist(tfm_model_t &model) {
  const tfm_model_config &cfg = model.config;
  // What a stored vmap text skipped was reported when tfmc compiled it.
  std::string skipped;
  if (tfm_status s = Shortlist::load(model.path, cfg, model.shortlist, skipped))
    return s;
  if (model.shortlist)
    model.shortlist->alwaysInclude(specialTokens(cfg));
  return nullptr;
}

/// Maps and checks the weights at `path`, without hashing the tensors.
tfm_status openUnverified(const char *path,
                          std::unique_ptr<tfm_model_t> &model) {
  std::string name = path;
  model = std::make_unique<tfm_model_t>();
  if (tfm_status s = mapFile(name, *model))
    return s;
  const char *bytes = static_cast<const char *>(model->mapping);
  Span span;
  if (tfm_status s = findWeights(name, bytes, model->mappingSize, span))
    return s;
  uint64_t available = span.end - span.start;
  if (available < kWeightsHeaderSize)
    return makeError("{}: too short for a tfm weights file ({} bytes)", name,
                     available);
  WeightsHeader header;
  std::memcpy(&header, bytes + span.start, sizeof header);
  if (tfm_status s = checkHeader(name, header, available))
    return s;
  uint64_t tableStart = span.start + kWeightsHeaderSize + header.dataSize;
  if (tfm_status s =
          readRegionTable(name, bytes + tableStart, span.end - tableStart,
                          header, model->regions))
    return s;
  model->weights =
      const_cast<int8_t *>(reinterpret_cast<const int8_t *>(bytes)) +
      span.start + kWeightsHeaderSize;
  model->weightsSize = header.dataSize;
  model->path = name;
  if (tfm_status s = readModelInfo(*model))
    return s;
  return loadShortlist(*model);
}

/// Which regions' bytes differ from their checksums: every block of every
/// region is hashed, the blocks spread evenly over the threads.
std::vector<char> findDamagedRegions(const tfm_model_t &model) {
  const auto &regions = model.regions;
  struct Block {
    size_t region;
    uint64_t index;
  };
  std::vector<Block> blocks;
  std::vector<size_t> firstBlock(regions.size() + 1, 0);
  for (size_t r = 0; r < regions.size(); ++r) {
    firstBlock[r] = blocks.size();
    for (uint64_t b = 0; b < checksumBlocks(regions[r].size); ++b)
      blocks.push_back({r, b});
  }
  firstBlock[regions.size()] = blocks.size();
  std::vector<uint64_t> sums(blocks.size());
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto &region = regions[blocks[i].region];
    sums[i] = blockChecksum(model.weights + region.offset, region.size,
                            blocks[i].index);
  }
  std::vector<char> damaged(regions.size());
  for (size_t r = 0; r < regions.size(); ++r)
    damaged[r] = checksum(sums.data() + firstBlock[r],
                          (firstBlock[r + 1] - firstBlock[r]) *
                              sizeof(uint64_t)) != regions[r].checksum;
  return damaged;
}

} // namespace

tfm_status tfm_runtime::openModel(const char *path, bool verify,
                                  tfm_model **out_model) {
  *out_model = nullptr;
  // The compiled code allocates its temporaries afresh at every step: the
  // next step reuses what this one frees.
  prepareHeap();
  std::unique_ptr<tfm_model_t> model;
  if (tfm_status s = openUnverified(path, model))
    return s;
  if (verify)
    if (tfm_status s = verifyWeights(*model, nullptr, nullptr)) {
      s->message += " (the weights are checked at every load; compile the "
                    "model again, or copy its weights file again)";
      return s;
    }
  *out_model = model.release();
  return nullptr;
}

tfm_status tfm_runtime::verifyWeights(const tfm_model &model,
                                      int64_t *out_tensors,
                                      int64_t *out_bytes) {
  const auto &regions = model.regions;
  std::vector<char> damaged = findDamagedRegions(model);
  std::string names;
  size_t count = 0;
  int64_t bytes = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    bytes += regions[i].size;
    if (!damaged[i])
      continue;
    if (count++ < 8)
      names +=
          fmt::format("{}'{}'", names.empty() ? "" : ", ", regions[i].name);
  }
  if (count)
    return makeError("{}: {} of {} tensors are damaged (checksum mismatch): "
                     "{}{}",
                     model.path, count, regions.size(), names,
                     count > 8 ? ", ..." : "");
  if (out_tensors)
    *out_tensors = int64_t(regions.size());
  if (out_bytes)
    *out_bytes = bytes;
  return nullptr;
}
