//===- FuzzUtil.h - Shared pieces of the fuzz targets -----------*- C++ -*-===//
//
// The readers under test take paths, so each input is written to a file in
// memory (memfd) and read back through /proc/self/fd; nothing touches disk.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FUZZ_FUZZUTIL_H
#define TFM_FUZZ_FUZZUTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace tfm_fuzz {

/// A file in memory whose contents are replaced by each input.
class MemFile {
public:
  MemFile() {
    fd = memfd_create("tfm-fuzz", 0);
    if (fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    filePath = "/proc/self/fd/" + std::to_string(fd);
  }
  void set(const void *data, size_t size) {
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) {
      std::perror("memfd write");
      std::abort();
    }
  }
  const std::string &path() const { return filePath; }

private:
  int fd;
  std::string filePath;
};

/// Whether messages (the readers' errors) should be kept quiet: CTest's
/// short runs set TFM_FUZZ_QUIET so their logs stay short.
inline bool verbose() {
  static bool quiet = std::getenv("TFM_FUZZ_QUIET") != nullptr;
  return !quiet;
}

/// A crash on purpose when a property the target checks does not hold, so
/// libFuzzer keeps the input.
#define TFM_FUZZ_CHECK(cond)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__,         \
                   __LINE__, #cond);                                           \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

} // namespace tfm_fuzz

#endif // TFM_FUZZ_FUZZUTIL_H
