//===- ModelConfig.h - A checkpoint's config.json ---------------*- C++ -*-===//
//
// The architecture of a Hugging Face MarianMT-style checkpoint: sizes, layer
// counts, activation, norm placement, embedding options and special tokens.
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

struct ModelConfig {
  int64_t dModel = 0;
  int64_t encoderLayers = 0, decoderLayers = 0;
  int64_t encoderHeads = 0, decoderHeads = 0;
  int64_t encoderFfnDim = 0, decoderFfnDim = 0;
  /// Source vocabulary; the target one differs only when embeddings are not
  /// shared (`decoder_vocab_size`).
  int64_t vocabSize = 0, targetVocabSize = 0;
  int64_t maxPositions = 0;
  int64_t eosTokenId = 0, padTokenId = 0, decoderStartTokenId = 0;
  /// Generation semantics, as Hugging Face's `generate` reads them: the
  /// token forced as the last one when a sentence reaches its length limit
  /// (-1: none), and token sequences never generated (`bad_words_ids`).
  int64_t forcedEosTokenId = -1;
  std::vector<std::vector<int64_t>> badWordsIds;
  Activation activation = Activation::relu;
  /// Pre-norm (LayerNorm before each sub-layer) instead of the paper's
  /// post-norm.
  bool normalizeBefore = false;
  /// Multiply token embeddings by sqrt(d_model).
  bool scaleEmbedding = false;
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
