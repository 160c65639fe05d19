//===- TorchCheckpoint.h - Read torch.save's state_dict files ---*- C++ -*-===//
//
// pytorch_model.bin, as torch.save writes a state_dict: a zip archive whose
// entries are stored uncompressed, holding PREFIX/data.pkl, a pickle of the
// OrderedDict name -> tensor, and PREFIX/data/KEY, the raw bytes of each
// storage that tensors view. A pickle is a program; this reader runs none.
// It interprets exactly the opcodes and globals a saved state_dict uses
// (the OrderedDict, tensor rebuild records, storage types) and refuses
// anything else, naming it. The file is memory-mapped; nothing is copied.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_TORCHCHECKPOINT_H
#define TFM_COMPILER_TORCHCHECKPOINT_H

#include "compiler/Safetensors.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
namespace tfm {

class TorchCheckpointFile {
public:
  /// Maps `path`, reads its zip directory and unpickles its state_dict;
  /// every tensor must be contiguous and inside its storage.
  static llvm::Expected<TorchCheckpointFile> open(llvm::StringRef path);

  llvm::StringRef path() const { return filePath; }
  /// The tensor called `name`, or null.
  const TensorInfo *lookup(llvm::StringRef name) const;
  /// Tensors in the state_dict's order; their byte ranges are offsets in
  /// the file.
  llvm::ArrayRef<TensorInfo> tensors() const { return tensorList; }
  /// The raw bytes of a tensor, in its own dtype.
  llvm::ArrayRef<char> bytes(const TensorInfo &tensor) const;
  /// Whether the bytes are a read-only mapping of the file, not a copy.
  bool isMapped() const;

private:
  std::string filePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  std::vector<TensorInfo> tensorList;
  llvm::StringMap<size_t> index;
};

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_TORCHCHECKPOINT_H
