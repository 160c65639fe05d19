//===- ShortlistBuilder.cpp - A vmap from a parallel corpus -----*- C++ -*-===//

#include "tools/tfmc/ShortlistBuilder.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace llvm;
using namespace tfm_tools;

namespace {

/// The distinct values of `ids`, sorted: a pair counts a piece once.
std::vector<uint32_t> distinct(std::vector<uint32_t> ids) {
  llvm::sort(ids);
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

SmallVector<StringRef> piecesOf(StringRef line) {
  SmallVector<StringRef> pieces;
  SplitString(line, pieces, " \t\r");
  return pieces;
}

Expected<std::unique_ptr<MemoryBuffer>> readCorpus(StringRef path) {
  auto buffer = MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(buffer.getError(),
                             path + ": " + buffer.getError().message());
  return std::move(*buffer);
}

size_t lineCount(StringRef text) {
  return text.count('\n') + (!text.empty() && !text.ends_with("\n"));
}

} // namespace

uint32_t ShortlistBuilder::Pieces::intern(StringRef piece) {
  auto [entry, added] = ids.try_emplace(piece, uint32_t(text.size()));
  if (added)
    text.push_back(piece.str());
  return entry->second;
}

void ShortlistBuilder::Cooccurrences::add(uint32_t key,
                                          ArrayRef<uint32_t> targets) {
  if (key >= keyPairs.size())
    keyPairs.resize(key + 1, 0);
  ++keyPairs[key];
  for (uint32_t target : targets)
    ++withTarget[uint64_t(key) << 32 | target];
}

void ShortlistBuilder::addPair(ArrayRef<StringRef> source,
                               ArrayRef<StringRef> target) {
  ++pairs;
  std::vector<uint32_t> targets;
  for (StringRef piece : target)
    targets.push_back(targetPieces.intern(piece));
  targets = distinct(std::move(targets));
  targetPairs.resize(targetPieces.text.size(), 0);
  for (uint32_t t : targets)
    ++targetPairs[t];
  std::vector<uint32_t> keys;
  for (StringRef piece : source)
    keys.push_back(unigrams.keys.intern(piece));
  for (uint32_t key : distinct(std::move(keys)))
    unigrams.add(key, targets);
  if (options.ngrams < 2)
    return;
  keys.clear();
  for (size_t i = 0; i + 1 < source.size(); ++i)
    keys.push_back(
        bigrams.keys.intern((source[i] + " " + source[i + 1]).str()));
  for (uint32_t key : distinct(std::move(keys)))
    bigrams.add(key, targets);
}

std::vector<uint32_t> ShortlistBuilder::alwaysIncluded() const {
  std::vector<uint32_t> order(targetPairs.size());
  for (uint32_t t = 0; t < order.size(); ++t)
    order[t] = t;
  llvm::stable_sort(order, [&](uint32_t x, uint32_t y) {
    if (targetPairs[x] != targetPairs[y])
      return targetPairs[x] > targetPairs[y];
    return targetPieces.text[x] < targetPieces.text[y];
  });
  order.resize(std::min<size_t>(order.size(), options.frequent));
  return order;
}

std::vector<std::vector<uint32_t>>
ShortlistBuilder::rankAll(const Cooccurrences &counts, unsigned minPairs,
                          const Excluded &excluded) const {
  // (target, pairs) of each key, from one pass over the counts.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> byKey(
      counts.keyPairs.size());
  for (const auto &entry : counts.withTarget) {
    uint32_t key = uint32_t(entry.first >> 32), target = uint32_t(entry.first);
    if (counts.keyPairs[key] >= minPairs && !excluded(key, target))
      byKey[key].emplace_back(target, entry.second);
  }
  std::vector<std::vector<uint32_t>> ranked(byKey.size());
  for (size_t key = 0; key < byKey.size(); ++key) {
    auto &candidates = byKey[key];
    // p(t|s) = pairs(s,t) / pairs(s): for one s, the order of pairs(s,t).
    llvm::sort(candidates, [&](const auto &x, const auto &y) {
      if (x.second != y.second)
        return x.second > y.second;
      return targetPieces.text[x.first] < targetPieces.text[y.first];
    });
    for (const auto &[target, together] : candidates) {
      if (ranked[key].size() == options.topK ||
          double(together) < options.minProbability * counts.keyPairs[key])
        break;
      ranked[key].push_back(target);
    }
  }
  return ranked;
}

void ShortlistBuilder::writeLine(raw_ostream &os, StringRef key,
                                 ArrayRef<uint32_t> targets) const {
  os << key << '\t';
  interleave(targets, os, [&](uint32_t t) { os << targetPieces.text[t]; }, " ");
  os << '\n';
}

ShortlistSummary ShortlistBuilder::write(raw_ostream &os) const {
  ShortlistSummary summary;
  summary.pairs = pairs;
  std::vector<uint32_t> always = alwaysIncluded();
  std::vector<bool> excluded(targetPieces.text.size(), false);
  for (uint32_t t : always)
    excluded[t] = true;
  std::vector<std::vector<uint32_t>> unigramTargets =
      rankAll(unigrams, options.minCount,
              [&](uint32_t, uint32_t target) { return excluded[target]; });
  // A bigram ranks only what its pieces' lines do not give.
  std::vector<std::vector<uint32_t>> given(unigramTargets);
  for (std::vector<uint32_t> &targets : given)
    llvm::sort(targets);
  auto givenBy = [&](StringRef piece, uint32_t target) {
    const std::vector<uint32_t> &targets =
        given[unigrams.keys.ids.lookup(piece)];
    return std::binary_search(targets.begin(), targets.end(), target);
  };
  std::vector<std::vector<uint32_t>> bigramTargets = rankAll(
      bigrams, options.minNgramCount, [&](uint32_t key, uint32_t target) {
        auto [first, second] = StringRef(bigrams.keys.text[key]).split(' ');
        return excluded[target] || givenBy(first, target) ||
               givenBy(second, target);
      });
  // Lines in the order of their keys' text; the always line ("") first.
  std::vector<std::pair<StringRef, const std::vector<uint32_t> *>> lines;
  for (size_t key = 0; key < unigramTargets.size(); ++key)
    if (!unigramTargets[key].empty())
      lines.emplace_back(unigrams.keys.text[key], &unigramTargets[key]);
  summary.unigramRules = lines.size();
  for (size_t key = 0; key < bigramTargets.size(); ++key)
    if (!bigramTargets[key].empty())
      lines.emplace_back(bigrams.keys.text[key], &bigramTargets[key]);
  summary.bigramRules = lines.size() - summary.unigramRules;
  llvm::sort(lines,
             [](const auto &x, const auto &y) { return x.first < y.first; });
  if (!always.empty())
    writeLine(os, "", always);
  summary.targetEntries = always.size();
  for (const auto &[key, targets] : lines) {
    writeLine(os, key, *targets);
    summary.targetEntries += targets->size();
  }
  return summary;
}

Expected<ShortlistSummary>
tfm_tools::buildShortlist(StringRef sourcePath, StringRef targetPath,
                          const ShortlistOptions &options, raw_ostream &os) {
  auto source = readCorpus(sourcePath);
  if (!source)
    return source.takeError();
  auto target = readCorpus(targetPath);
  if (!target)
    return target.takeError();
  StringRef sourceText = (*source)->getBuffer(),
            targetText = (*target)->getBuffer();
  size_t sourceLines = lineCount(sourceText),
         targetLines = lineCount(targetText);
  if (sourceLines != targetLines)
    return createStringError(
        inconvertibleErrorCode(),
        sourcePath + " has " + Twine(sourceLines) + " lines and " + targetPath +
            " " + Twine(targetLines) +
            ": a parallel corpus has a sentence a line, as many in each");
  ShortlistBuilder builder(options);
  while (!sourceText.empty() || !targetText.empty()) {
    auto [sourceLine, sourceRest] = sourceText.split('\n');
    auto [targetLine, targetRest] = targetText.split('\n');
    builder.addPair(piecesOf(sourceLine), piecesOf(targetLine));
    sourceText = sourceRest;
    targetText = targetRest;
  }
  return builder.write(os);
}
