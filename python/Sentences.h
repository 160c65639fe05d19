//===- Sentences.h - Python sentences, prefixes and targets -----*- C++ -*-===//
//
// The sentences a call gives (str, or sequences of token ids), their target
// prefixes and the targets to score, read into token ids by the rules of
// the translator binary: invalid UTF-8 (lone surrogates) becomes U+FFFD
// and a sentence longer than the model's positions is cut, each with a
// warning (Python's `warnings`); a wrong one is a TypeError or ValueError
// naming it by its index in its list ("sentence 3", counted from 0).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PYTHON_SENTENCES_H
#define TFM_PYTHON_SENTENCES_H

#include "tfm/Client.h"
#include "tools/translator/SourceDetection.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

namespace tfm_python {

class SentenceReader {
public:
  SentenceReader(const tfm_runtime::RuntimeApi &api,
                 const tfm_model_config &config, const tfm_tokenizer *tokenizer,
                 const tfm_languages *languages);

  /// The source ids of `source` (an iterable of str or sequences of
  /// source ids), each checked, framed and cut as the translator does;
  /// `text[i]` says whether sentence i was a str. A blank sentence has no
  /// ids.
  std::vector<std::vector<int32_t>>
  sourceSentences(pybind11::handle source,
                  const tfm_language_tokens &langTokens,
                  std::vector<bool> &text);

  /// The target prefix of each of `count` sentences: `arg` is None, or a
  /// list holding for each sentence None or a sequence of target token ids
  /// or of vocabulary pieces (str).
  std::vector<std::vector<int32_t>> targetPrefixes(pybind11::handle arg,
                                                   size_t count);

  /// score_batch's targets: one per source sentence, each a str (cut by
  /// the target's SentencePiece model, after the target language's
  /// tokens, which text translations leave out) or target token ids (a
  /// last EOS dropped).
  std::vector<std::vector<int32_t>>
  scoredTargets(pybind11::handle arg, size_t count,
                const tfm_language_tokens &langTokens);

  /// The tokens of source_lang and target_lang (each checked alone first,
  /// so that an error names it); none without them or without languages.
  /// source_lang "auto" on a multilingual model: the tokens of no source
  /// language, and each text's language detected from then on (the
  /// translator's --source-lang auto).
  tfm_language_tokens languageTokens(pybind11::handle sourceArg,
                                     pybind11::handle targetArg);

  /// Whether source_lang "auto" detects each text's language.
  bool detecting() const { return detection != nullptr; }
  /// The frame of `text`'s detected language, else `fallback` with a
  /// warning naming `where`, as the translator warns.
  const tfm_language_tokens &detectedFrame(const std::string &text,
                                           const std::string &where,
                                           const tfm_language_tokens &fallback);

  /// The ids of valid UTF-8 `text` (a sentence of an HTML document),
  /// framed by `frame` and cut as a sentence is; none when it is blank.
  std::vector<int32_t> textIds(const std::string &text,
                               const std::string &where,
                               const tfm_language_tokens &frame);

private:
  void startDetection(const std::string &target);
  std::vector<int32_t> tokenIds(pybind11::handle item,
                                const std::string &where);
  std::vector<int32_t> encode(const std::string &line, const std::string &where,
                              const tfm_language_tokens &frame);
  std::vector<int32_t> targetIds(pybind11::handle item,
                                 const std::string &where,
                                 const std::string &expected, bool pieces);
  int32_t targetId(pybind11::handle token, const std::string &where);
  int32_t pieceId(const std::string &piece, const std::string &where);
  std::vector<int32_t> targetText(pybind11::handle item,
                                  const std::string &where,
                                  const tfm_language_tokens &langTokens);
  std::vector<int32_t> targetTokenIds(pybind11::handle item,
                                      const std::string &where);

  const tfm_runtime::RuntimeApi &api;
  const tfm_model_config &config;
  const tfm_tokenizer *tokenizer;
  const tfm_languages *languages;
  std::unique_ptr<tfm_translator::SourceDetection> detection;
};

} // namespace tfm_python

#endif // TFM_PYTHON_SENTENCES_H
