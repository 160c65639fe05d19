//===- Shortlist.h - The target tokens a batch may produce ------*- C++ -*-===//
//
// A vocabulary map ("vmap", the format CTranslate2's users have): each line
//
//   src_1 ... src_N<TAB>tgt_1 ... tgt_K
//
// says that a source n-gram of pieces may be translated with the target
// pieces listed; a line with an empty source side lists the pieces always
// included. For a batch, the shortlist is the sorted union of the targets
// of every source n-gram (n up to the longest in the file) of every
// sentence, the always-included pieces, the model's special tokens and any
// target prefix: the output projection, the log-softmax and the search
// then run over those tokens only.
//
// Two forms: the text above, read with the model's vocabularies (tfmc
// compile --vmap checks it at compile time; a translator's --vmap reads it
// at run time), and a compact binary form of ids that tfmc stores beside
// the weights (kShortlistFileName), which needs no vocabulary to read.
// Plain C++ without exceptions, so that tfmc compiles this file too.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_SHORTLIST_H
#define TFM_RUNTIME_SHORTLIST_H

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tfm_runtime {

/// The compact form's name among a compiled model's files.
inline constexpr const char kShortlistFileName[] = "vmap.bin";

/// A vocabulary's id for a piece, or -1 when it does not have the piece.
using PieceLookup = std::function<int32_t(std::string_view piece)>;

/// What a vmap held that the model's vocabularies lack. CTranslate2 maps
/// such a target piece to <unk> (always a candidate), so it adds nothing:
/// it is skipped and counted, as is a rule whose source n-gram has a piece
/// the source vocabulary lacks (the tokenizer never produces it).
struct VmapSkips {
  size_t targetPieces = 0, targetPiecesRead = 0;
  size_t sourceRules = 0;
  /// "FILE:LINE: 'piece'", the first piece skipped.
  std::string first;

  /// The warning to print, empty when nothing was skipped.
  std::string warning(const std::string &fileName) const;
};

class Shortlist {
public:
  /// Reads vmap text from `fileName` into `out` with the model's
  /// vocabularies (`targetVocabSize` ids). False with `error` naming the
  /// file and line for a line that is not a rule, and when most target
  /// pieces are missing from the vocabulary (a map for another model).
  static bool parseVmap(std::string_view text, const std::string &fileName,
                        const PieceLookup &sourceIds,
                        const PieceLookup &targetIds, int32_t targetVocabSize,
                        Shortlist &out, VmapSkips &skips, std::string &error);

  /// The compact form (kShortlistFileName), and back: false with `error`
  /// naming the file and the byte offset where it is corrupt, or the
  /// vocabulary size when it was made for another model.
  std::string serialize() const;
  static bool deserialize(std::string_view bytes, const std::string &fileName,
                          int32_t targetVocabSize, Shortlist &out,
                          std::string &error);

  /// Adds tokens every batch gets: EOS, pad, <unk>, the decoder's start
  /// token, a forced first token, language tokens.
  void alwaysInclude(const std::vector<int32_t> &ids);

  /// The sorted target ids a batch may produce: the targets of the source
  /// n-grams of `sources[i]` (`lengths[i]` ids each), the always-included
  /// ones and every id of `prefixes` (forced target prefixes; ids outside
  /// the vocabulary are left out).
  std::vector<int32_t>
  candidates(const std::vector<const int32_t *> &sources,
             const std::vector<int32_t> &lengths,
             const std::vector<std::vector<int32_t>> &prefixes = {}) const;

  int32_t vocabularySize() const { return vocabSize; }
  size_t ruleCount() const { return rules.size(); }
  size_t longestNgram() const { return longest; }
  const std::vector<int32_t> &always() const { return alwaysIds; }

private:
  bool addRule(std::u32string key, std::vector<int32_t> targets);
  void collect(const std::vector<int32_t> &ids, std::vector<uint8_t> &seen,
               std::vector<int32_t> &out) const;

  int32_t vocabSize = 0;
  size_t longest = 0;
  /// Sorted and unique.
  std::vector<int32_t> alwaysIds;
  /// Source n-gram (its ids as char32_t) -> sorted unique target ids.
  std::unordered_map<std::u32string, std::vector<int32_t>> rules;
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_SHORTLIST_H
