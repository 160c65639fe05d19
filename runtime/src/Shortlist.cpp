//===- Shortlist.cpp - The target tokens a batch may produce ----*- C++ -*-===//
//
// The compact form, little-endian (as the weights file):
//
//   "TFMVMAP1"                        magic and version, 8 bytes
//   u32 vocabulary size               the model's target vocabulary
//   u32 always count, u32 rule count
//   i32 x always count                sorted
//   rule count x { u32 n, u32 k, i32 x n source ids, i32 x k target ids }
//   u64 FNV-1a of every byte before it
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Shortlist.h"

#include <algorithm>
#include <cstring>

using namespace tfm_runtime;

namespace {

constexpr char kMagic[8] = {'T', 'F', 'M', 'V', 'M', 'A', 'P', '1'};

/// Most target pieces unknown: the map was made for another vocabulary.
bool mostlyUnknown(const VmapSkips &skips) {
  return skips.targetPieces * 2 > skips.targetPiecesRead;
}

std::vector<std::string_view> splitSpaces(std::string_view text) {
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

void sortUnique(std::vector<int32_t> &ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

uint64_t fnv1a(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

/// One line of vmap text being read, for messages.
struct VmapLine {
  const std::string &fileName;
  size_t number;
  std::string where() const {
    return fileName + ":" + std::to_string(number) + ": ";
  }
};

/// Reads the compact form, remembering where a problem was.
class Reader {
public:
  Reader(std::string_view bytes, const std::string &fileName)
      : bytes(bytes), fileName(fileName) {}

  bool u32(uint32_t &out, const char *what) {
    if (!has(4, what))
      return false;
    std::memcpy(&out, bytes.data() + pos, 4);
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
  bool fail(const std::string &message) {
    error = fileName + ": offset " + std::to_string(pos) + ": " + message;
    return false;
  }

  std::string_view bytes;
  const std::string &fileName;
  size_t pos = 0;
  std::string error;

private:
  bool has(size_t n, const char *what) {
    if (bytes.size() - pos >= n)
      return true;
    return fail(std::string("the file ends before ") + what);
  }
};

/// The ids of `pieces`, or an empty vector and `missing` set to the first
/// piece `lookup` lacks.
std::u32string sourceKey(const std::vector<std::string_view> &pieces,
                         const PieceLookup &lookup, std::string_view &missing) {
  std::u32string key;
  for (std::string_view piece : pieces) {
    int32_t id = lookup(piece);
    if (id < 0) {
      missing = piece;
      return {};
    }
    key.push_back(char32_t(id));
  }
  return key;
}

bool checkIds(Reader &in, const std::vector<int32_t> &ids, int32_t vocabSize,
              const char *what) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocabSize) {
      in.pos -= (ids.size() - i) * 4; // the message points at the id
      return in.fail(std::string(what) + " " + std::to_string(ids[i]) +
                     " is outside the vocabulary of " +
                     std::to_string(vocabSize));
    }
  return true;
}

/// What the compact form holds, as read.
struct CompactRules {
  uint32_t alwaysCount = 0, ruleCount = 0;
  std::vector<int32_t> always;
  std::vector<std::pair<std::u32string, std::vector<int32_t>>> rules;
};

/// The magic, the checksum (then left out of `in`) and the counts.
bool readHeader(Reader &in, int32_t vocabSize, CompactRules &read) {
  std::string_view bytes = in.bytes;
  if (bytes.size() < sizeof kMagic ||
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return in.fail("not a compiled vmap (no " +
                   std::string(kMagic, sizeof kMagic) + " at its start)");
  if (bytes.size() < sizeof kMagic + 8)
    return in.fail("the file ends before its checksum");
  uint64_t checksum;
  std::memcpy(&checksum, bytes.data() + bytes.size() - 8, 8);
  in.bytes = bytes.substr(0, bytes.size() - 8);
  if (fnv1a(in.bytes) != checksum) {
    in.pos = in.bytes.size();
    return in.fail("checksum mismatch: the file is corrupt");
  }
  in.pos = sizeof kMagic;
  uint32_t vocab;
  if (!in.u32(vocab, "the vocabulary size"))
    return false;
  if (int64_t(vocab) != vocabSize) {
    in.pos -= 4;
    return in.fail("made for a target vocabulary of " + std::to_string(vocab) +
                   " tokens; the model has " + std::to_string(vocabSize));
  }
  return in.u32(read.alwaysCount, "the always-included count") &&
         in.u32(read.ruleCount, "the rule count");
}

bool readAlways(Reader &in, int32_t vocabSize, CompactRules &read) {
  if (!in.ids(read.alwaysCount, read.always, "the always-included tokens") ||
      !checkIds(in, read.always, vocabSize, "always-included token"))
    return false;
  if (!std::is_sorted(read.always.begin(), read.always.end()))
    return in.fail("the always-included tokens are not sorted");
  return true;
}

bool readRules(Reader &in, int32_t vocabSize, CompactRules &read) {
  for (uint32_t r = 0; r < read.ruleCount; ++r) {
    uint32_t n, k;
    std::vector<int32_t> source, targets;
    if (!in.u32(n, "a rule's n-gram length") ||
        !in.u32(k, "a rule's target count"))
      return false;
    if (n == 0)
      return in.fail("rule " + std::to_string(r) + " has no source n-gram");
    if (!in.ids(n, source, "a rule's source n-gram") ||
        !in.ids(k, targets, "a rule's targets") ||
        !checkIds(in, targets, vocabSize, "target token"))
      return false;
    std::u32string key;
    for (int32_t id : source) {
      if (id < 0)
        return in.fail("negative source id " + std::to_string(id));
      key.push_back(char32_t(id));
    }
    read.rules.emplace_back(std::move(key), std::move(targets));
  }
  if (in.pos != in.bytes.size())
    return in.fail("bytes after the last rule");
  return true;
}

} // namespace

std::string VmapSkips::warning(const std::string &fileName) const {
  if (targetPieces == 0 && sourceRules == 0)
    return "";
  return fileName + ": skipped " + std::to_string(targetPieces) +
         " target pieces not in the model's target vocabulary and " +
         std::to_string(sourceRules) +
         " rules whose source n-gram has a piece not in its source "
         "vocabulary (first: " +
         first + ")";
}

bool Shortlist::addRule(std::u32string key, std::vector<int32_t> targets) {
  sortUnique(targets);
  if (key.empty()) {
    alwaysIds = std::move(targets);
    return true;
  }
  longest = std::max(longest, key.size());
  // A repeated n-gram replaces the earlier line, as in CTranslate2.
  rules[std::move(key)] = std::move(targets);
  return true;
}

bool Shortlist::parseVmap(std::string_view text, const std::string &fileName,
                          const PieceLookup &sourceIds,
                          const PieceLookup &targetIds, int32_t targetVocabSize,
                          Shortlist &out, VmapSkips &skips,
                          std::string &error) {
  out = Shortlist();
  out.vocabSize = targetVocabSize;
  skips = VmapSkips();
  size_t lines = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    VmapLine at{fileName, ++lines};
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty())
      continue;
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
      error = at.where() + "no TAB between the source n-gram and its "
                           "target pieces";
      return false;
    }
    if (line.find('\t', tab + 1) != std::string_view::npos) {
      error = at.where() + "more than one TAB: a line is 'SOURCE "
                           "PIECES<TAB>TARGET PIECES'";
      return false;
    }
    std::string_view missing;
    std::u32string key =
        sourceKey(splitSpaces(line.substr(0, tab)), sourceIds, missing);
    if (!missing.empty()) {
      if (skips.first.empty())
        skips.first = at.where() + "'" + std::string(missing) + "'";
      ++skips.sourceRules;
      continue;
    }
    std::vector<int32_t> targets;
    for (std::string_view piece : splitSpaces(line.substr(tab + 1))) {
      ++skips.targetPiecesRead;
      int32_t id = targetIds(piece);
      if (id < 0) {
        if (skips.first.empty())
          skips.first = at.where() + "'" + std::string(piece) + "'";
        ++skips.targetPieces;
        continue;
      }
      if (id >= targetVocabSize) {
        error = at.where() + "the target piece '" + std::string(piece) +
                "' has id " + std::to_string(id) +
                ", outside the model's vocabulary of " +
                std::to_string(targetVocabSize);
        return false;
      }
      targets.push_back(id);
    }
    out.addRule(std::move(key), std::move(targets));
  }
  if (skips.targetPiecesRead == 0) {
    error = fileName + ": no target pieces: a vmap's lines are 'SOURCE "
                       "PIECES<TAB>TARGET PIECES'";
    return false;
  }
  if (mostlyUnknown(skips)) {
    error = fileName + ": " + std::to_string(skips.targetPieces) + " of " +
            std::to_string(skips.targetPiecesRead) +
            " target pieces are not in the model's target vocabulary "
            "(first: " +
            skips.first + "): the map was made for another vocabulary";
    return false;
  }
  return true;
}

std::string Shortlist::serialize() const {
  std::string bytes(kMagic, sizeof kMagic);
  auto u32 = [&](uint32_t value) {
    bytes.append(reinterpret_cast<const char *>(&value), 4);
  };
  auto ids = [&](const int32_t *data, size_t count) {
    bytes.append(reinterpret_cast<const char *>(data), count * 4);
  };
  u32(uint32_t(vocabSize));
  u32(uint32_t(alwaysIds.size()));
  u32(uint32_t(rules.size()));
  ids(alwaysIds.data(), alwaysIds.size());
  // Rules in key order, so that the same map gives the same bytes.
  std::vector<const std::u32string *> keys;
  for (const auto &rule : rules)
    keys.push_back(&rule.first);
  std::sort(keys.begin(), keys.end(),
            [](const auto *x, const auto *y) { return *x < *y; });
  for (const std::u32string *key : keys) {
    const std::vector<int32_t> &targets = rules.at(*key);
    u32(uint32_t(key->size()));
    u32(uint32_t(targets.size()));
    for (char32_t id : *key)
      u32(uint32_t(id));
    ids(targets.data(), targets.size());
  }
  uint64_t checksum = fnv1a(bytes);
  bytes.append(reinterpret_cast<const char *>(&checksum), 8);
  return bytes;
}

bool Shortlist::deserialize(std::string_view bytes, const std::string &fileName,
                            int32_t targetVocabSize, Shortlist &out,
                            std::string &error) {
  out = Shortlist();
  out.vocabSize = targetVocabSize;
  Reader in(bytes, fileName);
  CompactRules read;
  if (!readHeader(in, targetVocabSize, read) ||
      !readAlways(in, targetVocabSize, read) ||
      !readRules(in, targetVocabSize, read)) {
    error = in.error;
    return false;
  }
  out.alwaysIds = std::move(read.always);
  for (auto &[key, targets] : read.rules)
    out.addRule(std::move(key), std::move(targets));
  return true;
}

void Shortlist::alwaysInclude(const std::vector<int32_t> &ids) {
  for (int32_t id : ids)
    if (id >= 0 && id < vocabSize)
      alwaysIds.push_back(id);
  sortUnique(alwaysIds);
}

void Shortlist::collect(const std::vector<int32_t> &ids,
                        std::vector<uint8_t> &seen,
                        std::vector<int32_t> &out) const {
  for (int32_t id : ids)
    if (id >= 0 && id < vocabSize && !seen[id]) {
      seen[id] = 1;
      out.push_back(id);
    }
}

std::vector<int32_t>
Shortlist::candidates(const std::vector<const int32_t *> &sources,
                      const std::vector<int32_t> &lengths,
                      const std::vector<std::vector<int32_t>> &prefixes) const {
  std::vector<uint8_t> seen(vocabSize, 0);
  std::vector<int32_t> out;
  collect(alwaysIds, seen, out);
  for (const std::vector<int32_t> &prefix : prefixes)
    collect(prefix, seen, out);
  std::u32string key;
  for (size_t s = 0; s < sources.size(); ++s) {
    const int32_t *ids = sources[s];
    size_t length = size_t(std::max(lengths[s], 0));
    // Every n-gram from every position, as CTranslate2 looks them up.
    for (size_t i = 0; i < length; ++i) {
      key.clear();
      for (size_t n = 1; n <= longest && i + n <= length; ++n) {
        key.push_back(char32_t(ids[i + n - 1]));
        auto rule = rules.find(key);
        if (rule != rules.end())
          collect(rule->second, seen, out);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}
