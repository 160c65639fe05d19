//===- ModelInfo.h - What the compiled model exports ------------*- C++ -*-===//
//
// The contract between the code tfmc generates and the runtime: the packed
// entry points, and a constant describing the model. tfmc's Codegen.cpp
// writes both; their layouts must agree with what is declared here.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_MODELINFO_H
#define TFM_RUNTIME_MODELINFO_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tfm_runtime {

/// Bumped whenever the entry points' arguments, this struct or the weights
/// file's format change. 2: linears' weights stored as panels. 3: the
/// tensors' regions with checksums, and a checksum of the header. 4: the
/// forced EOS token and the bad words. 5: the precision (bf16 panels). 6:
/// bf16 panels pair K (tfm/abi/Panels.h); decode_step's cross-attention
/// keys, values and source lengths once per sentence, not per beam. 7:
/// int8 panels. 8: regions checksummed in blocks (regionChecksum), so that
/// every load can check them in parallel. 9: the forced BOS token, the
/// decoder's head width. 10: decode_step's output projection over the
/// rows its caller chooses (output_panels, output_bias); the checkpoint's
/// repetition guards. 11: decode_step's log-sum-exp terms of each block of
/// kLogitBlock logits. 12: decode_step's cache_rows, the cache row of each
/// row's positions (beams read their parents' keys in place). 13:
/// decode_step's row_starts, the step each row joined its batch at.
constexpr uint64_t kAbiVersion = 13;

/// Logits per block of decode_step's logit_blocks (tfm.logsumexp_blocks):
/// the output panels' width with AVX-512, whose kernel makes both.
constexpr int64_t kLogitBlock = 64;

/// The arithmetic of the linears (tfmc compile --precision): f32 weights;
/// or bf16 weights (panels of bf16) times activations rounded to bf16,
/// summed in f32; or int8 weights (per output channel) times activations
/// quantized per row, summed exactly in i32 and scaled back.
constexpr uint64_t kPrecisionFp32 = 0;
constexpr uint64_t kPrecisionBf16 = 1;
constexpr uint64_t kPrecisionInt8 = 2;
/// Or int4 weights (groups of K with a scale each) times int8's inputs.
constexpr uint64_t kPrecisionInt4 = 3;
inline const char *precisionName(uint64_t precision) {
  return precision == kPrecisionBf16   ? "bf16"
         : precision == kPrecisionInt8 ? "int8"
         : precision == kPrecisionInt4 ? "int4"
         : precision == kPrecisionFp32 ? "fp32"
                                       : "unknown";
}

/// Weights files start with this header (little-endian, kHeaderSize bytes,
/// then the tensors: f32, at the offsets compiled into the code, row-major
/// or, for linears, as panels of f32, bf16 or int8; see tfm/abi/Panels.h),
/// then the region table.
constexpr char kWeightsMagic[8] = {'T', 'F', 'M', 'W', 'G', 'T', '0', '1'};
constexpr uint64_t kWeightsHeaderSize = 4096;
struct WeightsHeader {
  char magic[8];
  uint64_t abiVersion;
  uint64_t fingerprint;    // of the layout; must match the compiled code's
  uint64_t dataSize;       // bytes of tensor data after the header
  uint64_t tableSize;      // bytes of the region table after the data
  uint64_t tableChecksum;  // checksum() of the table
  uint64_t precision;      // kPrecisionFp32, kPrecisionBf16 or kPrecisionInt8
  uint64_t headerChecksum; // checksum() of the fields above
};

/// The region table: one entry per tensor region, in data order, each
///   u64 offset (into the data), u64 size, u64 checksum() of the region's
///   bytes, u64 name length, the name, zero-padded to a multiple of 8.
/// The translator checks the header and the table at every load, and the
/// regions too unless told not to.

/// A 64-bit checksum of `size` bytes, to find damage (not tampering): 32
/// lanes over 8-byte words, each h = rotl(h ^ w, 31) * prime; the lanes
/// take 256-byte stripes as four vectors of eight words, which keeps the
/// multiplies in flight and the load of every load-time check small. The
/// words past the last stripe go to lanes 0, 1, ... in turn (the last one
/// zero-padded); the size and the lanes are folded into the result.
namespace checksum_detail {
constexpr uint64_t kPrime = 0x9E3779B185EBCA87ull;
constexpr int kLanes = 32, kStripe = 8 * kLanes;
typedef uint64_t Words __attribute__((vector_size(64), aligned(8)));

inline uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w;
  return ((h << 31) | (h >> 33)) * kPrime;
}

/// The whole stripes of `bytes` into `lanes`; returns the bytes taken.
#define TFM_CHECKSUM_STRIPES                                                   \
  uint64_t i = 0;                                                              \
  for (; i + kStripe <= size; i += kStripe)                                    \
    for (int v = 0; v < 4; ++v) {                                              \
      Words w;                                                                 \
      __builtin_memcpy(&w, bytes + i + 64 * v, 64);                            \
      Words h = lanes[v] ^ w;                                                  \
      lanes[v] = ((h << 31) | (h >> 33)) * kPrime;                             \
    }                                                                          \
  return i;
inline uint64_t stripes(Words *lanes, const unsigned char *bytes,
                        uint64_t size) {
  TFM_CHECKSUM_STRIPES
}
/// The same arithmetic, with AVX-512's 64-bit vector multiply.
__attribute__((target("avx512f,avx512dq,avx512vl"))) inline uint64_t
stripesAvx512(Words *lanes, const unsigned char *bytes, uint64_t size) {
  TFM_CHECKSUM_STRIPES
}
#undef TFM_CHECKSUM_STRIPES
} // namespace checksum_detail

inline uint64_t checksum(const void *data, uint64_t size) {
  using namespace checksum_detail;
  static const bool avx512 =
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  Words vectors[4];
  for (int v = 0; v < 4; ++v)
    for (int l = 0; l < 8; ++l)
      vectors[v][l] = uint64_t(8 * v + l + 1);
  uint64_t i = avx512 ? stripesAvx512(vectors, bytes, size)
                      : stripes(vectors, bytes, size);
  uint64_t lanes[kLanes];
  __builtin_memcpy(lanes, vectors, sizeof lanes);
  int lane = 0;
  for (; i + 8 <= size; i += 8, ++lane) {
    uint64_t w;
    __builtin_memcpy(&w, bytes + i, 8);
    lanes[lane] = mix(lanes[lane], w);
  }
  if (i < size) {
    uint64_t tail = 0;
    __builtin_memcpy(&tail, bytes + i, size - i);
    lanes[lane] = mix(lanes[lane], tail);
  }
  uint64_t h = mix(size, 0);
  for (uint64_t l : lanes)
    h = mix(h, l);
  return h ^ (h >> 29);
}

/// A region's checksum is the checksum() of its blocks' checksums, each
/// block kChecksumBlockSize bytes (the last one shorter): the blocks of all
/// regions can be checked in parallel, evenly, however the regions' sizes
/// are spread.
constexpr uint64_t kChecksumBlockSize = uint64_t(1) << 20;
inline uint64_t checksumBlocks(uint64_t size) {
  return (size + kChecksumBlockSize - 1) / kChecksumBlockSize;
}
inline uint64_t blockChecksum(const void *region, uint64_t size,
                              uint64_t block) {
  uint64_t start = block * kChecksumBlockSize;
  uint64_t length =
      size - start < kChecksumBlockSize ? size - start : kChecksumBlockSize;
  return checksum(static_cast<const unsigned char *>(region) + start, length);
}
inline uint64_t regionChecksum(const void *region, uint64_t size) {
  std::vector<uint64_t> blocks(checksumBlocks(size));
  for (uint64_t b = 0; b < blocks.size(); ++b)
    blocks[b] = blockChecksum(region, size, b);
  return checksum(blocks.data(), blocks.size() * sizeof(uint64_t));
}

/// An executable with embedded weights ends with this trailer; the weights
/// file starts at `offset` (page-aligned) in the executable.
constexpr char kEmbedMagic[8] = {'T', 'F', 'M', 'E', 'M', 'B', 'E', 'D'};
struct EmbedTrailer {
  uint64_t offset;
  uint64_t size;
  char magic[8];
};

/// The words of a memref descriptor for a dense row-major buffer, as the
/// compiled code takes it (MLIR's StridedMemRefType): {allocated, aligned,
/// offset, sizes[rank], strides[rank]}.
inline std::vector<int64_t>
memrefDescriptor(const void *data, const std::vector<int64_t> &sizes) {
  std::vector<int64_t> words(3 + 2 * sizes.size());
  words[0] = words[1] = reinterpret_cast<int64_t>(data);
  words[2] = 0;
  int64_t stride = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    words[3 + i] = sizes[i];
    words[3 + sizes.size() + i] = stride;
    stride *= sizes[i];
  }
  return words;
}

} // namespace tfm_runtime

extern "C" {
/// i64 fields, in this order (tfmc emits it as an array of i64).
struct tfm_model_info {
  int64_t abiVersion;
  int64_t fingerprint;
  int64_t dModel, encoderLayers, decoderLayers, encoderHeads, decoderHeads,
      sourceVocabSize, targetVocabSize, maxPositions, eosTokenId, padTokenId,
      decoderStartTokenId;
  int64_t forcedEosTokenId; // -1: none
  int64_t forcedBosTokenId; // -1: none
  int64_t weightsSize;
  int64_t precision;      // kPrecisionFp32, kPrecisionBf16 or kPrecisionInt8
  int64_t decoderHeadDim; // T5's d_kv; else d_model / decoder heads
  // The output projection's panels in the weights file (all target
  // vocabulary rows, tfm/abi/Panels.h), their width, and the logits bias
  // (f32 [V]; -1: none): what decode_step's caller chooses rows from.
  int64_t outputPanelsOffset, outputPanelWidth, outputBiasOffset;
  // The checkpoint's repetition guards (generation_config.json): the
  // search's defaults.
  int64_t noRepeatNgramSize;
  double repetitionPenalty; // emitted as the i64 of its bits
};
extern const tfm_model_info tfm_model_info_data;
/// The checkpoint's bad_words_ids: their count, then per sequence its
/// length and its tokens.
extern const int64_t tfm_model_bad_words[];
// One line per op kind and shape: the backend that runs it.
extern const char tfm_model_backends[];

/// args[i] points at argument i: a memref descriptor, or an i64 scalar.
///   encode(weights, source_ids[B,S], source_lengths[B],
///          out encoder_output[B,S,D], out cross K/V[B,H,S,Dh] per layer)
///   decode_step(weights, tokens[R,T], step, source_lengths[B],
///               cache_rows[R,*] (i32), row_starts[R] (i32),
///               per layer: cross K, cross V [B,H,S,Dh],
///               cache K, cache V [R,H,*,Dh],
///               output_panels[bytes], output_bias[bytes] (if the
///               model has a logits bias), out logits[R,T,C],
///               out logit_blocks[R,T,ceil(C/kLogitBlock),2])
/// where the R = B·G rows of a step are the G beams of each of B
/// sentences, one sentence after the other: a sentence's beams share its
/// cross-attention keys and values. The caches' positions are the
/// batch's steps: step p of row r's self-attention history is in row
/// cache_rows[r, p] of the caches; the step writes its steps from `step`
/// on into row r, so cache_rows[r, p] = r for every p >= step. Row r
/// joined the batch at step row_starts[r] <= step: its tokens are at
/// positions step - row_starts[r] + t, and it attends to steps from
/// row_starts[r] on (a batch that no sentence joined passes zeros).
/// output_panels holds the output
/// projection's rows that the caller chose, C/P whole panels as the
/// weights file stores them (selectOutputRows; all of the file's for the
/// full vocabulary), output_bias the bias of each of the C columns (f32),
/// and logits[.., c] is column c's: padding columns are computed too.
/// logit_blocks[.., b, :] = (m, s): the max of logits[.., bL : (b + 1)L]
/// (L = kLogitBlock) and the sum of their exp(x - m), padding included.
void tfm_encode(void **args);
void tfm_decode_step(void **args);
}

#endif // TFM_RUNTIME_MODELINFO_H
