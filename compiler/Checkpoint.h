//===- Checkpoint.h - The tensors of a checkpoint directory -----*- C++ -*-===//
//
// A Hugging Face checkpoint keeps its tensors in model.safetensors, or in
// pytorch_model.bin (torch.save's zip of a pickled state_dict, as most
// OPUS-MT models on the Hub ship), or, when large, in shards that
// model.safetensors.index.json or pytorch_model.bin.index.json lists (a
// "weight_map": tensor name -> shard file). Whatever the files, the compiler
// sees one set of named tensors, each in the mapped file that holds it; a
// reader releases the pages of what it has read (release()), so that a
// checkpoint larger than memory streams through.
// A directory without those and with one .npz is a Marian model
// (MarianCheckpoint.h), whose config comes with it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_CHECKPOINT_H
#define TFM_COMPILER_CHECKPOINT_H

#include "compiler/MarianCheckpoint.h"
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
  /// must be in the shard it names. Else the directory's one .npz, a Marian
  /// model.
  static llvm::Expected<Checkpoint> open(llvm::StringRef modelDir);

  /// The path of `modelDir`'s one .npz when it holds no Hugging Face
  /// weights files, else nothing; an error if it holds several.
  static llvm::Expected<std::optional<std::string>>
  findMarianModel(llvm::StringRef modelDir);

  /// A Marian model's config (from its YAML), or null: then config.json
  /// describes the model.
  const ModelConfig *marianConfig() const;

  /// The file to name in messages: the single file, or the index.
  llvm::StringRef path() const { return description; }
  /// Every tensor's name, sorted.
  std::vector<std::string> tensorNames() const;
  /// The tensor called `name`, or null.
  const TensorInfo *lookup(llvm::StringRef name) const;
  /// The raw bytes of a tensor that lookup() returned, in its own dtype.
  llvm::ArrayRef<char> bytes(const TensorInfo &tensor) const;
  /// Gives back the memory that bytes [begin, end) of `tensor` hold once
  /// read, where the file is mapped: the pages stop counting toward the
  /// process's resident set (the kernel keeps them in its page cache, and
  /// a later read maps them again). Whole pages around the range go; a
  /// neighbour's bytes on them are read again if needed. Tensors held in
  /// memory (a small file read whole, Marian's converted tensors) stay.
  void release(const TensorInfo &tensor, uint64_t begin = 0,
               uint64_t end = UINT64_MAX) const;

private:
  using File =
      std::variant<SafetensorsFile, TorchCheckpointFile, MarianCheckpointFile>;
  std::string description;
  std::vector<File> files;
  /// Tensor name -> index into `files`.
  llvm::StringMap<size_t> fileOf;
};

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_CHECKPOINT_H
