//===- Zip.cpp - The entries of an uncompressed zip archive -----*- C++ -*-===//

#include "compiler/Zip.h"
#include "compiler/Support.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace mlir;
using namespace mlir::tfm;
using llvm::formatv;

namespace {
/// Little-endian fields at checked offsets of the file.
class Bytes {
public:
  explicit Bytes(llvm::StringRef data) : data(data) {}
  bool has(uint64_t at, uint64_t n) const {
    return at <= data.size() && n <= data.size() - at;
  }
  uint64_t u16(uint64_t at) const {
    return llvm::support::endian::read16le(data.data() + at);
  }
  uint64_t u32(uint64_t at) const {
    return llvm::support::endian::read32le(data.data() + at);
  }
  uint64_t u64(uint64_t at) const {
    return llvm::support::endian::read64le(data.data() + at);
  }
  llvm::StringRef data;
};
} // namespace

llvm::Expected<llvm::StringMap<ZipEntry>>
mlir::tfm::readZipDirectory(llvm::StringRef path, llvm::StringRef data,
                            llvm::StringRef writer) {
  auto malformed = [&](const llvm::Twine &what) {
    return fail(path, "not a " + writer + " zip archive (" + what + ")");
  };
  Bytes b(data);
  // The end-of-central-directory record: 22 bytes and a comment of at most
  // 64 KiB, at the end.
  constexpr uint64_t kEocd = 22;
  if (data.size() < kEocd)
    return malformed("too short");
  std::optional<uint64_t> eocd;
  uint64_t lowest =
      data.size() > kEocd + 0xFFFF ? data.size() - kEocd - 0xFFFF : 0;
  for (uint64_t at = data.size() - kEocd + 1; at-- > lowest;)
    if (b.u32(at) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (!eocd)
    return malformed("no end of central directory; truncated?");
  uint64_t entries = b.u16(*eocd + 10), dirSize = b.u32(*eocd + 12),
           dirOffset = b.u32(*eocd + 16);
  if (entries == 0xFFFF || dirSize == 0xFFFFFFFF || dirOffset == 0xFFFFFFFF) {
    // ZIP64: a locator just before the record points at a larger record.
    if (*eocd < 20 || b.u32(*eocd - 20) != 0x07064b50)
      return malformed("ZIP64 locator missing");
    uint64_t record = b.u64(*eocd - 20 + 8);
    if (!b.has(record, 56) || b.u32(record) != 0x06064b50)
      return malformed("ZIP64 end of central directory missing");
    entries = b.u64(record + 32);
    dirSize = b.u64(record + 40);
    dirOffset = b.u64(record + 48);
  }
  if (!b.has(dirOffset, dirSize))
    return malformed("central directory outside the file; truncated?");

  llvm::StringMap<ZipEntry> result;
  uint64_t at = dirOffset;
  for (uint64_t i = 0; i < entries; ++i) {
    if (!b.has(at, 46) || b.u32(at) != 0x02014b50)
      return malformed(formatv("central directory entry {0} is damaged", i));
    uint64_t method = b.u16(at + 10), compressed = b.u32(at + 20),
             size = b.u32(at + 24), nameLength = b.u16(at + 28),
             extraLength = b.u16(at + 30), commentLength = b.u16(at + 32),
             local = b.u32(at + 42);
    if (!b.has(at + 46, nameLength + extraLength + commentLength))
      return malformed(formatv("central directory entry {0} is damaged", i));
    llvm::StringRef name = data.substr(at + 46, nameLength);
    // ZIP64 extra field: the 64-bit values of the fields set to ~0, in order.
    for (uint64_t e = at + 46 + nameLength, end = e + extraLength;
         e + 4 <= end;) {
      uint64_t id = b.u16(e), length = b.u16(e + 2), field = e + 4;
      if (field + length > end)
        break;
      if (id == 0x0001) {
        for (uint64_t *value : {&size, &compressed, &local})
          if (*value == 0xFFFFFFFF && field + 8 <= e + 4 + length) {
            *value = b.u64(field);
            field += 8;
          }
      }
      e += 4 + length;
    }
    if (method != 0)
      return fail(path, "entry '" + name + "' is compressed; " + writer +
                            " stores its entries uncompressed");
    if (compressed != size)
      return malformed("entry '" + name + "' has inconsistent sizes");
    if (!b.has(local, 30) || b.u32(local) != 0x04034b50)
      return malformed("entry '" + name + "' has no local header");
    uint64_t offset = local + 30 + b.u16(local + 26) + b.u16(local + 28);
    if (!b.has(offset, size))
      return malformed("entry '" + name + "' runs past the end; truncated?");
    result[name] = {offset, size};
    at += 46 + nameLength + extraLength + commentLength;
  }
  return result;
}
