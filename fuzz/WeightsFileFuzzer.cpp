//===- WeightsFileFuzzer.cpp - Fuzz the weights file check ------*- C++ -*-===//
//
// What tfm_model_open checks at every load: the embedded-weights trailer,
// the header (magic, version, checksum, fingerprint, sizes) and the region
// table. A random file fails at the magic, so the input is a compact form
// that the target expands and, on request, repairs:
//
//   byte 0       flags: 1 magic, version, fingerprint and dataSize made
//                valid; 2 tableChecksum recomputed; 4 headerChecksum
//                recomputed; 8 wrapped as an executable with embedded
//                weights (prefix, trailer)
//   bytes 1-56   the header's fields (ModelInfo.h's WeightsHeader)
//   the rest     data and region table, after the 4096-byte header
//
// Without repairs the mutations reach the early checks, with them the
// table's. Either tfm_model_open fails with a message naming the file, or
// --verify-weights' pass over the regions stays inside the data.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/runtime.h"

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

using namespace tfm_runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tfm_fuzz::MemFile file;
  if (size < 1)
    return 0;
  uint8_t flags = data[0];
  ++data, --size;
  WeightsHeader header{};
  size_t fields = std::min(size, sizeof header);
  std::memcpy(&header, data, fields);
  data += fields, size -= fields;
  const tfm_model_info &info = tfm_model_info_data;
  if (flags & 1) {
    std::memcpy(header.magic, kWeightsMagic, 8);
    header.abiVersion = kAbiVersion;
    header.fingerprint = uint64_t(info.fingerprint);
    header.dataSize = uint64_t(info.weightsSize);
  }
  if ((flags & 2) && header.dataSize <= size) {
    header.tableSize = size - header.dataSize;
    header.tableChecksum = checksum(data + header.dataSize, header.tableSize);
  }
  if (flags & 4)
    header.headerChecksum =
        checksum(&header, offsetof(WeightsHeader, headerChecksum));

  std::vector<char> bytes;
  if (flags & 8)
    bytes.assign(100 + (flags >> 4), 'x'); // the executable before the weights
  size_t start = bytes.size();
  bytes.resize(start + kWeightsHeaderSize, 0);
  std::memcpy(bytes.data() + start, &header, sizeof header);
  bytes.insert(bytes.end(), data, data + size);
  if (flags & 8) {
    EmbedTrailer trailer{start, bytes.size() - start, {}};
    std::memcpy(trailer.magic, kEmbedMagic, 8);
    const char *t = reinterpret_cast<const char *>(&trailer);
    bytes.insert(bytes.end(), t, t + sizeof trailer);
  }
  file.set(bytes.data(), bytes.size());

  tfm_model *model = nullptr;
  if (tfm_status s = tfm_model_open(file.path().c_str(), &model)) {
    std::string message = tfm_status_message(s);
    TFM_FUZZ_CHECK(message.rfind(file.path() + ": ", 0) == 0);
    if (tfm_fuzz::verbose())
      std::fprintf(stderr, "%s\n", message.c_str());
    tfm_status_free(s);
    TFM_FUZZ_CHECK(model == nullptr);
    return 0;
  }
  TFM_FUZZ_CHECK(model != nullptr);
  tfm_model_config config;
  tfm_model_get_config(model, &config);
  TFM_FUZZ_CHECK(config.d_model == info.dModel);
  int64_t tensors = -1, total = -1;
  if (tfm_status s = tfm_model_verify_weights(model, &tensors, &total)) {
    TFM_FUZZ_CHECK(std::strstr(tfm_status_message(s), "damaged") != nullptr);
    tfm_status_free(s);
  } else {
    TFM_FUZZ_CHECK(tensors >= 0 && total >= 0);
  }
  tfm_model_close(model);
  return 0;
}
