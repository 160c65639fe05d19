//===- Support.h - Small helpers the compiler's files share -----*- C++ -*-===//
//
// The error and path helpers that the tokenizer files, linking,
// embedding and the checkpoint readers each wrote for themselves.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_SUPPORT_H
#define TFM_COMPILER_SUPPORT_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Path.h"

#include <string>

namespace mlir::tfm {

/// An error whose message is `message` (which names the file or field).
inline llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// An error about the file at `path`: "<path>: <message>".
inline llvm::Error fail(llvm::StringRef path, const llvm::Twine &message) {
  return fail(path + ": " + message);
}

/// The path of `name` in directory `dir`.
inline std::string pathIn(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

} // namespace mlir::tfm

#endif // TFM_COMPILER_SUPPORT_H
