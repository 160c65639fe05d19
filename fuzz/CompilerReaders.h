//===- CompilerReaders.h - What the readers' targets share ------*- C++ -*-===//
//
// The targets of the compiler's checkpoint and config readers start alike:
// the input written to a file in memory, opened by the reader, and a
// rejection's message required to name the file; those of checkpoints check
// the tensors an accepted one holds alike. Apart from FuzzUtil.h because it
// needs LLVM, which the targets of the tools' and the runtime's readers do
// not link.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FUZZ_COMPILERREADERS_H
#define TFM_FUZZ_COMPILERREADERS_H

#include "compiler/Safetensors.h"
#include "fuzz/FuzzUtil.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace tfm_fuzz {

/// What `open` (a reader: path -> llvm::Expected<T>) makes of the input, or
/// std::nullopt if it rejects it, whose message must satisfy
/// `namesFile(message, path)`; the message is printed unless quiet.
template <typename T, typename NamesFile>
std::optional<T> openInput(const uint8_t *data, size_t size,
                           llvm::Expected<T> (*open)(llvm::StringRef),
                           NamesFile namesFile) {
  static MemFile file;
  file.set(data, size);
  llvm::Expected<T> opened = open(file.path());
  if (opened)
    return std::move(*opened);
  std::string message = llvm::toString(opened.takeError());
  if (verbose())
    llvm::errs() << message << "\n";
  TFM_FUZZ_CHECK(namesFile(llvm::StringRef(message), file.path()));
  return std::nullopt;
}

/// openInput's `namesFile` for a message that starts with the path, then
/// `separator`.
inline auto startsWithPathThen(std::string separator) {
  return [separator](llvm::StringRef message, const std::string &path) {
    return message.starts_with(path + separator);
  };
}

/// Checks what each tensor of an accepted checkpoint promises: as many
/// bytes as its shape and dtype need, and found by its name. Reads its first
/// and last byte, so that ASan reports a range outside the data, and returns
/// their sum for the target to keep the reads.
template <typename Checkpoint>
uint64_t checkTensors(const Checkpoint &checkpoint) {
  uint64_t sum = 0;
  for (const mlir::tfm::TensorInfo &t : checkpoint.tensors()) {
    llvm::ArrayRef<char> bytes = checkpoint.bytes(t);
    TFM_FUZZ_CHECK(uint64_t(t.numElements()) * mlir::tfm::dtypeSize(t.dtype) ==
                   bytes.size());
    if (!bytes.empty())
      sum += uint8_t(bytes.front()) + uint8_t(bytes.back());
    TFM_FUZZ_CHECK(checkpoint.lookup(t.name) == &t);
  }
  return sum;
}

} // namespace tfm_fuzz

#endif // TFM_FUZZ_COMPILERREADERS_H
