//===- SafetensorsFuzzer.cpp - Fuzz the safetensors reader ------*- C++ -*-===//
//
// Input: a whole model.safetensors. Either SafetensorsFile::open rejects it
// with an error naming the file, or every tensor it accepts lies inside the
// data section, has as many bytes as its shape and dtype need, and is found
// by name.
//
//===----------------------------------------------------------------------===//

#include "compiler/Safetensors.h"
#include "fuzz/CompilerReaders.h"

#include <cstring>

using namespace mlir::tfm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<SafetensorsFile> st = tfm_fuzz::openInput(
      data, size, SafetensorsFile::open, tfm_fuzz::startsWithPathThen(":"));
  if (!st)
    return 0;
  uint64_t sum = 0;
  for (const TensorInfo &t : st->tensors()) {
    llvm::ArrayRef<char> bytes = st->bytes(t);
    TFM_FUZZ_CHECK(bytes.size() == t.end - t.begin);
    TFM_FUZZ_CHECK(uint64_t(t.numElements()) * dtypeSize(t.dtype) ==
                   bytes.size());
    uint64_t headerSize = 0;
    std::memcpy(&headerSize, data, 8); // open() succeeded: size >= 8
    TFM_FUZZ_CHECK(t.begin <= t.end && 8 + headerSize + t.end <= size);
    // Touch the first and the last byte: ASan reports a range outside the
    // mapping.
    if (!bytes.empty())
      sum += uint8_t(bytes.front()) + uint8_t(bytes.back());
    const TensorInfo *found = st->lookup(t.name);
    TFM_FUZZ_CHECK(found && found->begin == t.begin && found->end == t.end);
    (void)dtypeName(t.dtype);
  }
  for (const auto &entry : st->metadata())
    sum += entry.getValue().size();
  return sum == 0xdeadbeef ? 0 : 0; // keeps `sum` alive
}
