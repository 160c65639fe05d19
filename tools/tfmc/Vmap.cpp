//===- Vmap.cpp - tfmc's side of the vocabulary shortlist -------*- C++ -*-===//

#include "tools/tfmc/Vmap.h"

#include "tfm/abi/Vmap.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;
using namespace tfm_tools;
using tfm_runtime::VocabularyMap;

namespace {

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

Expected<std::unique_ptr<MemoryBuffer>> readFile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail(path + ": " + buffer.getError().message());
  return std::move(*buffer);
}

int32_t vocabularySize(const Vocabulary &vocabulary) {
  int32_t size = 0;
  for (const auto &entry : vocabulary)
    size = std::max(size, entry.second + 1);
  return size;
}

/// The vmap at `path`, read with `vocabulary` for both sides (Marian's
/// vocab.json is shared); a warning for what it skipped.
Expected<VocabularyMap> parseVmap(StringRef path, const Vocabulary &vocabulary,
                                  int32_t vocabSize, std::string &warning) {
  auto text = readFile(path);
  if (!text)
    return text.takeError();
  tfm_runtime::PieceLookup lookup = [&](std::string_view piece) {
    auto found = vocabulary.find(StringRef(piece.data(), piece.size()));
    return found == vocabulary.end() ? int32_t(-1) : found->second;
  };
  VocabularyMap map;
  tfm_runtime::VmapSkips skips;
  std::string error;
  std::string_view bytes((*text)->getBufferStart(), (*text)->getBufferSize());
  if (!tfm_runtime::parseVmap(bytes, path.str(), lookup, lookup, vocabSize, map,
                              skips, error))
    return fail(error);
  warning = skips.warning(path.str());
  return map;
}

/// The ids of each line of `path` (pieces), with `eos` appended when it
/// is not negative; an unknown piece is <unk>, as the tokenizer makes it.
Expected<std::vector<std::vector<int32_t>>>
readSentences(StringRef path, const Vocabulary &vocabulary, int32_t eos) {
  auto text = readFile(path);
  if (!text)
    return text.takeError();
  int32_t unk = vocabulary.lookup("<unk>");
  std::vector<std::vector<int32_t>> sentences;
  SmallVector<StringRef> lines, pieces;
  (*text)->getBuffer().split(lines, '\n');
  if (!lines.empty() && lines.back().empty())
    lines.pop_back();
  for (StringRef line : lines) {
    pieces.clear();
    SplitString(line, pieces, " \t\r");
    std::vector<int32_t> ids;
    for (StringRef piece : pieces) {
      auto found = vocabulary.find(piece);
      ids.push_back(found == vocabulary.end() ? unk : found->second);
    }
    if (eos >= 0)
      ids.push_back(eos);
    sentences.push_back(std::move(ids));
  }
  return sentences;
}

/// The shortlist sizes of consecutive batches of `batchSize` sentences.
std::vector<size_t>
batchSizesOf(const VocabularyMap &shortlist,
             const std::vector<std::vector<int32_t>> &sentences,
             unsigned batchSize) {
  std::vector<size_t> sizes;
  for (size_t first = 0; first < sentences.size(); first += batchSize) {
    std::vector<const int32_t *> sources;
    std::vector<int32_t> lengths;
    for (size_t s = first; s < std::min(sentences.size(), first + batchSize);
         ++s) {
      sources.push_back(sentences[s].data());
      lengths.push_back(int32_t(sentences[s].size()));
    }
    sizes.push_back(shortlist.candidates(sources, lengths, {}).size());
  }
  return sizes;
}

size_t quantile(std::vector<size_t> sorted, double q) {
  return sorted[size_t(q * double(sorted.size() - 1) + 0.5)];
}

/// Reference pieces in their own sentence's batch-1 shortlist, and all.
std::pair<size_t, size_t>
coverage(const VocabularyMap &shortlist,
         const std::vector<std::vector<int32_t>> &sources,
         const std::vector<std::vector<int32_t>> &references) {
  size_t held = 0, all = 0;
  for (size_t s = 0; s < sources.size(); ++s) {
    std::vector<int32_t> ids = shortlist.candidates(
        {sources[s].data()}, {int32_t(sources[s].size())}, {});
    for (int32_t piece : references[s]) {
      held += std::binary_search(ids.begin(), ids.end(), piece);
      ++all;
    }
  }
  return {held, all};
}

/// The special tokens of a Marian vocab.json that the translator always
/// lets through.
std::vector<int32_t> specialsOf(const Vocabulary &vocabulary) {
  std::vector<int32_t> ids;
  for (StringRef piece : {"</s>", "<unk>", "<pad>", "<s>"})
    if (vocabulary.count(piece))
      ids.push_back(vocabulary.lookup(piece));
  return ids;
}

} // namespace

Expected<Vocabulary> tfm_tools::readVocabulary(StringRef path) {
  auto text = readFile(path);
  if (!text)
    return text.takeError();
  Expected<json::Value> parsed = json::parse((*text)->getBuffer());
  if (!parsed)
    return fail(path + ": not valid JSON: " + toString(parsed.takeError()));
  const json::Object *object = parsed->getAsObject();
  if (!object)
    return fail(path + ": expected a JSON object from pieces to ids");
  Vocabulary vocabulary;
  for (const auto &[piece, value] : *object) {
    std::optional<int64_t> id = value.getAsInteger();
    if (!id || *id < 0 || *id > INT32_MAX)
      return fail(path + ": the id of '" + piece.str() +
                  "' is not a non-negative integer");
    vocabulary[piece.str()] = int32_t(*id);
  }
  return vocabulary;
}

Error tfm_tools::storeVmapText(StringRef vmapPath, StringRef outPath) {
  auto text = readFile(vmapPath);
  if (!text)
    return text.takeError();
  // Every piece known: the lines' form alone is checked here.
  tfm_runtime::PieceLookup anyPiece = [](std::string_view) { return 0; };
  VocabularyMap map;
  tfm_runtime::VmapSkips skips;
  std::string error;
  std::string_view bytes((*text)->getBufferStart(), (*text)->getBufferSize());
  if (!tfm_runtime::parseVmap(bytes, vmapPath.str(), anyPiece, anyPiece, 1, map,
                              skips, error))
    return fail(error);
  if (std::error_code ec = sys::fs::copy_file(vmapPath, outPath))
    return fail(outPath + ": " + ec.message());
  return Error::success();
}

Error tfm_tools::storeVmap(StringRef vmapPath, const Vocabulary &vocabulary,
                           int32_t vocabSize, ArrayRef<int32_t> specials,
                           StringRef outPath, std::string &warning) {
  Expected<VocabularyMap> map =
      parseVmap(vmapPath, vocabulary, vocabSize, warning);
  if (!map)
    return map.takeError();
  // The special tokens join the always-included ones (as a vmap's first
  // line would list them).
  map->always.insert(map->always.end(), specials.begin(), specials.end());
  map->add(U"", map->always);
  std::error_code ec;
  raw_fd_ostream out(outPath, ec, sys::fs::OF_None);
  if (ec)
    return fail(outPath + ": " + ec.message());
  out << tfm_runtime::serializeVmap(*map);
  out.close();
  if (out.has_error())
    return fail(outPath + ": " + out.error().message());
  return Error::success();
}

Error tfm_tools::measureShortlist(StringRef vmapPath,
                                  const Vocabulary &vocabulary,
                                  StringRef sourcePath, StringRef targetPath,
                                  ArrayRef<unsigned> batchSizes,
                                  raw_ostream &os) {
  std::string warning;
  int32_t vocabSize = vocabularySize(vocabulary);
  Expected<VocabularyMap> shortlist =
      parseVmap(vmapPath, vocabulary, vocabSize, warning);
  if (!shortlist)
    return shortlist.takeError();
  if (!warning.empty())
    os << "warning: " << warning << "\n";
  std::vector<int32_t> always = shortlist->always,
                       specials = specialsOf(vocabulary);
  always.insert(always.end(), specials.begin(), specials.end());
  shortlist->add(U"", always);
  int32_t eos = vocabulary.count("</s>") ? vocabulary.lookup("</s>") : -1;
  auto sources = readSentences(sourcePath, vocabulary, eos);
  if (!sources)
    return sources.takeError();
  if (sources->empty())
    return fail(sourcePath + ": no sentences");
  os << vmapPath << ": " << shortlist->rules.size() << " rules, "
     << shortlist->always.size() << " tokens always included, of " << vocabSize
     << "\n";
  for (unsigned batch : batchSizes) {
    std::vector<size_t> sizes = batchSizesOf(*shortlist, *sources, batch);
    llvm::sort(sizes);
    os << "batch " << batch << ": " << sizes.size()
       << " batches, shortlist size median " << quantile(sizes, 0.5)
       << " (10%: " << quantile(sizes, 0.1) << ", 90%: " << quantile(sizes, 0.9)
       << ", max " << sizes.back() << ")\n";
  }
  if (targetPath.empty())
    return Error::success();
  auto references = readSentences(targetPath, vocabulary, -1);
  if (!references)
    return references.takeError();
  if (references->size() != sources->size())
    return fail(targetPath + " has " + Twine(references->size()) +
                " lines and " + sourcePath + " " + Twine(sources->size()));
  auto [held, all] = coverage(*shortlist, *sources, *references);
  os << "reference pieces in their sentence's shortlist (batch 1): " << held
     << " of " << all << " ("
     << format("%.2f", all ? 100.0 * double(held) / double(all) : 0.0)
     << "%)\n";
  return Error::success();
}
