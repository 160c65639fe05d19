//===- MarianCheckpoint.h - Marian's native .npz models ---------*- C++ -*-===//
//
// A model as Marian releases it (the OPUS-MT and Tatoeba-Challenge
// projects): one .npz (numpy's uncompressed zip of .npy arrays) whose entry
// `special:model.yml` is the model's YAML config (else a YAML file beside
// it: NAME.npz.yml, decoder.yml), with Marian's tensor names
// (`encoder_l1_self_Wq`, `Wemb`, `decoder_ff_logit_out_b`, ...) and its
// matrices stored [in, out]. It is read as Hugging Face's converter reads
// it: the same config, the tensors under the MarianMT names, matrices
// transposed to [out, in], and the padding token (also the decoder's start)
// added as a zero row after the vocabulary, since Marian starts decoding
// from a zero embedding. Unlike the converter, it keeps what Marian
// computes: its sinusoids' frequencies 10000^(-i/(d/2 - 1)) (Hugging
// Face's are 10000^(-i/(d/2))), layer norms with epsilon 1e-6, and pre-norm
// transformers with a norm on top of each stack (`transformer-preprocess:
// n`, `transformer-postprocess: da`, `transformer-postprocess-top: n`),
// whose norms `*_ln_scale_pre` and `{encoder,decoder}_top_ln_*` become
// MarianMT's `normalize_before` layer norms and `model.*.layer_norm`.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_MARIANCHECKPOINT_H
#define TFM_COMPILER_MARIANCHECKPOINT_H

#include "compiler/ModelConfig.h"
#include "compiler/Safetensors.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
namespace tfm {

/// The vocabulary of a Marian release (`*.vocab.yml`: piece -> id) as the
/// JSON object of vocab.json, with `<pad>` after the last id, as Hugging
/// Face's converter adds it; errors name the file.
llvm::Expected<std::string> marianVocabularyJson(llvm::StringRef path);

class MarianCheckpointFile {
public:
  /// Reads the .npz at `path` and its config; errors name the file, the
  /// config key or the tensor.
  static llvm::Expected<MarianCheckpointFile> open(llvm::StringRef path);

  llvm::StringRef path() const { return filePath; }
  /// The model's config, in Hugging Face's terms.
  const ModelConfig &config() const { return modelConfig; }
  const TensorInfo *lookup(llvm::StringRef name) const;
  llvm::ArrayRef<TensorInfo> tensors() const { return tensorList; }
  llvm::ArrayRef<char> bytes(const TensorInfo &tensor) const;

private:
  std::string filePath;
  ModelConfig modelConfig;
  /// The converted tensors, one after another (their begin/end index it).
  std::vector<char> data;
  std::vector<TensorInfo> tensorList;
  llvm::StringMap<size_t> index;
};

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_MARIANCHECKPOINT_H
