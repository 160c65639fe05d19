//===- Safetensors.h - Read the safetensors checkpoint format ---*- C++ -*-===//
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON describing each tensor (dtype, shape, byte range in the data section),
// then the data section. The file is memory-mapped (a small one is read into
// memory, as llvm::MemoryBuffer decides); nothing is copied.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_SAFETENSORS_H
#define TFM_COMPILER_SAFETENSORS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
namespace tfm {

/// Element types of the safetensors format.
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

/// The format's name for a dtype ("F32"), and its size in bytes.
llvm::StringRef dtypeName(DType dtype);
size_t dtypeSize(DType dtype);

struct TensorInfo {
  std::string name;
  DType dtype;
  llvm::SmallVector<int64_t> shape;
  /// Byte range in the data section, [begin, end).
  uint64_t begin = 0, end = 0;

  int64_t numElements() const;
};

class SafetensorsFile {
public:
  /// Maps `path` and validates its header: JSON, known dtypes, byte ranges
  /// that match the shapes, lie inside the file and do not overlap.
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);

  llvm::StringRef path() const { return filePath; }
  /// The tensor called `name`, or null.
  const TensorInfo *lookup(llvm::StringRef name) const;
  /// Tensors in file order (by data offset).
  llvm::ArrayRef<TensorInfo> tensors() const { return tensorList; }
  /// The raw bytes of a tensor, in its own dtype.
  llvm::ArrayRef<char> bytes(const TensorInfo &tensor) const;
  /// Whether the bytes are a read-only mapping of the file (pages the
  /// kernel can drop and read again), not a copy in memory.
  bool isMapped() const;
  /// Values of `__metadata__`, if any.
  const llvm::StringMap<std::string> &metadata() const { return meta; }

private:
  std::string filePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  uint64_t dataStart = 0;
  std::vector<TensorInfo> tensorList;
  llvm::StringMap<size_t> index;
  llvm::StringMap<std::string> meta;
};

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_SAFETENSORS_H
