//===- Shortlist.h - The target tokens a batch may produce ------*- C++ -*-===//
//
// A model's vocabulary shortlist: its vocabulary map (tfm/abi/Vmap.h, the
// formats and the n-gram lookup) with the special tokens every batch gets.
// For a batch, candidates() is the sorted union of the targets of the
// sentences' source n-grams, the always-included tokens, the special
// tokens and any target prefix: the output projection, the log-softmax and
// the search then run over those tokens only.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_SHORTLIST_H
#define TFM_RUNTIME_SHORTLIST_H

#include "tfm/abi/Vmap.h"
#include "tfm/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfm_runtime {

/// The tokens a shortlist always includes for a model: EOS, padding, the
/// decoder's start and the forced first and last tokens.
inline std::vector<int32_t> specialTokens(const tfm_model_config &cfg) {
  return {int32_t(cfg.eos_token_id), int32_t(cfg.pad_token_id),
          int32_t(cfg.decoder_start_token_id), int32_t(cfg.forced_bos_token_id),
          int32_t(cfg.forced_eos_token_id)};
}

class Shortlist {
public:
  explicit Shortlist(VocabularyMap map) : map(std::move(map)) {}

  /// The shortlist stored with the model at `modelPath` (beside the
  /// weights or embedded; tfmc compile --vmap): kVmapFileName, or
  /// kVmapTextFileName read with the model's tokenizer; none when it was
  /// compiled without one. An error names the file and the offset or
  /// line. What the text form skipped goes to `warning`.
  static tfm_status load(const std::string &modelPath,
                         const tfm_model_config &cfg,
                         std::optional<Shortlist> &out, std::string &warning);

  /// A vmap text file (a translator's --vmap), its pieces given ids by
  /// `tokenizer` (source and target). What it skipped goes to `warning`.
  static tfm_status read(const std::string &path,
                         const tfm_tokenizer *tokenizer,
                         int32_t targetVocabSize, std::optional<Shortlist> &out,
                         std::string &warning);

  /// Adds tokens every batch gets: EOS, pad, <unk>, the decoder's start
  /// token, a forced first token, language tokens (ids outside the
  /// vocabulary are left out).
  void alwaysInclude(const std::vector<int32_t> &ids);

  /// The sorted target ids a batch may produce: the targets of the source
  /// n-grams of `sources[i]` (`lengths[i]` ids each), the always-included
  /// and special tokens and every id of `prefixes` (forced target
  /// prefixes; ids outside the vocabulary are left out).
  std::vector<int32_t>
  candidates(const std::vector<const int32_t *> &sources,
             const std::vector<int32_t> &lengths,
             const std::vector<std::vector<int32_t>> &prefixes = {}) const {
    return map.candidates(sources, lengths, prefixes);
  }

  const VocabularyMap &vocabularyMap() const { return map; }

private:
  /// Vmap text `text` from `name`, its pieces given ids by `tokenizer`.
  static tfm_status parse(std::string_view text, const std::string &name,
                          const tfm_tokenizer *tokenizer,
                          int32_t targetVocabSize,
                          std::optional<Shortlist> &out, std::string &warning);

  VocabularyMap map;
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_SHORTLIST_H
