//===- Shortlist.cpp - The target tokens a batch may produce ----*- C++ -*-===//

#include "runtime/src/Shortlist.h"

#include "runtime/src/ModelFiles.h"
#include "runtime/src/Status.h"

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace tfm_runtime;

tfm_status Shortlist::load(const std::string &modelPath,
                           const tfm_model_config &cfg,
                           std::optional<Shortlist> &out,
                           std::string &warning) {
  out.reset();
  ModelFiles files;
  if (tfm_status status = ModelFiles::open(modelPath, files))
    return status;
  int32_t vocab = int32_t(cfg.target_vocab_size);
  if (files.has(kVmapFileName)) {
    NamedBytes bytes;
    if (tfm_status status = files.read(kVmapFileName, bytes))
      return status;
    VocabularyMap map;
    std::string error;
    if (!deserializeVmap(bytes.bytes, bytes.name, vocab, map, error))
      return makeError(error);
    out.emplace(std::move(map));
    return nullptr;
  }
  if (!files.has(kVmapTextFileName))
    return nullptr;
  NamedBytes text;
  if (tfm_status status = files.read(kVmapTextFileName, text))
    return status;
  tfm_tokenizer *tokenizer = nullptr;
  if (tfm_status status =
          tfm_tokenizer_open(modelPath.c_str(), &cfg, &tokenizer))
    return status;
  tfm_status status =
      parse(text.bytes, text.name, tokenizer, vocab, out, warning);
  if (tokenizer)
    tfm_tokenizer_close(tokenizer);
  return status;
}

tfm_status Shortlist::read(const std::string &path,
                           const tfm_tokenizer *tokenizer,
                           int32_t targetVocabSize,
                           std::optional<Shortlist> &out,
                           std::string &warning) {
  out.reset();
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return makeError("{}: cannot open the vmap", path);
  std::stringstream text;
  text << file.rdbuf();
  return parse(text.str(), path, tokenizer, targetVocabSize, out, warning);
}

tfm_status Shortlist::parse(std::string_view text, const std::string &name,
                            const tfm_tokenizer *tokenizer,
                            int32_t targetVocabSize,
                            std::optional<Shortlist> &out,
                            std::string &warning) {
  if (!tokenizer)
    return makeError("{}: a vmap names pieces, and the model has no "
                     "tokenizer to give them ids",
                     name);
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
  if (!parseVmap(text, name, lookup, lookup, targetVocabSize, map, skips,
                 error))
    return makeError(error);
  warning = skips.warning(name);
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
