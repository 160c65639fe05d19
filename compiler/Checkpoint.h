//===- Checkpoint.h - The tensors of a checkpoint directory -------*- C++ -*-===//
//
// A Hugging Face checkpoint keeps its tensors in model.safetensors, or in
// pytorch_model.bin (torch.save's zip of a pickled state_dict, as most
// OPUS-MT models on the Hub ship), or, when large, in shards that
// model.safetensors.index.json or pytorch_model.bin.index.json lists (a
// "weight_map": tensor name -> shard file). Whatever the files, the compiler
// sees one set of named tensors, each in the mapped file that holds it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_CHECKPOINT_H
#define TFM_COMPILER_CHECKPOINT_H

#include "compiler/Safetensors.h"
#include "compiler/TorchCheckpoint.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <variant>
#include <vector>

namespace mlir {
namespace tfm {

class Checkpoint {
public:
  /// Opens the first of model.safetensors, model.safetensors.index.json,
  /// pytorch_model.bin, pytorch_model.bin.index.json in `modelDir` (Hugging
  /// Face's order); every file is validated and every tensor of an index
  /// must be in the shard it names.
  static llvm::Expected<Checkpoint> open(llvm::StringRef modelDir);

  /// The file to name in messages: the single file, or the index.
  llvm::StringRef path() const { return description; }
  /// The tensor called `name`, or null.
  const TensorInfo *lookup(llvm::StringRef name) const;
  /// The raw bytes of a tensor that lookup() returned, in its own dtype.
  llvm::ArrayRef<char> bytes(const TensorInfo &tensor) const;

private:
  using File = std::variant<SafetensorsFile, TorchCheckpointFile>;
  std::string description;
  std::vector<File> files;
  /// Tensor name -> index into `files`.
  llvm::StringMap<size_t> fileOf;
};

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_CHECKPOINT_H
