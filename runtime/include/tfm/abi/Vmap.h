//===- Vmap.h - The vocabulary map's formats --------------------*- C++ -*-===//
//
// A vocabulary map ("vmap", the format CTranslate2's users have) says which
// target tokens a source n-gram may be translated with. Its text form, a
// rule a line:
//
//   src_1 ... src_N<TAB>tgt_1 ... tgt_K
//
// pieces separated by spaces; a line with an empty source side lists the
// pieces always included. As in CTranslate2: n-grams as long as the
// longest in the file; a repeated n-gram replaces the earlier line; a
// target piece the vocabulary lacks is skipped (CTranslate2 makes it
// <unk>, which is always a candidate), and so is a rule whose source
// n-gram has a piece the source vocabulary lacks (the tokenizer never
// gives it). Here a line without a TAB, or with two, is an error, blank
// lines and a trailing CR are ignored, and a map most of whose target
// pieces are unknown is refused (it was made for another vocabulary).
//
// tfmc compile --vmap reads the text with the model's vocabulary and
// stores the compact form (kVmapFileName) beside the weights, or embeds it;
// the runtime reads that without a vocabulary, or the text with its
// tokenizer's (a translator's --vmap). Compact form, little-endian:
//
//   "TFMVMAP1"                        magic and version, 8 bytes
//   u32 vocabulary size               the model's target vocabulary
//   u32 always count, u32 rule count
//   i32 x always count                sorted
//   rule count x { u32 n, u32 k, i32 x n source ids, i32 x k target ids }
//   u64 FNV-1a of every byte before it
//
// Header-only, without exceptions: tfmc and the runtime both compile it.
// Errors name the file and the line, or the byte offset.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_VMAP_H
#define TFM_RUNTIME_VMAP_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tfm_runtime {

/// The compact form's name among a compiled model's files.
inline constexpr char kVmapFileName[] = "vmap.bin";
/// The text form's, stored instead where the model's pieces get ids from
/// its SentencePiece model alone (T5, NLLB, mBART-50: no vocab.json for
/// tfmc to read them with): the runtime reads it with the tokenizer.
inline constexpr char kVmapTextFileName[] = "vmap.txt";

/// A vocabulary's id for a piece, or -1 when it does not have the piece.
using PieceLookup = std::function<int32_t(std::string_view piece)>;

/// What a vmap held that the vocabularies lack, skipped and counted.
struct VmapSkips {
  size_t targetPieces = 0, targetPiecesRead = 0;
  size_t sourceRules = 0;
  /// "FILE:LINE: 'piece'", the first piece skipped.
  std::string first;

  /// The warning to print, empty when nothing was skipped.
  std::string warning(const std::string &fileName) const {
    if (targetPieces == 0 && sourceRules == 0)
      return "";
    return fileName + ": skipped " + std::to_string(targetPieces) +
           " target pieces not in the model's target vocabulary and " +
           std::to_string(sourceRules) +
           " rules whose source n-gram has a piece not in its source "
           "vocabulary (first: " +
           first + ")";
  }
};

/// A vmap in ids.
struct VocabularyMap {
  int32_t vocabSize = 0;
  size_t longest = 0;
  /// Sorted and unique.
  std::vector<int32_t> always;
  /// Source n-gram (its ids as char32_t) -> sorted unique target ids.
  std::unordered_map<std::u32string, std::vector<int32_t>> rules;

  /// Adds a line's rule; an empty key gives the always-included tokens.
  void add(std::u32string key, std::vector<int32_t> targets) {
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    if (key.empty()) {
      always = std::move(targets);
      return;
    }
    longest = std::max(longest, key.size());
    rules[std::move(key)] = std::move(targets);
  }

  /// The sorted target ids a batch may produce: the targets of the source
  /// n-grams of `sources[i]` (`lengths[i]` ids each; n up to `longest`,
  /// from every position, as CTranslate2 looks them up), the
  /// always-included ones and every id of `prefixes` (ids outside the
  /// vocabulary are left out).
  std::vector<int32_t>
  candidates(const std::vector<const int32_t *> &sources,
             const std::vector<int32_t> &lengths,
             const std::vector<std::vector<int32_t>> &prefixes) const {
    std::vector<uint8_t> seen(size_t(std::max(vocabSize, 0)), 0);
    std::vector<int32_t> out;
    auto collect = [&](const std::vector<int32_t> &ids) {
      for (int32_t id : ids)
        if (id >= 0 && id < vocabSize && !seen[id]) {
          seen[id] = 1;
          out.push_back(id);
        }
    };
    collect(always);
    for (const std::vector<int32_t> &prefix : prefixes)
      collect(prefix);
    std::u32string key;
    for (size_t s = 0; s < sources.size(); ++s)
      for (int32_t i = 0; i < lengths[s]; ++i) {
        key.clear();
        for (int32_t n = 1; size_t(n) <= longest && i + n <= lengths[s]; ++n) {
          key.push_back(char32_t(sources[s][i + n - 1]));
          auto rule = rules.find(key);
          if (rule != rules.end())
            collect(rule->second);
        }
      }
    std::sort(out.begin(), out.end());
    return out;
  }
};

namespace vmap_detail {

constexpr char kMagic[8] = {'T', 'F', 'M', 'V', 'M', 'A', 'P', '1'};

inline std::vector<std::string_view> splitSpaces(std::string_view text) {
  std::vector<std::string_view> words;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(' ', start), text.size());
    if (end > start)
      words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

inline uint64_t fnv1a(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

/// Reads vmap text a line at a time into a VocabularyMap.
class TextReader {
public:
  TextReader(const std::string &fileName, const PieceLookup &sourceIds,
             const PieceLookup &targetIds, VocabularyMap &out, VmapSkips &skips)
      : fileName(fileName), sourceIds(sourceIds), targetIds(targetIds),
        out(out), skips(skips) {}

  bool line(std::string_view text, size_t number) {
    lineNumber = number;
    if (!text.empty() && text.back() == '\r')
      text.remove_suffix(1);
    if (text.empty())
      return true;
    size_t tab = text.find('\t');
    if (tab == std::string_view::npos)
      return fail("no TAB between the source n-gram and its target pieces");
    if (text.find('\t', tab + 1) != std::string_view::npos)
      return fail("more than one TAB: a line is 'SOURCE PIECES<TAB>TARGET "
                  "PIECES'");
    std::u32string key;
    if (!sourceKey(splitSpaces(text.substr(0, tab)), key))
      return true;
    std::vector<int32_t> targets;
    for (std::string_view piece : splitSpaces(text.substr(tab + 1)))
      if (!target(piece, targets))
        return false;
    out.add(std::move(key), std::move(targets));
    return true;
  }

  std::string error;

private:
  std::string where() const {
    return fileName + ":" + std::to_string(lineNumber) + ": ";
  }
  bool fail(const std::string &message) {
    error = where() + message;
    return false;
  }
  void skipped(std::string_view piece) {
    if (skips.first.empty())
      skips.first = where() + "'" + std::string(piece) + "'";
  }
  /// False, the rule skipped, when a piece is not in the source vocabulary.
  bool sourceKey(const std::vector<std::string_view> &pieces,
                 std::u32string &key) {
    for (std::string_view piece : pieces) {
      int32_t id = sourceIds(piece);
      if (id < 0) {
        skipped(piece);
        ++skips.sourceRules;
        return false;
      }
      key.push_back(char32_t(id));
    }
    return true;
  }
  bool target(std::string_view piece, std::vector<int32_t> &targets) {
    ++skips.targetPiecesRead;
    int32_t id = targetIds(piece);
    if (id < 0) {
      skipped(piece);
      ++skips.targetPieces;
      return true;
    }
    if (id >= out.vocabSize)
      return fail("the target piece '" + std::string(piece) + "' has id " +
                  std::to_string(id) + ", outside the model's vocabulary of " +
                  std::to_string(out.vocabSize));
    targets.push_back(id);
    return true;
  }

  const std::string &fileName;
  const PieceLookup &sourceIds, &targetIds;
  VocabularyMap &out;
  VmapSkips &skips;
  size_t lineNumber = 0;
};

/// Reads the compact form, remembering where a problem was.
class CompactReader {
public:
  CompactReader(std::string_view bytes, const std::string &fileName)
      : bytes(bytes), fileName(fileName) {}

  /// The magic, the checksum (then left out of `bytes`) and the
  /// vocabulary size.
  bool header(int32_t vocabSize) {
    if (bytes.size() < sizeof kMagic ||
        std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
      return fail("not a compiled vmap (no " +
                  std::string(kMagic, sizeof kMagic) + " at its start)");
    if (bytes.size() < sizeof kMagic + 8)
      return fail("the file ends before its checksum");
    uint64_t checksum;
    std::memcpy(&checksum, bytes.data() + bytes.size() - 8, 8);
    bytes = bytes.substr(0, bytes.size() - 8);
    if (fnv1a(bytes) != checksum) {
      pos = bytes.size();
      return fail("checksum mismatch: the file is corrupt");
    }
    pos = sizeof kMagic;
    uint32_t vocab;
    if (!u32(vocab, "the vocabulary size"))
      return false;
    if (int64_t(vocab) != vocabSize) {
      pos -= 4;
      return fail("made for a target vocabulary of " + std::to_string(vocab) +
                  " tokens; the model has " + std::to_string(vocabSize));
    }
    return true;
  }

  bool rules(VocabularyMap &out) {
    uint32_t alwaysCount, ruleCount;
    if (!u32(alwaysCount, "the always-included count") ||
        !u32(ruleCount, "the rule count") ||
        !ids(alwaysCount, out.always, "the always-included tokens") ||
        !inVocabulary(out.always, out.vocabSize, "always-included token"))
      return false;
    if (std::adjacent_find(out.always.begin(), out.always.end(),
                           std::greater_equal<int32_t>()) != out.always.end())
      return fail("the always-included tokens are not sorted and unique");
    for (uint32_t r = 0; r < ruleCount; ++r)
      if (!rule(r, out))
        return false;
    if (pos != bytes.size())
      return fail("bytes after the last rule");
    return true;
  }

  std::string error;

private:
  bool rule(uint32_t index, VocabularyMap &out) {
    uint32_t n, k;
    std::vector<int32_t> source, targets;
    if (!u32(n, "a rule's n-gram length") || !u32(k, "a rule's target count"))
      return false;
    if (n == 0)
      return fail("rule " + std::to_string(index) + " has no source n-gram");
    if (!ids(n, source, "a rule's source n-gram") ||
        !ids(k, targets, "a rule's targets") ||
        !inVocabulary(targets, out.vocabSize, "target token"))
      return false;
    std::u32string key;
    for (int32_t id : source) {
      if (id < 0)
        return fail("negative source id " + std::to_string(id));
      key.push_back(char32_t(id));
    }
    out.add(std::move(key), std::move(targets));
    return true;
  }
  bool u32(uint32_t &value, const char *what) {
    if (bytes.size() - pos < 4)
      return fail(std::string("the file ends before ") + what);
    std::memcpy(&value, bytes.data() + pos, 4);
    pos += 4;
    return true;
  }
  bool ids(size_t count, std::vector<int32_t> &out, const char *what) {
    if (count > (bytes.size() - pos) / 4)
      return fail(std::string(what) + ": " + std::to_string(count) +
                  " ids run past the end of the file");
    out.resize(count);
    if (count)
      std::memcpy(out.data(), bytes.data() + pos, count * 4);
    pos += count * 4;
    return true;
  }
  bool inVocabulary(const std::vector<int32_t> &ids, int32_t vocabSize,
                    const char *what) {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= vocabSize) {
        pos -= (ids.size() - i) * 4; // the message points at the id
        return fail(std::string(what) + " " + std::to_string(ids[i]) +
                    " is outside the vocabulary of " +
                    std::to_string(vocabSize));
      }
    return true;
  }
  bool fail(const std::string &message) {
    error = fileName + ": offset " + std::to_string(pos) + ": " + message;
    return false;
  }

  std::string_view bytes;
  const std::string &fileName;
  size_t pos = 0;
};

} // namespace vmap_detail

/// Reads vmap text from `fileName` into `out` with the model's
/// vocabularies (`targetVocabSize` ids). False with `error` naming the
/// file and line for a line that is not a rule, a target id beyond the
/// model, no target pieces at all, or most target pieces unknown.
inline bool parseVmap(std::string_view text, const std::string &fileName,
                      const PieceLookup &sourceIds,
                      const PieceLookup &targetIds, int32_t targetVocabSize,
                      VocabularyMap &out, VmapSkips &skips,
                      std::string &error) {
  out = VocabularyMap();
  out.vocabSize = targetVocabSize;
  skips = VmapSkips();
  vmap_detail::TextReader reader(fileName, sourceIds, targetIds, out, skips);
  size_t number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    if (!reader.line(text.substr(start, end - start), ++number)) {
      error = reader.error;
      return false;
    }
    start = end + 1;
  }
  if (skips.targetPiecesRead == 0) {
    error = fileName + ": no target pieces: a vmap's lines are 'SOURCE "
                       "PIECES<TAB>TARGET PIECES'";
    return false;
  }
  if (skips.targetPieces * 2 > skips.targetPiecesRead) {
    error = fileName + ": " + std::to_string(skips.targetPieces) + " of " +
            std::to_string(skips.targetPiecesRead) +
            " target pieces are not in the model's target vocabulary "
            "(first: " +
            skips.first + "): the map was made for another vocabulary";
    return false;
  }
  return true;
}

/// The compact form of `map`; rules in key order, so that the same map
/// gives the same bytes.
inline std::string serializeVmap(const VocabularyMap &map) {
  std::string bytes(vmap_detail::kMagic, sizeof vmap_detail::kMagic);
  auto u32 = [&](uint32_t value) {
    bytes.append(reinterpret_cast<const char *>(&value), 4);
  };
  auto ids = [&](const std::vector<int32_t> &values) {
    bytes.append(reinterpret_cast<const char *>(values.data()),
                 values.size() * 4);
  };
  u32(uint32_t(map.vocabSize));
  u32(uint32_t(map.always.size()));
  u32(uint32_t(map.rules.size()));
  ids(map.always);
  std::vector<const std::u32string *> keys;
  for (const auto &rule : map.rules)
    keys.push_back(&rule.first);
  std::sort(keys.begin(), keys.end(),
            [](const auto *x, const auto *y) { return *x < *y; });
  for (const std::u32string *key : keys) {
    const std::vector<int32_t> &targets = map.rules.at(*key);
    u32(uint32_t(key->size()));
    u32(uint32_t(targets.size()));
    for (char32_t id : *key)
      u32(uint32_t(id));
    ids(targets);
  }
  uint64_t checksum = vmap_detail::fnv1a(bytes);
  bytes.append(reinterpret_cast<const char *>(&checksum), 8);
  return bytes;
}

/// Reads the compact form: false with `error` naming the file and the
/// byte offset where it is corrupt, or the vocabulary size when it was
/// made for another model.
inline bool deserializeVmap(std::string_view bytes, const std::string &fileName,
                            int32_t targetVocabSize, VocabularyMap &out,
                            std::string &error) {
  out = VocabularyMap();
  out.vocabSize = targetVocabSize;
  vmap_detail::CompactReader reader(bytes, fileName);
  if (reader.header(targetVocabSize) && reader.rules(out))
    return true;
  error = reader.error;
  return false;
}

} // namespace tfm_runtime

#endif // TFM_RUNTIME_VMAP_H
