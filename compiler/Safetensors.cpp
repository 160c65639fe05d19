//===- Safetensors.cpp - Read the safetensors checkpoint format -----------===//

#include "compiler/Safetensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tfm;
using llvm::formatv;

namespace {
struct DTypeEntry {
  const char *name;
  DType dtype;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {"F64", DType::F64, 8},   {"F32", DType::F32, 4}, {"F16", DType::F16, 2},
    {"BF16", DType::BF16, 2}, {"I64", DType::I64, 8}, {"I32", DType::I32, 4},
    {"I16", DType::I16, 2},   {"I8", DType::I8, 1},   {"U8", DType::U8, 1},
    {"BOOL", DType::Bool, 1},
};
} // namespace

llvm::StringRef mlir::tfm::dtypeName(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e.name;
  llvm_unreachable("unknown dtype");
}

size_t mlir::tfm::dtypeSize(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e.size;
  llvm_unreachable("unknown dtype");
}

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static std::string formatDims(llvm::ArrayRef<int64_t> shape) {
  std::string out = "[";
  llvm::ListSeparator sep;
  for (int64_t d : shape)
    out += (llvm::Twine(sep) + llvm::Twine(d)).str();
  return out + "]";
}

static llvm::Error fail(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (path + ": " + message).str());
}

/// Parses one header entry `name: {dtype, shape, data_offsets}`.
static llvm::Expected<TensorInfo> parseEntry(llvm::StringRef path,
                                             llvm::StringRef name,
                                             const llvm::json::Value &value) {
  auto bad = [&](const llvm::Twine &why) {
    return fail(path, "tensor '" + name + "': " + why);
  };
  const llvm::json::Object *obj = value.getAsObject();
  if (!obj)
    return bad("header entry is not a JSON object");
  TensorInfo info;
  info.name = name.str();

  std::optional<llvm::StringRef> dtype = obj->getString("dtype");
  if (!dtype)
    return bad("missing string 'dtype'");
  auto it = llvm::find_if(
      kDTypes, [&](const DTypeEntry &e) { return *dtype == e.name; });
  if (it == std::end(kDTypes))
    return bad("unsupported dtype '" + *dtype + "'");
  info.dtype = it->dtype;

  const llvm::json::Array *shape = obj->getArray("shape");
  if (!shape)
    return bad("missing array 'shape'");
  uint64_t numBytes = it->size;
  for (const llvm::json::Value &d : *shape) {
    std::optional<int64_t> dim = d.getAsInteger();
    if (!dim || *dim < 0)
      return bad("shape entries must be non-negative integers");
    info.shape.push_back(*dim);
    bool overflow = false;
    numBytes = llvm::SaturatingMultiply<uint64_t>(numBytes, *dim, &overflow);
    if (overflow)
      return bad("shape is too large");
  }

  const llvm::json::Array *offsets = obj->getArray("data_offsets");
  std::optional<int64_t> begin, end;
  if (offsets && offsets->size() == 2) {
    begin = (*offsets)[0].getAsInteger();
    end = (*offsets)[1].getAsInteger();
  }
  if (!begin || !end || *begin < 0 || *end < *begin)
    return bad("'data_offsets' must be [begin, end] with 0 <= begin <= end");
  info.begin = *begin;
  info.end = *end;
  if (info.end - info.begin != numBytes)
    return bad(formatv("data_offsets [{0}, {1}] hold {2} bytes, but shape {3} "
                       "of {4} needs {5}",
                       info.begin, info.end, info.end - info.begin,
                       formatDims(info.shape), *dtype, numBytes));
  return info;
}

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, "cannot open: " + buffer.getError().message());

  SafetensorsFile file;
  file.filePath = path.str();
  file.buffer = std::move(*buffer);
  llvm::StringRef contents = file.buffer->getBuffer();
  if (contents.size() < 8)
    return fail(path, formatv("file is {0} bytes, too short for the 8-byte "
                              "header length",
                              contents.size()));
  uint64_t headerSize = llvm::support::endian::read64le(contents.data());
  if (headerSize > contents.size() - 8)
    return fail(path, formatv("header length {0} exceeds the {1} bytes that "
                              "follow it; the file is truncated or not "
                              "safetensors",
                              headerSize, contents.size() - 8));
  file.dataStart = 8 + headerSize;
  uint64_t dataSize = contents.size() - file.dataStart;

  llvm::Expected<llvm::json::Value> header =
      llvm::json::parse(contents.substr(8, headerSize));
  if (!header)
    return fail(path, "header is not valid JSON: " +
                          llvm::toString(header.takeError()));
  const llvm::json::Object *root = header->getAsObject();
  if (!root)
    return fail(path, "header is not a JSON object");

  // JSON objects iterate in no particular order: go by name, so the same
  // file always gets the same message.
  std::vector<llvm::StringRef> names;
  for (const auto &entry : *root)
    names.push_back(entry.first);
  llvm::sort(names);
  for (llvm::StringRef name : names) {
    const llvm::json::Value &value = *root->get(name);
    if (name == "__metadata__") {
      if (const llvm::json::Object *m = value.getAsObject())
        for (const auto &[mk, mv] : *m)
          if (std::optional<llvm::StringRef> s = mv.getAsString())
            file.meta[mk.str()] = s->str();
      continue;
    }
    llvm::Expected<TensorInfo> info = parseEntry(path, name, value);
    if (!info)
      return info.takeError();
    file.tensorList.push_back(std::move(*info));
  }

  // In file order, every tensor must end inside the data section and begin
  // at or after the end of the one before (tensors never share bytes).
  llvm::sort(file.tensorList, [](const TensorInfo &a, const TensorInfo &b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  for (const TensorInfo &t : file.tensorList)
    if (t.end > dataSize)
      return fail(path, formatv("tensor '{0}': data_offsets [{1}, {2}] lie "
                                "outside the {3}-byte data section; the file "
                                "is truncated or its header is corrupt",
                                t.name, t.begin, t.end, dataSize));
  for (size_t i = 1; i < file.tensorList.size(); ++i) {
    const TensorInfo &prev = file.tensorList[i - 1], &cur = file.tensorList[i];
    if (cur.begin < prev.end && cur.begin != cur.end && prev.begin != prev.end)
      return fail(path, formatv("tensors '{0}' [{1}, {2}] and '{3}' [{4}, {5}] "
                                "overlap in the data section",
                                prev.name, prev.begin, prev.end, cur.name,
                                cur.begin, cur.end));
  }
  for (auto [i, t] : llvm::enumerate(file.tensorList))
    file.index[t.name] = i;
  return std::move(file);
}

const TensorInfo *SafetensorsFile::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensorList[it->second];
}

llvm::ArrayRef<char> SafetensorsFile::bytes(const TensorInfo &tensor) const {
  const char *data = buffer->getBufferStart() + dataStart;
  return llvm::ArrayRef<char>(data + tensor.begin, tensor.end - tensor.begin);
}

bool SafetensorsFile::isMapped() const {
  return buffer->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
}
