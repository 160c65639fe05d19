//===- WeightsFileTest.cpp - The weights file, streamed ---------*- C++ -*-===//
//
// writeWeightsFile converts and writes a chunk at a time. Whatever the
// chunk (one panel, a checksum block, the whole entry), the file must be
// the one the entries packed whole (Panels.h) make, with regionChecksum's
// checksums: the test builds that file itself and compares bytes. The
// entries read one checkpoint tensor several times (as the tied embedding
// is read as a table and as the output's panels), each read releasing its
// pages (or, for a file read into memory, leaving them), and stack F16 /
// BF16 parts. Failures name the file and leave none.
//
//===----------------------------------------------------------------------===//

#include "compiler/WeightsFile.h"
#include "passes/Passes.h"
#include "test/unit/TestFiles.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Panels.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <map>

using namespace mlir;
using namespace mlir::tfm;

namespace {
/// A checkpoint tensor: its values, exact in its dtype.
struct Tensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// A layout entry of the test module.
struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  int64_t panelWidth = 0;  // 0: stored f32 as it is
  std::string elementType; // "f32", "bf16" or "i8"
  std::vector<std::string> parts;
};
} // namespace

/// Values exact in f16 and bf16 (multiples of 1/64 of at most 127 / 64).
static Tensor makeTensor(std::string name, std::string dtype,
                         std::vector<int64_t> shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> values(n);
  for (float &value : values) {
    seed = seed * 1664525u + 1013904223u;
    value = float(int((seed >> 8) % 255) - 127) / 64.0f;
  }
  return {std::move(name), std::move(dtype), std::move(shape),
          std::move(values)};
}

/// A value's bytes in `dtype` (exact: see makeTensor).
static void appendValue(std::string &out, float value,
                        const std::string &dtype) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (dtype == "F32") {
    out.append(reinterpret_cast<const char *>(&bits), 4);
    return;
  }
  uint16_t half = uint16_t(bits >> 16); // BF16
  if (dtype == "F16") {
    int exponent = int((bits >> 23) & 0xff) - 127 + 15;
    half = value == 0 ? 0
                      : uint16_t(((bits >> 16) & 0x8000) | (exponent << 10) |
                                 ((bits >> 13) & 0x3ff));
  }
  out.append(reinterpret_cast<const char *>(&half), 2);
}

static std::string safetensors(const std::vector<Tensor> &tensors) {
  std::string header = "{", data;
  for (const Tensor &t : tensors) {
    size_t begin = data.size();
    for (float value : t.values)
      appendValue(data, value, t.dtype);
    std::string shape;
    for (int64_t d : t.shape)
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" +
              shape + "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(data.size()) + "]},";
  }
  header.back() = '}';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

static uint64_t entryBytes(const Entry &e) {
  int64_t elements = 1;
  for (int64_t d : e.shape)
    elements *= d;
  if (!e.panelWidth)
    return elements * 4;
  if (e.elementType == "i8")
    return tfm_runtime::int8PanelsBytes(e.shape[0], e.shape[1], e.panelWidth);
  bool bf16 = e.elementType == "bf16";
  return tfm_runtime::panelsSize(e.shape[0], e.shape[1], e.panelWidth, bf16) *
         (bf16 ? 2 : 4);
}

/// A module with the layout of `entries`, each at a 64-byte boundary.
static OwningOpRef<ModuleOp> makeModule(MLIRContext &context,
                                        const std::vector<Entry> &entries) {
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  SmallVector<Attribute> layout;
  uint64_t offset = 0;
  for (const Entry &e : entries) {
    NamedAttrList attrs;
    attrs.set("name", b.getStringAttr(e.name));
    attrs.set("offset", b.getI64IntegerAttr(offset));
    attrs.set("shape", b.getDenseI64ArrayAttr(e.shape));
    if (e.panelWidth) {
      attrs.set("panel_width", b.getI64IntegerAttr(e.panelWidth));
      Type type = e.elementType == "i8"     ? Type(b.getI8Type())
                  : e.elementType == "bf16" ? Type(b.getBF16Type())
                                            : Type(b.getF32Type());
      if (!type.isF32())
        attrs.set("element_type", TypeAttr::get(type));
    }
    if (!e.parts.empty()) {
      SmallVector<Attribute> parts;
      for (const std::string &part : e.parts)
        parts.push_back(b.getStringAttr(part));
      attrs.set("parts", b.getArrayAttr(parts));
    }
    layout.push_back(attrs.getDictionary(&context));
    offset = llvm::alignTo(offset + entryBytes(e), 64);
  }
  (*module)->setAttr(kWeightsLayoutAttr, b.getArrayAttr(layout));
  (*module)->setAttr(kWeightsSizeAttr, b.getI64IntegerAttr(offset));
  setModulePrecision(*module, Precision::Int8);
  return module;
}

/// The file as whole-entry packing makes it (what tfmc wrote before it
/// streamed): every entry packed at once, regionChecksum over it.
static std::string expectedFile(ModuleOp module,
                                const std::vector<Entry> &entries,
                                const std::map<std::string, Tensor> &tensors) {
  uint64_t dataSize =
      module->getAttrOfType<IntegerAttr>(kWeightsSizeAttr).getInt();
  std::vector<uint8_t> data(dataSize);
  std::string table;
  auto put = [&](uint64_t word) {
    table.append(reinterpret_cast<const char *>(&word), 8);
  };
  uint64_t offset = 0;
  for (const Entry &e : entries) {
    std::vector<float> values;
    for (const std::string &part :
         e.parts.empty() ? std::vector<std::string>{e.name} : e.parts) {
      const std::vector<float> &v = tensors.at(part).values;
      values.insert(values.end(), v.begin(), v.end());
    }
    uint8_t *dst = data.data() + offset;
    int64_t cols = e.shape.size() > 1 ? e.shape[1] : 0;
    auto at = [&](int64_t row, int64_t col) {
      return values[row * cols + col];
    };
    if (!e.panelWidth)
      std::memcpy(dst, values.data(), values.size() * 4);
    else if (e.elementType == "i8")
      tfm_runtime::packInt8Panels(e.shape[0], cols, e.panelWidth, at, dst);
    else if (e.elementType == "bf16")
      tfm_runtime::packBf16Panels(e.shape[0], cols, e.panelWidth, at,
                                  reinterpret_cast<uint16_t *>(dst));
    else
      tfm_runtime::packPanels(e.shape[0], cols, e.panelWidth, at,
                              reinterpret_cast<float *>(dst));
    std::string name = e.name + (!e.panelWidth             ? ""
                                 : e.elementType == "i8"   ? " (in int8 panels)"
                                 : e.elementType == "bf16" ? " (in bf16 panels)"
                                                           : " (in panels)");
    put(offset);
    put(entryBytes(e));
    put(tfm_runtime::regionChecksum(dst, entryBytes(e)));
    put(name.size());
    table += name;
    table.resize(llvm::alignTo(table.size(), 8), '\0');
    offset = llvm::alignTo(offset + entryBytes(e), 64);
  }
  // The header's fields are checked against the format in
  // HeaderHoldsTheFormatsFields.
  tfm_runtime::WeightsHeader header = weightsHeader(
      layoutFingerprint(module), Precision::Int8,
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(table.data()),
                              table.size()),
      dataSize);
  std::string file(tfm_runtime::kWeightsHeaderSize, '\0');
  std::memcpy(file.data(), &header, sizeof header);
  return file + std::string(data.begin(), data.end()) + table;
}

/// The little-endian u64 at byte `offset` of `bytes`.
static uint64_t wordAt(const unsigned char *bytes, size_t offset) {
  uint64_t word = 0;
  for (int i = 7; i >= 0; --i)
    word = word << 8 | bytes[offset + i];
  return word;
}

// The header as tfm/abi/ModelInfo.h defines it, byte by byte: the magic
// "TFMWGT01", then u64s: the ABI version, the fingerprint, the data's and
// the table's sizes, the table's checksum, the precision's code (int8: 2),
// and the checksum of the 56 bytes before it.
TEST(WeightsFile, HeaderHoldsTheFormatsFields) {
  const uint8_t table[] = {1, 2,  3,  4,  5,  6,  7,  8,
                           9, 10, 11, 12, 13, 14, 15, 16};
  tfm_runtime::WeightsHeader header =
      weightsHeader(0x1234567890abcdefull, Precision::Int8, table, 4160);
  ASSERT_EQ(sizeof header, 64u);
  unsigned char bytes[64];
  std::memcpy(bytes, &header, 64);
  EXPECT_EQ(std::string(reinterpret_cast<char *>(bytes), 8), "TFMWGT01");
  EXPECT_EQ(wordAt(bytes, 8), tfm_runtime::kAbiVersion);
  EXPECT_EQ(wordAt(bytes, 16), 0x1234567890abcdefull);
  EXPECT_EQ(wordAt(bytes, 24), 4160u);
  EXPECT_EQ(wordAt(bytes, 32), 16u);
  EXPECT_EQ(wordAt(bytes, 40), tfm_runtime::checksum(table, sizeof table));
  EXPECT_EQ(wordAt(bytes, 48), 2u);
  EXPECT_EQ(wordAt(bytes, 56), tfm_runtime::checksum(bytes, 56));
  EXPECT_EQ(weightsHeader(1, Precision::Fp32, table, 0).precision, 0u);
  EXPECT_EQ(weightsHeader(1, Precision::Bf16, table, 0).precision, 1u);
}

namespace {
/// A checkpoint directory of `tensors` and the module of `entries`.
struct Fixture {
  Fixture(std::vector<Tensor> list, std::vector<Entry> entries)
      : entries(std::move(entries)),
        file("model.safetensors", safetensors(list)) {
    for (Tensor &t : list)
      tensors[t.name] = std::move(t);
    dir = llvm::sys::path::parent_path(file.path).str();
    module = makeModule(context, this->entries);
  }
  std::string outputPath(llvm::StringRef name) const {
    return (dir + "/" + name).str();
  }
  MLIRContext context;
  std::vector<Entry> entries;
  std::map<std::string, Tensor> tensors;
  tfm_test::TempFile file;
  std::string dir;
  OwningOpRef<ModuleOp> module;
};
} // namespace

/// Where two files first differ, for a failure's message.
static std::string firstDifference(const std::string &a, const std::string &b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i])
    ++i;
  return "the files differ from byte " + std::to_string(i) + " on";
}

static std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : "(cannot read " + path + ")";
}

/// Tensor "a" (1000 x 333: no chunk of rows is a whole number of checksum
/// blocks) as a table and as f32, bf16 and int8 panels; F16 and BF16
/// tensors, stacked or not.
static Fixture *makeFixture() {
  std::vector<Tensor> tensors = {
      makeTensor("a", "F32", {1000, 333}, 1),
      makeTensor("q", "BF16", {40, 70}, 2),
      makeTensor("k", "BF16", {24, 70}, 3),
      makeTensor("e", "F16", {300001}, 4),
  };
  std::vector<Entry> entries = {
      {"a", {1000, 333}, 0, "f32", {}},
      {"e", {300001}, 0, "f32", {}},
      {"a", {1000, 333}, 16, "i8", {}},
      {"q+k", {64, 70}, 16, "i8", {"q", "k"}},
      {"a", {1000, 333}, 32, "bf16", {}},
      {"q+k", {64, 70}, 32, "bf16", {"q", "k"}},
      {"a", {1000, 333}, 16, "f32", {}},
  };
  return new Fixture(std::move(tensors), std::move(entries));
}

TEST(WeightsFile, StreamedFileIsTheWholeEntriesFile) {
  std::unique_ptr<Fixture> f(makeFixture());
  auto checkpoint = Checkpoint::open(f->dir);
  ASSERT_TRUE(bool(checkpoint)) << llvm::toString(checkpoint.takeError());
  std::string expected = expectedFile(*f->module, f->entries, f->tensors);
  // One panel at a time, about a checksum block, whole entries.
  for (uint64_t chunk :
       {uint64_t(4096), uint64_t(1) << 20, uint64_t(1) << 30}) {
    std::string path = f->outputPath("model.tfmw");
    llvm::Error err = writeWeightsFile(*f->module, *checkpoint, path,
                                       WeightsFileOptions{chunk});
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    std::string written = readFile(path);
    EXPECT_TRUE(written == expected)
        << "chunk " << chunk << ": " << firstDifference(written, expected);
  }
}

// A file under 16 KiB is read into memory, not mapped: release() must
// leave its bytes alone (dropping heap pages would zero them).
TEST(WeightsFile, SmallFileInMemoryIsReadTwice) {
  std::unique_ptr<Fixture> f(new Fixture(
      {makeTensor("s", "F32", {40, 24}, 5)},
      {{"s", {40, 24}, 0, "f32", {}}, {"s", {40, 24}, 16, "i8", {}}}));
  auto checkpoint = Checkpoint::open(f->dir);
  ASSERT_TRUE(bool(checkpoint)) << llvm::toString(checkpoint.takeError());
  std::string path = f->outputPath("model.tfmw");
  llvm::Error err =
      writeWeightsFile(*f->module, *checkpoint, path, WeightsFileOptions{1});
  ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
  std::string expected = expectedFile(*f->module, f->entries, f->tensors);
  std::string written = readFile(path);
  EXPECT_TRUE(written == expected) << firstDifference(written, expected);
}

TEST(WeightsFile, FailedWriteNamesTheFile) {
  std::unique_ptr<Fixture> f(makeFixture());
  auto checkpoint = Checkpoint::open(f->dir);
  ASSERT_TRUE(bool(checkpoint)) << llvm::toString(checkpoint.takeError());
  // A full disk: the first write fails.
  llvm::Error full = writeWeightsFile(*f->module, *checkpoint, "/dev/full");
  EXPECT_EQ(llvm::toString(std::move(full)),
            "/dev/full: cannot write: No space left on device");
  std::string missing = f->outputPath("no/such/dir/model.tfmw");
  llvm::Error noDir = writeWeightsFile(*f->module, *checkpoint, missing);
  EXPECT_EQ(llvm::toString(std::move(noDir)),
            missing + ": cannot write: No such file or directory");
}

TEST(WeightsFile, BadValueLeavesNoFile) {
  std::vector<Tensor> tensors = {makeTensor("a", "F32", {200, 40}, 1)};
  tensors[0].values[150 * 40 + 7] = NAN;
  std::unique_ptr<Fixture> f(
      new Fixture(tensors, {{"a", {200, 40}, 16, "i8", {}}}));
  auto checkpoint = Checkpoint::open(f->dir);
  ASSERT_TRUE(bool(checkpoint)) << llvm::toString(checkpoint.takeError());
  std::string path = f->outputPath("model.tfmw");
  llvm::Error err =
      writeWeightsFile(*f->module, *checkpoint, path, WeightsFileOptions{1});
  EXPECT_EQ(llvm::toString(std::move(err)),
            f->file.path + ": tensor 'a' holds NaN at element 6007 of 8000; "
                           "the model's weights must be finite");
  EXPECT_FALSE(llvm::sys::fs::exists(path));
}
