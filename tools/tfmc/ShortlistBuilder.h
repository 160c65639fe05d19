//===- ShortlistBuilder.h - A vmap from a parallel corpus -------*- C++ -*-===//
//
// `tfmc shortlist`: counts how often source n-grams and target pieces occur
// in the same sentence pair of a tokenized parallel corpus and writes the
// vocabulary map (vmap) the translator's shortlist reads
// (runtime/src/Shortlist.h):
//
//   - always included (the line with an empty source side): the
//     `frequent` target pieces found in the most pairs;
//   - for each source piece s seen in at least `minCount` pairs: the
//     `topK` target pieces t, besides the always-included ones, of highest
//     p(t|s) = count(s,t) / count(s), where count counts pairs, keeping
//     those with p(t|s) >= `minProbability`;
//   - with `ngrams` 2, for each source bigram seen in at least
//     `minNgramCount` pairs, its top K among the pieces that its two
//     pieces' lines and the always-included ones lack.
//
// The always-included pieces are left out of the ranking because pair
// co-occurrence favours frequent pieces: without that, the top K of every
// source piece would begin with the same punctuation and function words.
// docs/Shortlist.md gives the reasons for the defaults.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TFMC_SHORTLISTBUILDER_H
#define TFM_TOOLS_TFMC_SHORTLISTBUILDER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfm_tools {

struct ShortlistOptions {
  unsigned topK = 100;
  unsigned frequent = 100;
  double minProbability = 0.0;
  unsigned minCount = 1;
  unsigned ngrams = 1;
  unsigned minNgramCount = 5;
};

/// What a built vmap holds, for the summary tfmc prints.
struct ShortlistSummary {
  size_t pairs = 0, unigramRules = 0, bigramRules = 0, targetEntries = 0;
};

class ShortlistBuilder {
public:
  explicit ShortlistBuilder(ShortlistOptions options) : options(options) {}

  /// Counts one sentence pair, given as pieces.
  void addPair(llvm::ArrayRef<llvm::StringRef> source,
               llvm::ArrayRef<llvm::StringRef> target);

  /// Writes the vmap, sorted: the always-included line, then a line per
  /// source n-gram in the order of its pieces' text; each line's targets
  /// by p(t|s), highest first (ties: the piece's text).
  ShortlistSummary write(llvm::raw_ostream &os) const;

private:
  /// Pieces of one side as dense ids.
  struct Pieces {
    llvm::StringMap<uint32_t> ids;
    std::vector<std::string> text;
    uint32_t intern(llvm::StringRef piece);
  };
  /// Pair counts of source keys (pieces or bigrams) and their targets.
  struct Cooccurrences {
    Pieces keys;
    std::vector<uint32_t> keyPairs;
    llvm::DenseMap<uint64_t, uint32_t> withTarget; // key << 32 | target
    void add(uint32_t key, llvm::ArrayRef<uint32_t> targets);
  };

  /// Whether a target is left out of a key's ranking.
  using Excluded = llvm::function_ref<bool(uint32_t key, uint32_t target)>;

  std::vector<uint32_t> alwaysIncluded() const;
  /// For each key seen in at least `minPairs` pairs, its top K targets.
  std::vector<std::vector<uint32_t>> rankAll(const Cooccurrences &counts,
                                             unsigned minPairs,
                                             const Excluded &excluded) const;
  void writeLine(llvm::raw_ostream &os, llvm::StringRef key,
                 llvm::ArrayRef<uint32_t> targets) const;

  ShortlistOptions options;
  size_t pairs = 0;
  Pieces targetPieces;
  std::vector<uint32_t> targetPairs; // pairs each target piece is in
  Cooccurrences unigrams, bigrams;
};

/// Builds the vmap of the parallel corpus `sourcePath` / `targetPath`
/// (pieces separated by spaces, a sentence a line, as many lines in each)
/// into `os`; an error names the file and what is wrong with it.
llvm::Expected<ShortlistSummary> buildShortlist(llvm::StringRef sourcePath,
                                                llvm::StringRef targetPath,
                                                const ShortlistOptions &options,
                                                llvm::raw_ostream &os);

} // namespace tfm_tools

#endif // TFM_TOOLS_TFMC_SHORTLISTBUILDER_H
