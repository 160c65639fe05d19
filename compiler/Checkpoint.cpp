//===- Checkpoint.cpp - The tensors of a checkpoint directory ---*- C++ -*-===//

#include "compiler/Checkpoint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <sys/mman.h>

using namespace mlir;
using namespace mlir::tfm;

static llvm::Error checkpointError(const llvm::Twine &path,
                                   const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (path + ": " + message).str());
}

/// A file of tensors, read by its format.
template <typename FileT, typename Variant>
static llvm::Expected<Variant> openAs(llvm::StringRef path) {
  llvm::Expected<FileT> file = FileT::open(path);
  if (!file)
    return file.takeError();
  return std::move(*file);
}

static const char *const kHuggingFaceFiles[] = {
    "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
    "pytorch_model.bin.index.json"};

llvm::Expected<std::optional<std::string>>
Checkpoint::findMarianModel(llvm::StringRef modelDir) {
  std::vector<std::string> npz;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(modelDir, ec), end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (llvm::is_contained(kHuggingFaceFiles, name))
      return std::nullopt;
    if (name.ends_with(".npz"))
      npz.push_back(it->path());
  }
  if (npz.size() > 1)
    return checkpointError(modelDir, "more than one Marian .npz model; keep "
                                     "the one to compile");
  if (npz.empty())
    return std::nullopt;
  return npz[0];
}

llvm::Expected<Checkpoint> Checkpoint::open(llvm::StringRef modelDir) {
  struct Layout {
    const char *name;
    bool torch, index;
  };
  auto pathOf = [&](llvm::StringRef name) {
    llvm::SmallString<256> path(modelDir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };
  auto openFile = [](llvm::StringRef path, bool torch) {
    return torch ? openAs<TorchCheckpointFile, File>(path)
                 : openAs<SafetensorsFile, File>(path);
  };
  std::optional<Layout> found;
  for (Layout layout : {Layout{"model.safetensors", false, false},
                        Layout{"model.safetensors.index.json", false, true},
                        Layout{"pytorch_model.bin", true, false},
                        Layout{"pytorch_model.bin.index.json", true, true}})
    if (!found && llvm::sys::fs::exists(pathOf(layout.name)))
      found = layout;
  Checkpoint c;
  if (!found) {
    llvm::Expected<std::optional<std::string>> npz = findMarianModel(modelDir);
    if (!npz)
      return npz.takeError();
    if (*npz) {
      llvm::Expected<File> file = openAs<MarianCheckpointFile, File>(**npz);
      if (!file)
        return file.takeError();
      c.description = **npz;
      c.files.push_back(std::move(*file));
      for (const TensorInfo &t :
           std::get<MarianCheckpointFile>(c.files[0]).tensors())
        c.fileOf[t.name] = 0;
      return std::move(c);
    }
    // None: model.safetensors is the one to ask for.
    found = Layout{"model.safetensors", false, false};
  }

  c.description = pathOf(found->name);
  auto tensorsOf = [](const File &file) {
    return std::visit([](const auto &f) { return f.tensors(); }, file);
  };
  if (!found->index) {
    llvm::Expected<File> file = openFile(c.description, found->torch);
    if (!file)
      return file.takeError();
    c.files.push_back(std::move(*file));
    for (const TensorInfo &t : tensorsOf(c.files[0]))
      c.fileOf[t.name] = 0;
    return std::move(c);
  }

  llvm::StringRef indexPath = c.description;
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
      llvm::Expected<File> file = openFile(pathOf(*shard), found->torch);
      if (!file)
        return file.takeError();
      c.files.push_back(std::move(*file));
    }
    c.fileOf[name] = it->second;
    if (!c.lookup(name))
      return checkpointError(indexPath,
                             llvm::formatv("tensor '{0}' is not in its shard "
                                           "{1}",
                                           name.str(), *shard));
  }
  if (c.files.empty())
    return checkpointError(indexPath, "the weight_map names no tensors");
  return std::move(c);
}

const ModelConfig *Checkpoint::marianConfig() const {
  if (files.size() != 1)
    return nullptr;
  const auto *marian = std::get_if<MarianCheckpointFile>(&files[0]);
  return marian ? &marian->config() : nullptr;
}

std::vector<std::string> Checkpoint::tensorNames() const {
  std::vector<std::string> names;
  for (const auto &entry : fileOf)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

const TensorInfo *Checkpoint::lookup(llvm::StringRef name) const {
  auto it = fileOf.find(name);
  if (it == fileOf.end())
    return nullptr;
  return std::visit([&](const auto &f) { return f.lookup(name); },
                    files[it->second]);
}

llvm::ArrayRef<char> Checkpoint::bytes(const TensorInfo &tensor) const {
  return std::visit([&](const auto &f) { return f.bytes(tensor); },
                    files[fileOf.lookup(tensor.name)]);
}

/// Whether a file's bytes are a read-only mapping of it.
static bool isMapped(const SafetensorsFile &file) { return file.isMapped(); }
static bool isMapped(const TorchCheckpointFile &file) {
  return file.isMapped();
}
static bool isMapped(const MarianCheckpointFile &) {
  return false; // converted into memory
}

void Checkpoint::release(const TensorInfo &tensor, uint64_t begin,
                         uint64_t end) const {
  const File &file = files[fileOf.lookup(tensor.name)];
  if (!std::visit([](const auto &f) { return isMapped(f); }, file))
    return;
  llvm::ArrayRef<char> all = bytes(tensor);
  end = std::min<uint64_t>(end, all.size());
  if (begin >= end)
    return;
  // The mapping is private and read-only (llvm::MemoryBuffer's): its pages
  // are never dirty, and MADV_DONTNEED drops them without losing anything.
  uint64_t page = llvm::sys::Process::getPageSizeEstimate();
  uintptr_t from = llvm::alignDown(uintptr_t(all.data() + begin), page);
  uintptr_t to = llvm::alignTo(uintptr_t(all.data() + end), page);
  ::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED);
}
