//===- LogitsRules.h - Hugging Face's rules on a row of logits --*- C++ -*-===//
//
// What shapes a row's logits before the search chooses from them, as
// Hugging Face's logits processors (CTranslate2's LogitsProcessors) do:
// the forced tokens (a target prefix, forced BOS through it, the forced
// EOS at the length limit), the bans (padding, EOS before --min-length or
// with --suppress-eos, bad words, --no-repeat-ngram-size) and the
// repetition penalty. A rule sees a row's input as Hugging Face does: the
// decoder start token, then the tokens generated.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_LOGITSRULES_H
#define TFM_RUNTIME_LOGITSRULES_H

#include "runtime/src/OutputRows.h"
#include "runtime/src/Search.h"
#include "tfm/runtime.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

namespace tfm_runtime {

/// The tokens that would repeat an n-gram of `input` (a hypothesis's
/// decoder input: start token, then its tokens), sorted: every t such that
/// its last n - 1 tokens followed by t occur in it (Hugging Face's
/// NoRepeatNGramLogitsProcessor; none while input is shorter than n - 1).
inline std::vector<int32_t> repeatedNgramBans(const std::vector<int32_t> &input,
                                              int32_t n);

/// A row's rules at a step, in its logits' columns.
struct RowRules {
  std::vector<int32_t> banned; ///< sorted
  /// Sorted, none banned: the tokens whose log p the search penalizes
  /// (beam search); empty when the penalty went on the logits.
  std::vector<int32_t> penalized;
  /// The penalty changed some of the row's logits: the log-sum-exp terms
  /// decode_step wrote for them no longer hold.
  bool logitsChanged = false;
};

class LogitsRules {
public:
  /// `penaltyOnLogits`: the repetition penalty changes the logits (greedy
  /// search and sampling, as Hugging Face's processor does before the
  /// softmax), else the log-probabilities of the tokens that can be
  /// chosen (beam search, whose processors see log p).
  LogitsRules(const tfm_model_config &cfg,
              const std::vector<std::vector<int32_t>> &badWords,
              const tfm_search_options &options, bool penaltyOnLogits)
      : cfg(cfg), badWords(badWords), options(options),
        penaltyOnLogits(penaltyOnLogits) {}

  /// Whether a hypothesis may end at `step` (--min-length,
  /// --suppress-eos).
  bool eosAllowed(int64_t step) const {
    return !options.suppress_eos && step + 1 > options.min_length;
  }
  /// The token a hypothesis must take at `step`, or -1: its sentence's
  /// `prefix` (a target prefix or the forced BOS) while shorter, then the
  /// forced EOS at the sentence's `maxLength`.
  int32_t forcedToken(const std::vector<int32_t> &prefix, int64_t maxLength,
                      int64_t step) const;

  /// The rules of a row whose hypothesis generated `generated`, in the
  /// columns of `outputRows`; with the penalty on the logits, applies it
  /// to the row's `logits`.
  RowRules applyToRow(float *logits, const std::vector<int32_t> &generated,
                      bool eosAllowed, const OutputRows &outputRows) const;

  /// The decoder start token, then `generated`.
  std::vector<int32_t> rowInput(const std::vector<int32_t> &generated) const;
  /// The tokens a row whose input is `input` must not take next, sorted:
  /// padding, EOS when `eosAllowed` is false, the last token of every bad
  /// word whose other tokens end the input (as Hugging Face's
  /// NoBadWordsLogitsProcessor bans them), and those that would repeat an
  /// n-gram.
  std::vector<int32_t> bannedTokens(const std::vector<int32_t> &input,
                                    bool eosAllowed) const;
  /// The tokens of `input`, sorted, when they are penalized; else none.
  std::vector<int32_t> penalizedTokens(const std::vector<int32_t> &input) const;

private:
  /// The tokens of `tokens` (sorted) that `banned` (sorted) does not hold.
  static std::vector<int32_t> withoutBanned(const std::vector<int32_t> &tokens,
                                            const std::vector<int32_t> &banned);

  const tfm_model_config &cfg;
  const std::vector<std::vector<int32_t>> &badWords;
  const tfm_search_options options;
  const bool penaltyOnLogits;
};

inline std::vector<int32_t> repeatedNgramBans(const std::vector<int32_t> &input,
                                              int32_t n) {
  std::vector<int32_t> bans;
  size_t length = input.size(), context = size_t(n) - 1;
  if (n < 1 || length < context)
    return bans;
  // Every n-gram start i whose first n - 1 tokens are the input's last.
  for (size_t i = 0; i + context < length; ++i)
    if (std::equal(input.begin() + i, input.begin() + i + context,
                   input.end() - context))
      bans.push_back(input[i + context]);
  std::sort(bans.begin(), bans.end());
  bans.erase(std::unique(bans.begin(), bans.end()), bans.end());
  return bans;
}

/// A sentence at its length limit ends with the forced EOS (if the
/// checkpoint names one), as Hugging Face's ForcedEOSTokenLogitsProcessor
/// ends it; it overrides --min-length, and --suppress-eos turns it off.
inline int32_t LogitsRules::forcedToken(const std::vector<int32_t> &prefix,
                                        int64_t maxLength, int64_t step) const {
  if (size_t(step) < prefix.size())
    return prefix[step];
  bool forceEos = cfg.forced_eos_token_id >= 0 && !options.suppress_eos;
  if (forceEos && step + 1 >= maxLength)
    return int32_t(cfg.forced_eos_token_id);
  return -1;
}

inline std::vector<int32_t>
LogitsRules::withoutBanned(const std::vector<int32_t> &tokens,
                           const std::vector<int32_t> &banned) {
  std::vector<int32_t> kept;
  std::set_difference(tokens.begin(), tokens.end(), banned.begin(),
                      banned.end(), std::back_inserter(kept));
  return kept;
}

/// Banned tokens keep their penalized logits: they stay in the
/// normalizer.
inline RowRules LogitsRules::applyToRow(float *logits,
                                        const std::vector<int32_t> &generated,
                                        bool eosAllowed,
                                        const OutputRows &outputRows) const {
  std::vector<int32_t> input = rowInput(generated);
  RowRules rules;
  rules.banned = outputRows.columnsOf(bannedTokens(input, eosAllowed));
  rules.penalized = outputRows.columnsOf(penalizedTokens(input));
  if (!penaltyOnLogits) {
    rules.penalized = withoutBanned(rules.penalized, rules.banned);
    return rules;
  }
  rules.logitsChanged = !rules.penalized.empty();
  for (int32_t t : rules.penalized)
    logits[t] = penalize(logits[t], options.repetition_penalty);
  rules.penalized.clear();
  return rules;
}

inline std::vector<int32_t>
LogitsRules::rowInput(const std::vector<int32_t> &generated) const {
  std::vector<int32_t> input = {int32_t(cfg.decoder_start_token_id)};
  input.insert(input.end(), generated.begin(), generated.end());
  return input;
}

inline std::vector<int32_t>
LogitsRules::bannedTokens(const std::vector<int32_t> &input,
                          bool eosAllowed) const {
  std::vector<int32_t> banned = {int32_t(cfg.pad_token_id)};
  if (!eosAllowed)
    banned.push_back(int32_t(cfg.eos_token_id));
  size_t inputLength = input.size();
  for (const std::vector<int32_t> &word : badWords) {
    size_t context = word.size() - 1;
    if (context > inputLength)
      continue;
    if (std::equal(word.begin(), word.end() - 1, input.end() - context))
      banned.push_back(word.back());
  }
  if (options.no_repeat_ngram_size > 0) {
    std::vector<int32_t> repeats =
        repeatedNgramBans(input, options.no_repeat_ngram_size);
    banned.insert(banned.end(), repeats.begin(), repeats.end());
  }
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  return banned;
}

inline std::vector<int32_t>
LogitsRules::penalizedTokens(const std::vector<int32_t> &input) const {
  if (options.repetition_penalty == 1.0f)
    return {};
  std::vector<int32_t> seen = input;
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  return seen;
}

} // namespace tfm_runtime

#endif // TFM_RUNTIME_LOGITSRULES_H
