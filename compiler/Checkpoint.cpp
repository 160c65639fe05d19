//===- Checkpoint.cpp - The tensors of a checkpoint directory -----*- C++ -*-===//

#include "compiler/Checkpoint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

static llvm::Error checkpointError(const llvm::Twine &path,
                                   const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (path + ": " + message).str());
}

llvm::Expected<Checkpoint> Checkpoint::open(llvm::StringRef modelDir) {
  Checkpoint c;
  llvm::SmallString<256> single(modelDir), indexPath(modelDir);
  llvm::sys::path::append(single, "model.safetensors");
  llvm::sys::path::append(indexPath, "model.safetensors.index.json");
  // One file: as before, its absence is the error to report.
  if (llvm::sys::fs::exists(single) || !llvm::sys::fs::exists(indexPath)) {
    llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(single);
    if (!file)
      return file.takeError();
    c.description = single.str().str();
    c.files.push_back(std::make_unique<SafetensorsFile>(std::move(*file)));
    for (const TensorInfo &t : c.files[0]->tensors())
      c.fileOf[t.name] = 0;
    return std::move(c);
  }

  c.description = indexPath.str().str();
  auto buffer = llvm::MemoryBuffer::getFile(indexPath, /*IsText=*/true);
  if (!buffer)
    return checkpointError(indexPath,
                           "cannot open: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return checkpointError(indexPath,
                           "invalid JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *top = json->getAsObject();
  const llvm::json::Object *weightMap =
      top ? top->getObject("weight_map") : nullptr;
  if (!weightMap)
    return checkpointError(indexPath, "expected an object with a "
                                      "\"weight_map\" of tensor names to "
                                      "shard files");
  llvm::StringMap<size_t> shardIndex;
  for (const auto &[name, value] : *weightMap) {
    std::optional<llvm::StringRef> shard = value.getAsString();
    // A shard is a file of this directory, not a path elsewhere.
    if (!shard || shard->empty() ||
        llvm::sys::path::filename(*shard) != *shard || *shard == "." ||
        *shard == "..")
      return checkpointError(
          indexPath, llvm::formatv("tensor '{0}' maps to {1}, not a shard "
                                   "file name of this directory",
                                   name.str(), value));
    auto [it, inserted] = shardIndex.try_emplace(*shard, c.files.size());
    if (inserted) {
      llvm::SmallString<256> shardPath(modelDir);
      llvm::sys::path::append(shardPath, *shard);
      llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(shardPath);
      if (!file)
        return file.takeError();
      c.files.push_back(std::make_unique<SafetensorsFile>(std::move(*file)));
    }
    if (!c.files[it->second]->lookup(name))
      return checkpointError(indexPath,
                             llvm::formatv("tensor '{0}' is not in its shard "
                                           "{1}",
                                           name.str(), *shard));
    c.fileOf[name] = it->second;
  }
  if (c.files.empty())
    return checkpointError(indexPath, "the weight_map names no tensors");
  return std::move(c);
}

const TensorInfo *Checkpoint::lookup(llvm::StringRef name) const {
  auto it = fileOf.find(name);
  return it == fileOf.end() ? nullptr : files[it->second]->lookup(name);
}

llvm::ArrayRef<char> Checkpoint::bytes(const TensorInfo &tensor) const {
  return files[fileOf.lookup(tensor.name)]->bytes(tensor);
}
