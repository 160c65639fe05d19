//===- Checkpoint.h - The tensors of a checkpoint directory -------*- C++ -*-===//
//
// A Hugging Face checkpoint keeps its tensors in model.safetensors, or, when
// large, in shards that model.safetensors.index.json lists (its
// "weight_map": tensor name -> shard file). Either way the compiler sees
// one set of named tensors, each in the mapped file that holds it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_CHECKPOINT_H
#define TFM_COMPILER_CHECKPOINT_H

#include "compiler/Safetensors.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
namespace tfm {

class Checkpoint {
public:
  /// Opens `modelDir`'s model.safetensors if it has one, else the shards of
  /// its model.safetensors.index.json; every file's header is validated and
  /// every tensor of the index must be in the shard it names.
  static llvm::Expected<Checkpoint> open(llvm::StringRef modelDir);

  /// The file to name in messages: model.safetensors, or the index.
  llvm::StringRef path() const { return description; }
  /// The tensor called `name`, or null.
  const TensorInfo *lookup(llvm::StringRef name) const;
  /// The raw bytes of a tensor that lookup() returned, in its own dtype.
  llvm::ArrayRef<char> bytes(const TensorInfo &tensor) const;

private:
  std::string description;
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  /// Tensor name -> index into `files`.
  llvm::StringMap<size_t> fileOf;
};

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_CHECKPOINT_H
