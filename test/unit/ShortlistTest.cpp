//===- ShortlistTest.cpp - The vmap formats and the batch shortlist ------===//

#include "runtime/src/Shortlist.h"
#include "tfm/abi/Vmap.h"

#include "gtest/gtest.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tfm_runtime;

namespace {

/// A vocabulary of ten pieces: "a" = 0 ... "j" = 9.
int32_t letterId(std::string_view piece) {
  if (piece.size() == 1 && piece[0] >= 'a' && piece[0] <= 'j')
    return piece[0] - 'a';
  return -1;
}

/// A source vocabulary of words: "the" = 0, "house" = 1, "red" = 2,
/// "cat" = 3.
int32_t wordId(std::string_view piece) {
  static const std::map<std::string, int32_t, std::less<>> ids = {
      {"the", 0}, {"house", 1}, {"red", 2}, {"cat", 3}};
  auto found = ids.find(piece);
  return found == ids.end() ? -1 : found->second;
}

const char kVmap[] = "\ta b\n"
                     "the\tc\n"
                     "house\td e\n"
                     "red house\tf\n"
                     "cat\tg\n";

VocabularyMap parseMap(std::string_view text, VmapSkips *skipsOut = nullptr) {
  VocabularyMap map;
  VmapSkips skips;
  std::string error;
  EXPECT_TRUE(
      parseVmap(text, "map.txt", wordId, letterId, 10, map, skips, error))
      << error;
  if (skipsOut)
    *skipsOut = skips;
  return map;
}

Shortlist parse(std::string_view text, VmapSkips *skipsOut = nullptr) {
  return Shortlist(parseMap(text, skipsOut));
}

std::string parseError(std::string_view text) {
  VocabularyMap map;
  VmapSkips skips;
  std::string error;
  EXPECT_FALSE(
      parseVmap(text, "map.txt", wordId, letterId, 10, map, skips, error));
  return error;
}

std::vector<int32_t>
candidatesOf(const Shortlist &shortlist,
             const std::vector<std::vector<int32_t>> &batch,
             const std::vector<std::vector<int32_t>> &prefixes = {}) {
  std::vector<const int32_t *> sources;
  std::vector<int32_t> lengths;
  for (const std::vector<int32_t> &sentence : batch) {
    sources.push_back(sentence.data());
    lengths.push_back(int32_t(sentence.size()));
  }
  return shortlist.candidates(sources, lengths, prefixes);
}

uint64_t fnv1a(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

/// `bytes` with its checksum made right again after an edit.
std::string resealed(std::string bytes) {
  uint64_t checksum =
      fnv1a(std::string_view(bytes).substr(0, bytes.size() - 8));
  std::memcpy(bytes.data() + bytes.size() - 8, &checksum, 8);
  return bytes;
}

std::string deserializeError(std::string_view bytes, int32_t vocab = 10) {
  VocabularyMap map;
  std::string error;
  EXPECT_FALSE(deserializeVmap(bytes, "m/vmap.bin", vocab, map, error));
  return error;
}

} // namespace

TEST(Shortlist, UnigramsBigramsAndAlwaysIncluded) {
  Shortlist shortlist = parse(kVmap);
  EXPECT_EQ(shortlist.vocabularyMap().longest, 2u);
  EXPECT_EQ(shortlist.vocabularyMap().always, (std::vector<int32_t>{0, 1}));
  // "the house": a b (always), c (the), d e (house).
  EXPECT_EQ(candidatesOf(shortlist, {{0, 1}}),
            (std::vector<int32_t>{0, 1, 2, 3, 4}));
  // "red house" adds f through the bigram; "red" alone maps to nothing.
  EXPECT_EQ(candidatesOf(shortlist, {{2, 1}}),
            (std::vector<int32_t>{0, 1, 3, 4, 5}));
  EXPECT_EQ(candidatesOf(shortlist, {{2}}), (std::vector<int32_t>{0, 1}));
  // "house red" is not the bigram.
  EXPECT_EQ(candidatesOf(shortlist, {{1, 2}}),
            (std::vector<int32_t>{0, 1, 3, 4}));
}

TEST(Shortlist, BatchIsTheUnionOfItsSentences) {
  Shortlist shortlist = parse(kVmap);
  // The bigram does not span two sentences.
  EXPECT_EQ(candidatesOf(shortlist, {{2}, {1}, {3}}),
            (std::vector<int32_t>{0, 1, 3, 4, 6}));
  // Only the first `lengths` ids count: padding is not read.
  std::vector<int32_t> padded = {3, 0};
  std::vector<const int32_t *> sources = {padded.data()};
  EXPECT_EQ(shortlist.candidates(sources, {1}),
            (std::vector<int32_t>{0, 1, 6}));
}

TEST(Shortlist, SpecialTokensAndPrefixes) {
  Shortlist shortlist = parse(kVmap);
  shortlist.alwaysInclude({9, 8, 9, -1, 10});
  EXPECT_EQ(shortlist.vocabularyMap().always,
            (std::vector<int32_t>{0, 1, 8, 9}));
  EXPECT_EQ(candidatesOf(shortlist, {{3}}, {{7, 2}, {}}),
            (std::vector<int32_t>{0, 1, 2, 6, 7, 8, 9}));
}

TEST(VmapText, RepeatedNgramReplacesAsCTranslate2Does) {
  Shortlist shortlist = parse("the\ta b\nthe\tc\n\td\n");
  EXPECT_EQ(candidatesOf(shortlist, {{0}}), (std::vector<int32_t>{2, 3}));
}

TEST(VmapText, CrlfAndBlankLinesAndExtraSpaces) {
  Shortlist shortlist = parse("the\tc  d\r\n\r\n\n  \ta\r\n");
  EXPECT_EQ(candidatesOf(shortlist, {{0}}), (std::vector<int32_t>{0, 2, 3}));
}

TEST(VmapText, UnknownPiecesAreSkippedAndCounted) {
  VmapSkips skips;
  Shortlist shortlist = parse("the\tc zz d\nhouse\te\ndog\tf\n", &skips);
  EXPECT_EQ(skips.targetPieces, 1u);
  EXPECT_EQ(skips.targetPiecesRead, 4u);
  EXPECT_EQ(skips.sourceRules, 1u);
  EXPECT_EQ(skips.first, "map.txt:1: 'zz'");
  EXPECT_EQ(skips.warning("map.txt"),
            "map.txt: skipped 1 target pieces not in the model's target "
            "vocabulary and 1 rules whose source n-gram has a piece not in "
            "its source vocabulary (first: map.txt:1: 'zz')");
  EXPECT_EQ(candidatesOf(shortlist, {{0}}), (std::vector<int32_t>{2, 3}));
}

TEST(VmapText, MalformedTextIsRefusedWithFileAndLine) {
  EXPECT_EQ(parseError("the\tc\nhouse d\n"),
            "map.txt:2: no TAB between the source n-gram and its target "
            "pieces");
  EXPECT_EQ(parseError("the\tc\td\n"),
            "map.txt:1: more than one TAB: a line is 'SOURCE "
            "PIECES<TAB>TARGET PIECES'");
  EXPECT_EQ(parseError(""), "map.txt: no target pieces: a vmap's lines are "
                            "'SOURCE PIECES<TAB>TARGET PIECES'");
  EXPECT_EQ(parseError("the\tx y\nhouse\tc\n"),
            "map.txt: 2 of 3 target pieces are not in the model's target "
            "vocabulary (first: map.txt:1: 'x'): the map was made for "
            "another vocabulary");
}

TEST(VmapText, TargetIdBeyondTheModelIsRefused) {
  VocabularyMap map;
  VmapSkips skips;
  std::string error;
  EXPECT_FALSE(
      parseVmap("the\tj\n", "map.txt", wordId, letterId, 5, map, skips, error));
  EXPECT_EQ(error, "map.txt:1: the target piece 'j' has id 9, outside the "
                   "model's vocabulary of 5");
}

TEST(VmapCompact, CompactFormKeepsTheMap) {
  VocabularyMap map = parseMap(kVmap);
  std::string bytes = serializeVmap(map);
  VocabularyMap loaded;
  std::string error;
  ASSERT_TRUE(deserializeVmap(bytes, "m/vmap.bin", 10, loaded, error)) << error;
  EXPECT_EQ(loaded.rules.size(), 4u);
  EXPECT_EQ(loaded.longest, 2u);
  EXPECT_EQ(loaded.rules, map.rules);
  EXPECT_EQ(loaded.always, map.always);
  // The same map, the same bytes.
  EXPECT_EQ(serializeVmap(loaded), bytes);
}

TEST(VmapCompact, CorruptCompactFormIsRefusedWithFileAndOffset) {
  std::string bytes = serializeVmap(parseMap(kVmap));
  EXPECT_EQ(deserializeError("TFMVMAP2"),
            "m/vmap.bin: offset 0: not a compiled vmap (no TFMVMAP1 at its "
            "start)");
  EXPECT_EQ(deserializeError(bytes.substr(0, bytes.size() - 3)),
            "m/vmap.bin: offset " + std::to_string(bytes.size() - 11) +
                ": checksum mismatch: the file is corrupt");
  std::string flipped = bytes;
  flipped[30] ^= 1;
  EXPECT_NE(deserializeError(flipped).find("checksum mismatch"),
            std::string::npos);
  EXPECT_EQ(deserializeError(bytes, 12),
            "m/vmap.bin: offset 8: made for a target vocabulary of 10 "
            "tokens; the model has 12");
  // An always-included id (offset 20, the first) beyond the vocabulary.
  std::string outside = bytes;
  int32_t big = 10;
  std::memcpy(outside.data() + 20, &big, 4);
  EXPECT_EQ(deserializeError(resealed(outside)),
            "m/vmap.bin: offset 20: always-included token 10 is outside the "
            "vocabulary of 10");
  // A rule count larger than the rules there are.
  std::string more = bytes;
  more[16] = 5;
  EXPECT_NE(deserializeError(resealed(more)).find("the file ends before"),
            std::string::npos);
}
