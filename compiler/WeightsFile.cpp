//===- WeightsFile.cpp - The weights file a translator maps -----*- C++ -*-===//

#include "compiler/WeightsFile.h"

#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Panels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileOutputBuffer.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>

using namespace mlir;
using namespace mlir::tfm;

uint64_t mlir::tfm::layoutFingerprint(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (Attribute layout = module->getAttr("tfm.weights_layout"))
    layout.print(os);
  if (Attribute model = module->getAttr("tfm.model"))
    model.print(os);
  // Non-zero and positive, so it survives an i64 round trip unchanged.
  return (llvm::xxh3_64bits(text) >> 1) | 1;
}

uint64_t mlir::tfm::precisionCode(ModuleOp module) {
  auto precision = module->getAttrOfType<StringAttr>("tfm.precision");
  StringRef name = precision ? precision.getValue() : "fp32";
  return name == "bf16"   ? tfm_runtime::kPrecisionBf16
         : name == "int8" ? tfm_runtime::kPrecisionInt8
                          : tfm_runtime::kPrecisionFp32;
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

/// Whether a layout entry's panels hold bf16 or int8 (tfm-layout-weights
/// with precision=bf16 or int8).
static bool isBFloat16(DictionaryAttr entry) {
  auto type = dyn_cast_or_null<TypeAttr>(entry.get("element_type"));
  return type && type.getValue().isBF16();
}
static bool isInt8(DictionaryAttr entry) {
  auto type = dyn_cast_or_null<TypeAttr>(entry.get("element_type"));
  return type && type.getValue().isInteger(8);
}

llvm::Error mlir::tfm::writeWeightsFile(ModuleOp module,
                                        const Checkpoint &checkpoint,
                                        llvm::StringRef path) {
  auto fail = [&](const Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   (path + ": " + message).str());
  };
  auto layout = module->getAttrOfType<ArrayAttr>("tfm.weights_layout");
  auto size = module->getAttrOfType<IntegerAttr>("tfm.weights_size");
  if (!layout || !size)
    return fail("the module has no weights layout (run tfm-layout-weights)");
  uint64_t dataSize = size.getInt();
  // Each layout entry's region of the data, for the table.
  struct Region {
    std::string name;
    uint64_t offset, size;
  };
  std::vector<Region> regions;
  uint64_t tableSize = 0;
  for (Attribute entry : layout) {
    auto dict = cast<DictionaryAttr>(entry);
    std::string name = cast<StringAttr>(dict.get("name")).getValue().str();
    auto shape = cast<DenseI64ArrayAttr>(dict.get("shape")).asArrayRef();
    int64_t bytes = ShapedType::getNumElements(shape) * 4;
    if (auto panel = dyn_cast_or_null<IntegerAttr>(dict.get("panel_width"))) {
      int64_t width = panel.getInt();
      bytes = isInt8(dict)
                  ? int8PanelsBytes(shape[0], shape[1], width)
                  : panelsSize(shape[0], shape[1], width, isBFloat16(dict)) *
                        (isBFloat16(dict) ? 2 : 4);
      name += isInt8(dict)       ? " (in int8 panels)"
              : isBFloat16(dict) ? " (in bf16 panels)"
                                 : " (in panels)";
    }
    uint64_t offset = cast<IntegerAttr>(dict.get("offset")).getInt();
    regions.push_back({name, offset, uint64_t(bytes)});
    tableSize += 32 + llvm::alignTo(name.size(), 8);
  }
  uint64_t fileSize = tfm_runtime::kWeightsHeaderSize + dataSize + tableSize;
  llvm::Expected<std::unique_ptr<llvm::FileOutputBuffer>> file =
      llvm::FileOutputBuffer::create(path, fileSize);
  if (!file)
    return fail("cannot write: " + llvm::toString(file.takeError()));
  uint8_t *out = (*file)->getBufferStart();
  std::memset(out, 0, fileSize);
  uint8_t *data = out + tfm_runtime::kWeightsHeaderSize;

  for (Attribute entry : layout) {
    auto dict = cast<DictionaryAttr>(entry);
    StringRef name = cast<StringAttr>(dict.get("name")).getValue();
    int64_t offset = cast<IntegerAttr>(dict.get("offset")).getInt();
    auto shape = cast<DenseI64ArrayAttr>(dict.get("shape")).asArrayRef();
    // The checkpoint tensors the entry holds: its parts one after another
    // along the first axis (tfm-fuse-sibling-linears), or the one named.
    SmallVector<StringRef> names;
    if (auto parts = dyn_cast_or_null<ArrayAttr>(dict.get("parts")))
      for (Attribute part : parts)
        names.push_back(cast<StringAttr>(part).getValue());
    else
      names.push_back(name);
    struct Source {
      StringRef name;
      const TensorInfo *tensor;
      int64_t start;                         // of its elements in the entry
      std::function<float(int64_t)> element; // its element i, as f32
    };
    std::vector<Source> sources;
    int64_t elements = 0;
    for (StringRef part : names) {
      const TensorInfo *tensor = checkpoint.lookup(part);
      if (!tensor)
        return fail("tensor '" + part + "' is not in " + checkpoint.path());
      if (names.size() > 1 &&
          (tensor->shape.empty() ||
           ArrayRef<int64_t>(tensor->shape).drop_front() != shape.drop_front()))
        return fail("tensor '" + part + "' cannot be stacked into '" + name +
                    "': its shape after the first axis is not that of the "
                    "others");
      const char *bytes = checkpoint.bytes(*tensor).data();
      std::function<float(int64_t)> element;
      switch (tensor->dtype) {
      case DType::F32:
        element = [bytes](int64_t i) {
          float f;
          std::memcpy(&f, bytes + 4 * i, 4);
          return f;
        };
        break;
      case DType::F16:
        element = [bytes](int64_t i) {
          uint16_t h;
          std::memcpy(&h, bytes + 2 * i, 2);
          return halfToFloat(h);
        };
        break;
      case DType::BF16:
        element = [bytes](int64_t i) {
          uint16_t b;
          std::memcpy(&b, bytes + 2 * i, 2);
          return fromBFloat16(b);
        };
        break;
      default:
        return fail("tensor '" + part + "' has dtype " +
                    dtypeName(tensor->dtype) + "; expected F32, F16 or BF16");
      }
      sources.push_back({part, tensor, elements, std::move(element)});
      elements += tensor->numElements();
    }
    if (elements != ShapedType::getNumElements(shape))
      return fail("tensor '" + name + "' has " + llvm::Twine(elements) +
                  " elements; the compiled layout expects " +
                  llvm::Twine(ShapedType::getNumElements(shape)));
    // A NaN or infinity would run through every step and come out as
    // garbage tokens (or none): refuse it here, where the tensor has a name;
    // so too a value that is finite in f32 but past bf16's largest, where
    // the tensor is stored as bf16 or oneDNN rounds it to bf16 at load.
    bool bf16 = isBFloat16(dict),
         roundsToBf16 = bf16 || dict.get("bf16_products");
    for (const Source &source : sources)
      for (int64_t i = 0, n = source.tensor->numElements(); i < n; ++i) {
        float value = source.element(i);
        if (!std::isfinite(value))
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              (checkpoint.path() + ": tensor '" + source.name + "' holds " +
               (std::isnan(value) ? "NaN" : "an infinity") + " at element " +
               llvm::Twine(i) + " of " + llvm::Twine(n) +
               "; the model's weights must be finite")
                  .str());
        if (roundsToBf16 && std::isinf(fromBFloat16(toBFloat16(value))))
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              (checkpoint.path() + ": tensor '" + source.name + "' holds " +
               llvm::formatv("{0:e}", value) + " at element " + llvm::Twine(i) +
               ", which rounds to an infinity in bf16; compile it with "
               "--precision fp32")
                  .str());
      }
    // Element i of the entry: of the last source that starts at or before i.
    auto element = [&](int64_t i) {
      auto source = std::prev(llvm::upper_bound(
          sources, i, [](int64_t i, const Source &s) { return i < s.start; }));
      return source->element(i - source->start);
    };
    auto *dst = reinterpret_cast<float *>(data + offset);
    if (auto panel = dyn_cast_or_null<IntegerAttr>(dict.get("panel_width"))) {
      int64_t rows = shape[0], cols = shape[1];
      auto at = [&](int64_t row, int64_t col) {
        return element(row * cols + col);
      };
      if (isInt8(dict))
        packInt8Panels(rows, cols, panel.getInt(), at, data + offset);
      else if (bf16)
        packBf16Panels(rows, cols, panel.getInt(), at,
                       reinterpret_cast<uint16_t *>(data + offset));
      else
        packPanels(rows, cols, panel.getInt(), at, dst);
    } else {
      for (const Source &source : sources) {
        float *to = dst + source.start;
        int64_t n = source.tensor->numElements();
        if (source.tensor->dtype == DType::F32)
          std::memcpy(to, checkpoint.bytes(*source.tensor).data(), n * 4);
        else
          for (int64_t i = 0; i < n; ++i)
            to[i] = source.element(i);
      }
    }
  }
  // The region table after the data, then the header that checks it.
  uint8_t *table = data + dataSize, *at = table;
  auto put = [&](uint64_t word) {
    std::memcpy(at, &word, 8);
    at += 8;
  };
  for (const Region &region : regions) {
    put(region.offset);
    put(region.size);
    put(tfm_runtime::regionChecksum(data + region.offset, region.size));
    put(region.name.size());
    std::memcpy(at, region.name.data(), region.name.size());
    at += llvm::alignTo(region.name.size(), 8);
  }
  tfm_runtime::WeightsHeader header{};
  std::memcpy(header.magic, tfm_runtime::kWeightsMagic, 8);
  header.abiVersion = tfm_runtime::kAbiVersion;
  header.fingerprint = layoutFingerprint(module);
  header.precision = precisionCode(module);
  header.dataSize = dataSize;
  header.tableSize = tableSize;
  header.tableChecksum = tfm_runtime::checksum(table, tableSize);
  header.headerChecksum = tfm_runtime::checksum(
      &header, offsetof(tfm_runtime::WeightsHeader, headerChecksum));
  std::memcpy(out, &header, sizeof header);
  if (llvm::Error err = (*file)->commit())
    return fail("cannot write: " + llvm::toString(std::move(err)));
  return llvm::Error::success();
}
