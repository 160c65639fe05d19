//===- Shortlist.cpp - The target tokens a batch may produce ----*- C++ -*-===//

#include "runtime/src/Shortlist.h"

#include "runtime/src/ModelFiles.h"
#include "runtime/src/Status.h"

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace tfm_runtime;

tfm_status Shortlist::load(const std::string &modelPath,
                           int32_t targetVocabSize,
                           std::optional<Shortlist> &out) {
  out.reset();
  ModelFiles files;
  if (tfm_status status = ModelFiles::open(modelPath, files))
    return status;
  if (!files.has(kVmapFileName))
    return nullptr;
  NamedBytes bytes;
  if (tfm_status status = files.read(kVmapFileName, bytes))
    return status;
  VocabularyMap map;
  std::string error;
  if (!deserializeVmap(bytes.bytes, bytes.name, targetVocabSize, map, error))
    return makeError(error);
  out.emplace(std::move(map));
  return nullptr;
}

tfm_status Shortlist::read(const std::string &path,
                           const tfm_tokenizer *tokenizer,
                           int32_t targetVocabSize,
                           std::optional<Shortlist> &out,
                           std::string &warning) {
  out.reset();
  if (!tokenizer)
    return makeError("{}: a vmap names pieces, and the model has no "
                     "tokenizer to give them ids",
                     path);
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return makeError("{}: cannot open the vmap", path);
  std::stringstream text;
  text << file.rdbuf();
  PieceLookup lookup = [&](std::string_view piece) {
    int32_t id = -1;
    if (tfm_status status = tfm_tokenizer_piece_id(tokenizer, piece.data(),
                                                   piece.size(), &id)) {
      tfm_status_free(status);
      return int32_t(-1);
    }
    return id;
  };
  VocabularyMap map;
  VmapSkips skips;
  std::string error;
  if (!parseVmap(text.str(), path, lookup, lookup, targetVocabSize, map, skips,
                 error))
    return makeError(error);
  warning = skips.warning(path);
  out.emplace(std::move(map));
  return nullptr;
}

void Shortlist::alwaysInclude(const std::vector<int32_t> &ids) {
  std::vector<int32_t> &always = map.always;
  for (int32_t id : ids)
    if (id >= 0 && id < map.vocabSize)
      always.push_back(id);
  std::sort(always.begin(), always.end());
  always.erase(std::unique(always.begin(), always.end()), always.end());
}
