//===- TestFiles.h - Temporary files for unit tests -------------*- C++ -*-===//

#ifndef TFM_TEST_UNIT_TESTFILES_H
#define TFM_TEST_UNIT_TESTFILES_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace tfm_test {

/// A file under a fresh temporary directory, removed with it.
class TempFile {
public:
  explicit TempFile(llvm::StringRef name, llvm::StringRef contents) {
    llvm::sys::fs::createUniqueDirectory("tfm-unit", dir);
    path = (dir + "/" + name).str();
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << contents;
  }
  ~TempFile() { llvm::sys::fs::remove_directories(dir); }
  std::string path;

private:
  llvm::SmallString<128> dir;
};

} // namespace tfm_test

#endif // TFM_TEST_UNIT_TESTFILES_H
