//===- Zip.h - The entries of an uncompressed zip archive -------*- C++ -*-===//
//
// torch.save and numpy's savez (Marian's .npz) write zip archives whose
// entries are stored, not compressed, so a mapped file is read in place:
// this finds each entry's bytes through the central directory (ZIP64 too).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_ZIP_H
#define TFM_COMPILER_ZIP_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace tfm {

/// Where an entry's bytes are in the archive.
struct ZipEntry {
  uint64_t offset = 0, size = 0;
};

/// The entries of the archive `data` (the file `path`, written by `writer`,
/// for messages) by name. A compressed entry is an error naming it.
llvm::Expected<llvm::StringMap<ZipEntry>>
readZipDirectory(llvm::StringRef path, llvm::StringRef data,
                 llvm::StringRef writer);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_ZIP_H
