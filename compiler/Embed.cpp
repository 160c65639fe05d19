//===- Embed.cpp - The weights and files inside the translator --*- C++ -*-===//

#include "compiler/Embed.h"
#include "compiler/Support.h"

#include "tfm/abi/EmbeddedFiles.h"
#include "tfm/abi/ModelInfo.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <vector>

using namespace llvm;
using mlir::tfm::fail;

/// Appends the file at `path` to `out` a chunk at a time: a weights file
/// of gigabytes is never held (nor mapped and touched) whole. Returns its
/// size.
static Expected<uint64_t> appendFile(raw_ostream &out, StringRef path) {
  Expected<sys::fs::file_t> file = sys::fs::openNativeFileForRead(path);
  if (!file)
    return file.takeError();
  std::vector<char> chunk(8 << 20);
  uint64_t size = 0;
  while (true) {
    Expected<size_t> read = sys::fs::readNativeFile(*file, chunk);
    if (!read || *read == 0) {
      sys::fs::closeFile(*file);
      if (!read)
        return read.takeError();
      return size;
    }
    out.write(chunk.data(), *read);
    size += *read;
  }
}

/// Appends the weights to the translator, page-aligned, then the files,
/// then the trailer that points at the weights.
static Error appendWeightsAndFiles(StringRef translatorPath,
                                   StringRef weightsPath,
                                   ArrayRef<std::string> files) {
  uint64_t size = 0;
  if (std::error_code ec = sys::fs::file_size(translatorPath, size))
    return fail(translatorPath + ": " + ec.message());
  std::error_code ec;
  raw_fd_ostream out(translatorPath, ec, sys::fs::OF_Append);
  if (ec)
    return fail(translatorPath + ": " + ec.message());
  uint64_t offset = (size + 4095) / 4096 * 4096;
  out.write_zeros(offset - size);
  Expected<uint64_t> weightsSize = appendFile(out, weightsPath);
  if (!weightsSize)
    return fail(weightsPath + ": " + toString(weightsSize.takeError()));
  if (Error err =
          mlir::tfm::appendEmbeddedFiles(out, offset + *weightsSize, files))
    return err;
  tfm_runtime::EmbedTrailer trailer{offset, *weightsSize, {}};
  std::memcpy(trailer.magic, tfm_runtime::kEmbedMagic, 8);
  out.write(reinterpret_cast<const char *>(&trailer), sizeof trailer);
  out.close();
  if (out.has_error())
    return fail(translatorPath + ": " + out.error().message());
  return Error::success();
}

Error mlir::tfm::embedInTranslator(StringRef translatorPath,
                                   StringRef weightsPath,
                                   ArrayRef<std::string> files) {
  if (Error err = appendWeightsAndFiles(translatorPath, weightsPath, files))
    return err;
  if (std::error_code ec = sys::fs::remove(weightsPath))
    return fail(weightsPath + ": " + ec.message());
  StringRef outDir = sys::path::parent_path(translatorPath);
  for (const std::string &file : files)
    if (sys::fs::equivalent(sys::path::parent_path(file), outDir))
      sys::fs::remove(file);
  return Error::success();
}

Error mlir::tfm::appendEmbeddedFiles(raw_ostream &out, uint64_t position,
                                     ArrayRef<std::string> files) {
  if (files.empty())
    return Error::success();
  std::vector<tfm_runtime::EmbeddedFile> table;
  for (const std::string &file : files) {
    auto bytes = MemoryBuffer::getFile(file, /*IsText=*/false,
                                       /*RequiresNullTerminator=*/false);
    if (!bytes)
      return fail(file + ": " + bytes.getError().message());
    StringRef name = sys::path::filename(file);
    tfm_runtime::EmbeddedFile entry{};
    if (name.size() >= sizeof entry.name)
      return fail(file + ": file name too long to embed");
    std::memcpy(entry.name, name.data(), name.size());
    entry.offset = position;
    entry.size = (*bytes)->getBufferSize();
    out << (*bytes)->getBuffer();
    position += entry.size;
    table.push_back(entry);
  }
  out.write(reinterpret_cast<const char *>(table.data()),
            table.size() * sizeof(table[0]));
  tfm_runtime::EmbeddedFilesTrailer trailer{table.size(), {}};
  std::memcpy(trailer.magic, tfm_runtime::kEmbeddedFilesMagic, 8);
  out.write(reinterpret_cast<const char *>(&trailer), sizeof trailer);
  return Error::success();
}
