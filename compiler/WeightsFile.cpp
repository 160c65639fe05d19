//===- WeightsFile.cpp - The weights file a translator maps -----*- C++ -*-===//
//
// The file is written layout entry by layout entry, each a chunk of rows at
// a time: the chunk's checkpoint elements are decoded to f32 (and checked),
// the checkpoint pages they came from are released, the chunk is packed
// into the region's buffer, and every whole checksum block of the region
// is checksummed and written at its offset. The region table and the
// header go last. What the writer holds is a chunk, whatever the sizes of
// the checkpoint and of the file (docs/Design/Checkpoints.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/WeightsFile.h"
#include "passes/Passes.h"

#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Panels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/xxhash.h"

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::tfm;

uint64_t mlir::tfm::layoutFingerprint(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (Attribute layout = module->getAttr(kWeightsLayoutAttr))
    layout.print(os);
  if (Attribute model = module->getAttr("tfm.model"))
    model.print(os);
  // Non-zero and positive, so it survives an i64 round trip unchanged.
  return (llvm::xxh3_64bits(text) >> 1) | 1;
}

uint64_t mlir::tfm::precisionCode(Precision precision) {
  switch (precision) {
  case Precision::Fp32:
    return tfm_runtime::kPrecisionFp32;
  case Precision::Bf16:
    return tfm_runtime::kPrecisionBf16;
  case Precision::Int8:
    return tfm_runtime::kPrecisionInt8;
  case Precision::Int4:
    return tfm_runtime::kPrecisionInt4;
  }
  llvm_unreachable("a Precision has a code");
}

tfm_runtime::WeightsHeader mlir::tfm::weightsHeader(uint64_t fingerprint,
                                                    Precision precision,
                                                    ArrayRef<uint8_t> table,
                                                    uint64_t dataSize) {
  tfm_runtime::WeightsHeader header{};
  std::memcpy(header.magic, tfm_runtime::kWeightsMagic, 8);
  header.abiVersion = tfm_runtime::kAbiVersion;
  header.fingerprint = fingerprint;
  header.precision = precisionCode(precision);
  header.dataSize = dataSize;
  header.tableSize = table.size();
  header.tableChecksum = tfm_runtime::checksum(table.data(), table.size());
  header.headerChecksum = tfm_runtime::checksum(
      &header, offsetof(tfm_runtime::WeightsHeader, headerChecksum));
  return header;
}

/// IEEE half -> float.
static float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static llvm::Error errorAt(const Twine &file, const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (file + ": " + message).str());
}

//===----------------------------------------------------------------------===//
// The layout
//===----------------------------------------------------------------------===//

namespace {
/// How a layout entry's elements are stored: f32 as they are, or a linear's
/// panels (tfm/abi/Panels.h) of f32, bf16, int8 or int4.
enum class Packing { None, F32Panels, Bf16Panels, Int8Panels, Int4Panels };

/// An entry of the module's tfm.weights_layout.
struct LayoutEntry {
  StringRef name;
  ArrayRef<int64_t> shape;
  uint64_t offset; // into the data
  ArrayAttr parts; // the checkpoint tensors stacked into it, or null
  Packing packing;
  int64_t panelWidth; // 0 without panels
  /// Stored as bf16, or rounded to bf16 at load (oneDNN's bf16 products).
  bool roundsToBf16;
};

/// A layout entry's region of the data, for the region table.
struct WeightsRegion {
  std::string name;
  uint64_t offset, size;
};
} // namespace

static LayoutEntry readEntry(Attribute attr) {
  auto dict = cast<DictionaryAttr>(attr);
  auto type = dyn_cast_or_null<TypeAttr>(dict.get("element_type"));
  bool bf16 = type && type.getValue().isBF16();
  bool int8 = type && type.getValue().isInteger(8);
  bool int4 = type && type.getValue().isInteger(4);
  auto panel = dyn_cast_or_null<IntegerAttr>(dict.get("panel_width"));
  LayoutEntry entry;
  entry.name = cast<StringAttr>(dict.get("name")).getValue();
  entry.shape = cast<DenseI64ArrayAttr>(dict.get("shape")).asArrayRef();
  entry.offset = cast<IntegerAttr>(dict.get("offset")).getInt();
  entry.parts = dyn_cast_or_null<ArrayAttr>(dict.get("parts"));
  entry.packing = !panel ? Packing::None
                  : int8 ? Packing::Int8Panels
                  : int4 ? Packing::Int4Panels
                  : bf16 ? Packing::Bf16Panels
                         : Packing::F32Panels;
  entry.panelWidth = panel ? panel.getInt() : 0;
  entry.roundsToBf16 = bf16 || dict.get("bf16_products");
  return entry;
}

/// The bytes an entry's region takes.
static uint64_t regionBytes(const LayoutEntry &entry) {
  ArrayRef<int64_t> shape = entry.shape;
  int64_t width = entry.panelWidth;
  switch (entry.packing) {
  case Packing::None:
    return ShapedType::getNumElements(shape) * 4;
  case Packing::F32Panels:
    return tfm_runtime::panelsSize(shape[0], shape[1], width) * 4;
  case Packing::Bf16Panels:
    return tfm_runtime::panelsSize(shape[0], shape[1], width, /*pairK=*/true) *
           2;
  case Packing::Int8Panels:
    return tfm_runtime::int8PanelsBytes(shape[0], shape[1], width);
  case Packing::Int4Panels:
    return tfm_runtime::int4PanelsBytes(shape[0], shape[1], width);
  }
  llvm_unreachable("unknown packing");
}

static std::vector<WeightsRegion> computeRegions(ArrayAttr layout) {
  std::vector<WeightsRegion> regions;
  for (Attribute attr : layout) {
    LayoutEntry entry = readEntry(attr);
    std::string name = entry.name.str();
    name += entry.packing == Packing::Int8Panels   ? " (in int8 panels)"
            : entry.packing == Packing::Int4Panels ? " (in int4 panels)"
            : entry.packing == Packing::Bf16Panels ? " (in bf16 panels)"
            : entry.packing == Packing::F32Panels  ? " (in panels)"
                                                   : "";
    regions.push_back({name, entry.offset, regionBytes(entry)});
  }
  return regions;
}

/// The region table (tfm/abi/ModelInfo.h) of `regions` with their checksums.
static std::vector<uint8_t> regionTable(ArrayRef<WeightsRegion> regions,
                                        ArrayRef<uint64_t> checksums) {
  std::vector<uint8_t> table;
  auto put = [&](const void *bytes, size_t size) {
    auto *from = static_cast<const uint8_t *>(bytes);
    table.insert(table.end(), from, from + size);
  };
  for (auto [region, sum] : llvm::zip_equal(regions, checksums)) {
    uint64_t words[4] = {region.offset, region.size, sum, region.name.size()};
    put(words, sizeof words);
    put(region.name.data(), region.name.size());
    table.resize(llvm::alignTo(table.size(), 8));
  }
  return table;
}

static uint64_t tableBytes(ArrayRef<WeightsRegion> regions) {
  uint64_t bytes = 0;
  for (const WeightsRegion &region : regions)
    bytes += 32 + llvm::alignTo(region.name.size(), 8);
  return bytes;
}

//===----------------------------------------------------------------------===//
// The output file
//===----------------------------------------------------------------------===//

namespace {
/// The weights file being written, at its full size from the start (a
/// full disk fails before any work), by ranges with pwrite: nothing of it
/// is mapped or held. Removed unless kept.
class WeightsOutput {
public:
  explicit WeightsOutput(StringRef path) : path(path.str()) {}
  WeightsOutput(const WeightsOutput &) = delete;
  WeightsOutput &operator=(const WeightsOutput &) = delete;
  ~WeightsOutput();

  llvm::Error create(uint64_t size);
  llvm::Error write(uint64_t offset, const void *data, uint64_t size);
  /// Closes the file and keeps it.
  llvm::Error keep();

private:
  llvm::Error failure(int error) const {
    return errorAt(
        path, "cannot write: " +
                  std::error_code(error, std::generic_category()).message());
  }
  std::string path;
  int fd = -1;
  bool removable = false; // a regular file this object made
};
} // namespace

WeightsOutput::~WeightsOutput() {
  if (fd >= 0)
    ::close(fd);
  if (removable)
    ::unlink(path.c_str());
}

llvm::Error WeightsOutput::create(uint64_t size) {
  fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  struct stat info;
  if (fd < 0 || ::fstat(fd, &info) != 0)
    return failure(errno);
  // A device (a test's /dev/full) is written as it is.
  removable = S_ISREG(info.st_mode);
  if (!removable)
    return llvm::Error::success();
  // The blocks are allocated now where the file system can, so that a
  // full disk is reported at once; else the file is sized (sparse).
  int result;
  do
    result = ::fallocate(fd, 0, 0, size);
  while (result != 0 && errno == EINTR);
  if (result == 0)
    return llvm::Error::success();
  if (errno != EOPNOTSUPP && errno != ENOSYS)
    return failure(errno);
  if (::ftruncate(fd, size) != 0)
    return failure(errno);
  return llvm::Error::success();
}

llvm::Error WeightsOutput::write(uint64_t offset, const void *data,
                                 uint64_t size) {
  auto *bytes = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t done = ::pwrite(fd, bytes, size, offset);
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      return failure(done < 0 ? errno : EIO);
    bytes += done;
    offset += done;
    size -= done;
  }
  return llvm::Error::success();
}

llvm::Error WeightsOutput::keep() {
  int result = ::close(fd);
  fd = -1;
  if (result != 0)
    return failure(errno);
  removable = false;
  return llvm::Error::success();
}

namespace {
/// One region's bytes, appended in order: each whole checksum block is
/// checksummed and written as soon as it is complete, the rest waits in
/// the buffer, so that the checksum is regionChecksum's.
class RegionWriter {
public:
  RegionWriter(WeightsOutput &file, uint64_t offset,
               std::vector<uint8_t> &buffer)
      : file(file), offset(offset), buffer(buffer) {}

  /// Room for `bytes` more after those waiting.
  uint8_t *reserve(size_t bytes) {
    if (buffer.size() < pending + bytes)
      buffer.resize(pending + bytes);
    return buffer.data() + pending;
  }
  /// Appends the first `bytes` of the room reserve() gave.
  llvm::Error append(size_t bytes) {
    pending += bytes;
    return flush(llvm::alignDown(pending, tfm_runtime::kChecksumBlockSize));
  }
  /// Writes what waits; the region's checksum.
  llvm::Expected<uint64_t> finish() {
    if (llvm::Error err = flush(pending))
      return std::move(err);
    return tfm_runtime::checksum(blocks.data(), blocks.size() * 8);
  }

private:
  llvm::Error flush(size_t bytes);

  WeightsOutput &file;
  uint64_t offset, written = 0;
  std::vector<uint8_t> &buffer;
  size_t pending = 0;
  std::vector<uint64_t> blocks; // checksums of the blocks written
};
} // namespace

llvm::Error RegionWriter::flush(size_t bytes) {
  for (size_t at = 0; at < bytes; at += tfm_runtime::kChecksumBlockSize)
    blocks.push_back(tfm_runtime::checksum(
        buffer.data() + at,
        std::min<size_t>(bytes - at, tfm_runtime::kChecksumBlockSize)));
  if (llvm::Error err = file.write(offset + written, buffer.data(), bytes))
    return err;
  written += bytes;
  std::memmove(buffer.data(), buffer.data() + bytes, pending - bytes);
  pending -= bytes;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// The entries
//===----------------------------------------------------------------------===//

namespace {
/// A checkpoint tensor that fills an entry from its element `start`.
struct Source {
  StringRef name;
  const TensorInfo *tensor;
  const char *bytes;
  int64_t start;
};

/// Writes entries into the file, converting a chunk at a time with buffers
/// it reuses.
class EntryWriter {
public:
  EntryWriter(WeightsOutput &file, const Checkpoint &checkpoint, StringRef path,
              uint64_t chunkBytes)
      : file(file), checkpoint(checkpoint), path(path), chunkBytes(chunkBytes) {
  }

  /// Writes the entry's region; its checksum.
  llvm::Expected<uint64_t> write(const LayoutEntry &entry);

private:
  llvm::Expected<std::vector<Source>> findSources(const LayoutEntry &entry);
  llvm::Error convert(const LayoutEntry &entry, ArrayRef<Source> sources,
                      int64_t begin, int64_t end, float *out);
  llvm::Error writePlain(const LayoutEntry &entry, ArrayRef<Source> sources,
                         RegionWriter &region);
  llvm::Error writePanels(const LayoutEntry &entry, ArrayRef<Source> sources,
                          RegionWriter &region);
  llvm::Error packRows(const LayoutEntry &entry, int64_t rows,
                       RegionWriter &region);

  WeightsOutput &file;
  const Checkpoint &checkpoint;
  StringRef path;
  uint64_t chunkBytes;
  std::vector<float> rowsF32;        // a chunk of a panelled entry's rows
  std::vector<uint8_t> regionBuffer; // a region's bytes not yet written
  // The arrays after a panelled entry's panels (int8's scales and sums,
  // int4's corrections), kept for its end.
  std::vector<uint8_t> tails[2];
};
} // namespace

/// The checkpoint tensors an entry holds: its parts one after another along
/// the first axis (tfm-fuse-sibling-linears), or the one named.
llvm::Expected<std::vector<Source>>
EntryWriter::findSources(const LayoutEntry &entry) {
  SmallVector<StringRef> names;
  if (entry.parts)
    for (Attribute part : entry.parts)
      names.push_back(cast<StringAttr>(part).getValue());
  else
    names.push_back(entry.name);
  std::vector<Source> sources;
  int64_t elements = 0;
  for (StringRef part : names) {
    const TensorInfo *tensor = checkpoint.lookup(part);
    if (!tensor)
      return errorAt(path,
                     "tensor '" + part + "' is not in " + checkpoint.path());
    if (names.size() > 1 && (tensor->shape.empty() ||
                             ArrayRef<int64_t>(tensor->shape).drop_front() !=
                                 entry.shape.drop_front()))
      return errorAt(path, "tensor '" + part + "' cannot be stacked into '" +
                               entry.name +
                               "': its shape after the first axis is not "
                               "that of the others");
    if (tensor->dtype != DType::F32 && tensor->dtype != DType::F16 &&
        tensor->dtype != DType::BF16)
      return errorAt(path, "tensor '" + part + "' has dtype " +
                               dtypeName(tensor->dtype) +
                               "; expected F32, F16 or BF16");
    sources.push_back(
        {part, tensor, checkpoint.bytes(*tensor).data(), elements});
    elements += tensor->numElements();
  }
  int64_t expected = ShapedType::getNumElements(entry.shape);
  if (elements != expected)
    return errorAt(path, "tensor '" + entry.name + "' has " + Twine(elements) +
                             " elements; the compiled layout expects " +
                             Twine(expected));
  return sources;
}

/// Elements [from, from + count) of a source's tensor as f32.
static void decode(const Source &source, int64_t from, int64_t count,
                   float *out) {
  const char *bytes = source.bytes;
  switch (source.tensor->dtype) {
  case DType::F32:
    std::memcpy(out, bytes + 4 * from, 4 * count);
    return;
  case DType::F16:
    for (int64_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * (from + i), 2);
      out[i] = halfToFloat(h);
    }
    return;
  case DType::BF16:
    for (int64_t i = 0; i < count; ++i) {
      uint16_t b;
      std::memcpy(&b, bytes + 2 * (from + i), 2);
      out[i] = tfm_runtime::fromBFloat16(b);
    }
    return;
  default:
    llvm_unreachable("findSources takes F32, F16 and BF16 alone");
  }
}

/// A NaN or infinity would run through every step and come out as garbage
/// tokens (or none): refused here, where the tensor has a name; so too a
/// value that is finite in f32 but past bf16's largest, where the tensor
/// is stored as bf16 or oneDNN rounds it to bf16 at load. `values` are
/// the source's elements from `from` on.
static llvm::Error checkValues(const Source &source, StringRef checkpoint,
                               bool roundsToBf16, int64_t from,
                               ArrayRef<float> values) {
  int64_t n = source.tensor->numElements();
  for (auto [i, value] : llvm::enumerate(values)) {
    auto bad = [&, i = i](const Twine &what, const Twine &why) {
      return errorAt(checkpoint, "tensor '" + source.name + "' holds " + what +
                                     " at element " + Twine(from + int64_t(i)) +
                                     why);
    };
    if (!std::isfinite(value))
      return bad(std::isnan(value) ? "NaN" : "an infinity",
                 " of " + Twine(n) + "; the model's weights must be finite");
    if (roundsToBf16 &&
        std::isinf(tfm_runtime::fromBFloat16(tfm_runtime::toBFloat16(value))))
      return bad(llvm::formatv("{0:e}", value),
                 ", which rounds to an infinity in bf16; compile it with "
                 "--precision fp32");
  }
  return llvm::Error::success();
}

/// Elements [begin, end) of the entry as f32 into `out`, checked; the
/// checkpoint pages they came from are released.
llvm::Error EntryWriter::convert(const LayoutEntry &entry,
                                 ArrayRef<Source> sources, int64_t begin,
                                 int64_t end, float *out) {
  for (const Source &source : sources) {
    int64_t from = std::max(begin, source.start);
    int64_t to = std::min(end, source.start + source.tensor->numElements());
    if (from >= to)
      continue;
    float *values = out + (from - begin);
    decode(source, from - source.start, to - from, values);
    uint64_t size = dtypeSize(source.tensor->dtype);
    checkpoint.release(*source.tensor, (from - source.start) * size,
                       (to - source.start) * size);
    if (llvm::Error err = checkValues(source, checkpoint.path(),
                                      entry.roundsToBf16, from - source.start,
                                      ArrayRef<float>(values, to - from)))
      return err;
  }
  return llvm::Error::success();
}

/// An entry stored as f32, a chunk of elements at a time.
llvm::Error EntryWriter::writePlain(const LayoutEntry &entry,
                                    ArrayRef<Source> sources,
                                    RegionWriter &region) {
  int64_t total = ShapedType::getNumElements(entry.shape);
  int64_t chunk = std::max<int64_t>(1, chunkBytes / 4);
  for (int64_t at = 0; at < total; at += chunk) {
    int64_t count = std::min(chunk, total - at);
    auto *out = reinterpret_cast<float *>(region.reserve(4 * count));
    if (llvm::Error err = convert(entry, sources, at, at + count, out))
      return err;
    if (llvm::Error err = region.append(4 * count))
      return err;
  }
  return llvm::Error::success();
}

/// A linear's panels, a chunk of whole panels at a time: the panels of
/// rows [r, r + n) of the matrix are those of the [n, k] matrix of those
/// rows, and so are the arrays after all panels (int8's scales and sums,
/// int4's corrections).
llvm::Error EntryWriter::writePanels(const LayoutEntry &entry,
                                     ArrayRef<Source> sources,
                                     RegionWriter &region) {
  int64_t rows = entry.shape[0], cols = entry.shape[1];
  int64_t width = entry.panelWidth;
  int64_t panelBytes = std::max<int64_t>(1, 4 * cols * width); // as f32
  int64_t chunk = width * std::max<int64_t>(1, chunkBytes / panelBytes);
  for (std::vector<uint8_t> &tail : tails)
    tail.clear();
  for (int64_t row = 0; row < rows; row += chunk) {
    int64_t count = std::min(chunk, rows - row);
    rowsF32.resize(count * cols);
    if (llvm::Error err = convert(entry, sources, row * cols,
                                  (row + count) * cols, rowsF32.data()))
      return err;
    if (llvm::Error err = packRows(entry, count, region))
      return err;
  }
  for (const std::vector<uint8_t> &tail : tails) {
    if (tail.empty())
      continue;
    std::memcpy(region.reserve(tail.size()), tail.data(), tail.size());
    if (llvm::Error err = region.append(tail.size()))
      return err;
  }
  return llvm::Error::success();
}

/// The panels of the `rows` rows in rowsF32 (the arrays after them kept
/// for the end).
llvm::Error EntryWriter::packRows(const LayoutEntry &entry, int64_t rows,
                                  RegionWriter &region) {
  int64_t cols = entry.shape[1], width = entry.panelWidth;
  auto at = [&](int64_t row, int64_t col) { return rowsF32[row * cols + col]; };
  if (entry.packing == Packing::F32Panels) {
    uint64_t size = tfm_runtime::panelsSize(rows, cols, width) * 4;
    tfm_runtime::packPanels(rows, cols, width, at,
                            reinterpret_cast<float *>(region.reserve(size)));
    return region.append(size);
  }
  if (entry.packing == Packing::Bf16Panels) {
    uint64_t size =
        tfm_runtime::panelsSize(rows, cols, width, /*pairK=*/true) * 2;
    tfm_runtime::packBf16Panels(
        rows, cols, width, at,
        reinterpret_cast<uint16_t *>(region.reserve(size)));
    return region.append(size);
  }
  // Integers: the panels now, the arrays after them (one 32-bit value per
  // feature each) at the entry's end.
  bool int4 = entry.packing == Packing::Int4Panels;
  uint64_t size = int4 ? tfm_runtime::int4PanelsBytes(rows, cols, width)
                       : tfm_runtime::int8PanelsBytes(rows, cols, width);
  uint64_t features = llvm::alignTo(rows, width);
  int64_t tailCount = int4 ? 1 : 2;
  uint64_t panels = size - 4 * features * tailCount;
  uint8_t *out = region.reserve(size);
  if (int4)
    tfm_runtime::packInt4Panels(rows, cols, width, at, out);
  else
    tfm_runtime::packInt8Panels(rows, cols, width, at, out);
  for (int64_t t = 0; t < tailCount; ++t) {
    const uint8_t *tail = out + panels + 4 * features * t;
    tails[t].insert(tails[t].end(), tail, tail + 4 * features);
  }
  return region.append(panels);
}

llvm::Expected<uint64_t> EntryWriter::write(const LayoutEntry &entry) {
  llvm::Expected<std::vector<Source>> sources = findSources(entry);
  if (!sources)
    return sources.takeError();
  RegionWriter region(file, tfm_runtime::kWeightsHeaderSize + entry.offset,
                      regionBuffer);
  llvm::Error err = entry.packing == Packing::None
                        ? writePlain(entry, *sources, region)
                        : writePanels(entry, *sources, region);
  if (err)
    return std::move(err);
  return region.finish();
}

//===----------------------------------------------------------------------===//
// The file
//===----------------------------------------------------------------------===//

/// The region table after the data, then the header that checks it.
static llvm::Error writeTableAndHeader(WeightsOutput &file, ModuleOp module,
                                       Precision precision,
                                       ArrayRef<WeightsRegion> regions,
                                       ArrayRef<uint64_t> checksums,
                                       uint64_t dataSize) {
  std::vector<uint8_t> table = regionTable(regions, checksums);
  tfm_runtime::WeightsHeader header =
      weightsHeader(layoutFingerprint(module), precision, table, dataSize);
  if (llvm::Error err = file.write(tfm_runtime::kWeightsHeaderSize + dataSize,
                                   table.data(), table.size()))
    return err;
  return file.write(0, &header, sizeof header);
}

llvm::Error mlir::tfm::writeWeightsFile(ModuleOp module,
                                        const Checkpoint &checkpoint,
                                        llvm::StringRef path,
                                        const WeightsFileOptions &options) {
  auto layout = module->getAttrOfType<ArrayAttr>(kWeightsLayoutAttr);
  auto size = module->getAttrOfType<IntegerAttr>(kWeightsSizeAttr);
  if (!layout || !size)
    return errorAt(path,
                   "the module has no weights layout (run tfm-layout-weights)");
  llvm::Expected<Precision> precision = modulePrecision(module);
  if (!precision)
    return errorAt(path, llvm::toString(precision.takeError()));
  uint64_t dataSize = size.getInt();
  std::vector<WeightsRegion> regions = computeRegions(layout);
  WeightsOutput file(path);
  if (llvm::Error err = file.create(tfm_runtime::kWeightsHeaderSize + dataSize +
                                    tableBytes(regions)))
    return err;
  EntryWriter writer(file, checkpoint, path, options.chunkBytes);
  std::vector<uint64_t> checksums;
  for (Attribute entry : layout) {
    llvm::Expected<uint64_t> checksum = writer.write(readEntry(entry));
    if (!checksum)
      return checksum.takeError();
    checksums.push_back(*checksum);
  }
  if (llvm::Error err = writeTableAndHeader(file, module, *precision, regions,
                                            checksums, dataSize))
    return err;
  return file.keep();
}
