//===- ModelConfig.h - A checkpoint's config.json ---------------*- C++ -*-===//
//
// The architecture of a Hugging Face encoder-decoder checkpoint (MarianMT,
// BART, mBART, M2M-100 / NLLB): sizes, layer counts, activation, norm
// placement, embedding options and special tokens. The family (config.json's
// `model_type`) fixes what its Hugging Face class hard-codes; the rest is
// read from the keys.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_MODELCONFIG_H
#define TFM_COMPILER_MODELCONFIG_H

#include "dialects/Tfm/IR/TfmOps.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
namespace tfm {

/// The Hugging Face model classes tfmc reads (`model_type`).
enum class ModelFamily { marian, bart, mbart, m2m100, t5 };

/// `model_type`'s spelling of `family`.
llvm::StringRef modelTypeName(ModelFamily family);

struct ModelConfig {
  ModelFamily family = ModelFamily::marian;
  int64_t dModel = 0;
  int64_t encoderLayers = 0, decoderLayers = 0;
  int64_t encoderHeads = 0, decoderHeads = 0;
  int64_t encoderFfnDim = 0, decoderFfnDim = 0;
  /// Width of an attention head; 0: d_model / heads. T5's d_kv may differ,
  /// the projections then being [heads · d_kv, d_model].
  int64_t headDim = 0;
  /// Source vocabulary; the target one differs only when embeddings are not
  /// shared (`decoder_vocab_size`).
  int64_t vocabSize = 0, targetVocabSize = 0;
  int64_t maxPositions = 0;
  int64_t eosTokenId = 0, padTokenId = 0, decoderStartTokenId = 0;
  /// Generation semantics, as Hugging Face's `generate` reads them: the
  /// token forced as the last one when a sentence reaches its length limit
  /// (-1: none), and token sequences never generated (`bad_words_ids`).
  int64_t forcedEosTokenId = -1;
  /// The token forced as the first one generated (-1: none), as Hugging
  /// Face's ForcedBOSTokenLogitsProcessor forces it; a target prefix given
  /// with a request replaces it.
  int64_t forcedBosTokenId = -1;
  std::vector<std::vector<int64_t>> badWordsIds;
  /// Hugging Face's repetition guards (`repetition_penalty`, 1: off;
  /// `no_repeat_ngram_size`, 0: off): the translator's defaults.
  double repetitionPenalty = 1.0;
  int64_t noRepeatNgramSize = 0;
  Activation activation = Activation::relu;
  /// Pre-norm (LayerNorm before each sub-layer) instead of the paper's
  /// post-norm.
  bool normalizeBefore = false;
  /// Multiply token embeddings by sqrt(d_model).
  bool scaleEmbedding = false;
  /// A LayerNorm over token embeddings + positions (BART's and mBART's
  /// `layernorm_embedding`).
  bool normalizeEmbedding = false;
  /// The position of a sequence's first token: fairseq's models (BART,
  /// mBART, M2M-100) start at padding_idx + 1 = 2, their learned tables
  /// holding max_position_embeddings + 2 rows.
  int64_t firstPosition = 0;
  /// Positions come from the checkpoint's tables (BART, mBART), are
  /// computed (M2M-100: `sinusoidKind`), whichever the checkpoint has
  /// (Marian), or are relative (T5: none added to the embeddings).
  enum class Positions { tableIfPresent, table, sinusoids, relative };
  Positions positions = Positions::tableIfPresent;

  // T5's differences, each the paper's choice when unset.
  /// Buckets of relative positions (T5): a bias [buckets, heads] of the
  /// first layer's self-attention, shared by its stack, instead of
  /// positions added to the embeddings; 0: none.
  int64_t relativeBuckets = 0, relativeMaxDistance = 0;
  /// RMS norm (no mean, no bias) instead of LayerNorm.
  bool rmsNorm = false;
  /// Linears have biases.
  bool linearBias = true;
  /// FFN(x) = W2 (act(W1 x) * (W1' x)) (`gated-*`).
  bool gatedFfn = false;
  /// Scores divided by sqrt(head width).
  bool scaleScores = true;
  /// A tied output projection of T5: x · d_model^-0.5 · Eᵀ.
  bool rescaleTiedOutput = false;

  int64_t headWidth(int64_t heads) const {
    return headDim ? headDim : dModel / heads;
  }
  /// One embedding table for source and target (`model.shared.weight`).
  bool shareEmbeddings = true;
  /// The output projection is the target embedding table.
  bool tieWordEmbeddings = true;
  /// How positions are computed when the checkpoint has no position table:
  /// Hugging Face's by default, Marian's own for its .npz releases.
  PositionKind sinusoidKind = PositionKind::sinusoidal_concat;
  /// Hugging Face's (PyTorch's default); Marian's layer norms use 1e-6.
  double layerNormEpsilon = 1e-5;

  /// Reads and checks `path`; errors name the file and the key.
  static llvm::Expected<ModelConfig> load(llvm::StringRef path);
};

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_MODELCONFIG_H
