//===- VmapFuzzer.cpp - Fuzz the vocabulary map's two forms -----*- C++ -*-===//
//
// Input: a vmap as a user gives it (`tfmc compile --vmap`, the translator's
// --vmap), or the compact form stored with a compiled model (vmap.bin).
// Both readers run on every input. Text that parses must survive the
// compact form unchanged and give sorted, unique, in-vocabulary
// candidates; compact bytes are read once as they are and once with their
// checksum made right, so that mutations reach the rules behind it.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "tfm/abi/Vmap.h"

#include <cstdio>
#include <string>

using namespace tfm_runtime;

namespace {

constexpr int32_t kVocab = 64;

/// A small vocabulary: pieces of one to three bytes have ids (a hash of
/// them, so that different pieces may share one), longer ones do not.
int32_t pieceId(std::string_view piece) {
  if (piece.size() > 3)
    return -1;
  return int32_t(vmap_detail::fnv1a(piece) % kVocab);
}

/// Sorted, unique and inside the vocabulary.
bool wellFormed(const std::vector<int32_t> &ids) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= kVocab || (i && ids[i - 1] >= ids[i]))
      return false;
  return true;
}

void checkText(std::string_view text) {
  VocabularyMap map;
  VmapSkips skips;
  std::string error;
  if (!parseVmap(text, "fuzz.vmap", pieceId, pieceId, kVocab, map, skips,
                 error)) {
    TFM_FUZZ_CHECK(error.rfind("fuzz.vmap", 0) == 0);
    return;
  }
  TFM_FUZZ_CHECK(wellFormed(map.always));
  for (const auto &[key, targets] : map.rules)
    TFM_FUZZ_CHECK(!key.empty() && key.size() <= map.longest &&
                   wellFormed(targets));
  // The compact form gives the same map back.
  std::string bytes = serializeVmap(map);
  VocabularyMap back;
  TFM_FUZZ_CHECK(deserializeVmap(bytes, "fuzz.bin", kVocab, back, error));
  TFM_FUZZ_CHECK(back.always == map.always && back.rules == map.rules &&
                 back.longest == map.longest);
  // A batch of the input's bytes as source ids.
  std::vector<int32_t> source;
  for (unsigned char c : text.substr(0, 200))
    source.push_back(int32_t(c % kVocab));
  std::vector<int32_t> ids = map.candidates(
      {source.data()}, {int32_t(source.size())}, {{-1, 3, kVocab + 5}});
  TFM_FUZZ_CHECK(wellFormed(ids));
}

void checkCompact(std::string bytes) {
  VocabularyMap map;
  std::string error;
  if (!deserializeVmap(bytes, "fuzz.bin", kVocab, map, error))
    TFM_FUZZ_CHECK(error.rfind("fuzz.bin", 0) == 0);
  // Again with the checksum of the mutated body.
  if (bytes.size() < 16)
    return;
  uint64_t checksum =
      vmap_detail::fnv1a(std::string_view(bytes).substr(0, bytes.size() - 8));
  bytes.replace(bytes.size() - 8, 8, reinterpret_cast<const char *>(&checksum),
                8);
  if (!deserializeVmap(bytes, "fuzz.bin", kVocab, map, error)) {
    TFM_FUZZ_CHECK(error.rfind("fuzz.bin", 0) == 0);
    return;
  }
  TFM_FUZZ_CHECK(wellFormed(map.always));
  for (const auto &rule : map.rules)
    TFM_FUZZ_CHECK(!rule.first.empty() && wellFormed(rule.second));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  checkText(input);
  checkCompact(input);
  return 0;
}
