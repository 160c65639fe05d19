//===- ModelFiles.cpp - The files that come with a model --------*- C++ -*-===//

#include "runtime/src/ModelFiles.h"

#include "runtime/src/Status.h"
#include "tfm/abi/EmbeddedFiles.h"
#include "tfm/abi/ModelInfo.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfm_runtime;

namespace {

/// A file descriptor that closes itself.
struct FileHandle {
  int fd;
  explicit FileHandle(int fd) : fd(fd) {}
  ~FileHandle() {
    if (fd >= 0)
      close(fd);
  }
};

bool readAt(int fd, void *buffer, uint64_t size, uint64_t offset) {
  char *out = static_cast<char *>(buffer);
  while (size > 0) {
    ssize_t n = pread(fd, out, size, off_t(offset));
    if (n <= 0) {
      if (n < 0 && errno == EINTR)
        continue;
      return false;
    }
    out += n;
    size -= uint64_t(n);
    offset += uint64_t(n);
  }
  return true;
}

tfm_status openFile(const std::string &path, FileHandle &file, uint64_t &size) {
  file.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (file.fd < 0 || fstat(file.fd, &st) != 0)
    return makeError("{}: cannot open: {}", path, std::strerror(errno));
  size = uint64_t(st.st_size);
  return nullptr;
}

} // namespace

tfm_status ModelFiles::open(const std::string &modelPath, ModelFiles &out) {
  out = ModelFiles();
  FileHandle file(-1);
  uint64_t size = 0;
  if (tfm_status s = openFile(modelPath, file, size))
    return s;
  EmbedTrailer embed;
  EmbeddedFilesTrailer trailer;
  out.path = modelPath.substr(0, modelPath.rfind('/') + 1);
  if (size < sizeof embed + sizeof trailer ||
      !readAt(file.fd, &embed, sizeof embed, size - sizeof embed) ||
      std::memcmp(embed.magic, kEmbedMagic, 8) != 0)
    return nullptr; // a weights file: the files are beside it
  out.embedded = true;
  out.path = modelPath;
  uint64_t trailerAt = size - sizeof embed - sizeof trailer;
  if (!readAt(file.fd, &trailer, sizeof trailer, trailerAt) ||
      std::memcmp(trailer.magic, kEmbeddedFilesMagic, 8) != 0)
    return nullptr; // embedded weights, no other files
  uint64_t weightsEnd = embed.offset + embed.size;
  if (trailer.count > kMaxEmbeddedFiles ||
      trailer.count * sizeof(EmbeddedFile) > trailerAt - weightsEnd)
    return makeError("{}: corrupt table of embedded files", modelPath);
  uint64_t tableAt = trailerAt - trailer.count * sizeof(EmbeddedFile);
  std::vector<EmbeddedFile> table(trailer.count);
  if (!readAt(file.fd, table.data(), trailer.count * sizeof(table[0]), tableAt))
    return makeError("{}: cannot read: {}", modelPath, std::strerror(errno));
  for (const EmbeddedFile &entry : table) {
    std::string name(entry.name, strnlen(entry.name, sizeof entry.name));
    if (entry.offset < weightsEnd || entry.offset > tableAt ||
        entry.size > tableAt - entry.offset)
      return makeError("{}: corrupt table of embedded files ({})", modelPath,
                       name);
    out.table.push_back({name, entry.offset, entry.size});
  }
  return nullptr;
}

bool ModelFiles::has(const std::string &name) const {
  if (!embedded)
    return access((path + name).c_str(), F_OK) == 0;
  for (const Entry &entry : table)
    if (entry.name == name)
      return true;
  return false;
}

std::string ModelFiles::describe(const std::string &name) const {
  return embedded ? fmt::format("{} (embedded {})", path, name) : path + name;
}

tfm_status ModelFiles::read(const std::string &name, NamedBytes &out) const {
  out.name = describe(name);
  FileHandle file(-1);
  uint64_t size = 0;
  if (tfm_status s = openFile(embedded ? path : path + name, file, size))
    return s;
  uint64_t offset = 0;
  if (embedded) {
    const Entry *entry = nullptr;
    for (const Entry &e : table)
      if (e.name == name && !entry)
        entry = &e;
    if (!entry)
      return makeError("{}: not embedded", out.name);
    offset = entry->offset;
    size = entry->size;
  }
  out.bytes.resize(size);
  if (!readAt(file.fd, out.bytes.data(), size, offset))
    return makeError("{}: cannot read: {}", out.name, std::strerror(errno));
  return nullptr;
}
