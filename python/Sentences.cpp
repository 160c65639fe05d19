//===- Sentences.cpp - Python sentences, prefixes and targets ---*- C++ -*-===//

#include "python/Sentences.h"

#include "python/Arguments.h"
#include "tools/common/Text.h"

namespace py = pybind11;

using namespace tfm_python;

SentenceReader::SentenceReader(const tfm_runtime::RuntimeApi &api,
                               const tfm_model_config &config,
                               const tfm_tokenizer *tokenizer,
                               const tfm_languages *languages)
    : api(api), config(config), tokenizer(tokenizer), languages(languages) {}

/// The error of `status` (not null) after `where`, freed.
static std::string statusError(const tfm_runtime::RuntimeApi &api,
                               const std::string &where, tfm_status status) {
  return where + ": " + tfm_client::takeError(api, status).what();
}

std::vector<std::vector<int32_t>>
SentenceReader::sourceSentences(py::handle source,
                                const tfm_language_tokens &langTokens,
                                std::vector<bool> &text) {
  // One str is an iterable of one-character sentences: surely a mistake.
  if (PyUnicode_Check(source.ptr()) || PyBytes_Check(source.ptr()) ||
      PyByteArray_Check(source.ptr()))
    throw py::type_error("source must be a list of sentences, found " +
                         std::string(Py_TYPE(source.ptr())->tp_name) +
                         ": put one sentence in a list");
  if (!py::isinstance<py::iterable>(source))
    throw py::type_error("source must be a list of sentences (str or "
                         "lists of token ids), found " +
                         describe(source));
  // Any iterable (a generator, a numpy array of ids), read once into a
  // list of our own: a warnings hook or an __index__ that the loop below
  // calls could change the caller's.
  auto sentences =
      py::reinterpret_steal<py::list>(PySequence_List(source.ptr()));
  if (!sentences)
    throwPythonError();

  // Source ids per sentence; none for a blank line, which gets "" (or no
  // ids for no ids, as the translator gives a blank line for a blank
  // one).
  std::vector<std::vector<int32_t>> ids(sentences.size());
  text.assign(sentences.size(), false);
  for (size_t i = 0; i < sentences.size(); ++i) {
    py::handle item = sentences[i];
    std::string where = "sentence " + std::to_string(i);
    if (PyUnicode_Check(item.ptr())) {
      text[i] = true;
      std::string line;
      if (utf8Text(item, line))
        warn(PyExc_UnicodeWarning,
             where + ": lone surrogates (invalid UTF-8), replaced by "
                     "U+FFFD as the translator does");
      ids[i] = encode(line, where,
                      detection && !tfm_tools::isBlank(line)
                          ? detectedFrame(line, where, langTokens)
                          : langTokens);
    } else if (PyBytes_Check(item.ptr()) || PyByteArray_Check(item.ptr()) ||
               PyMemoryView_Check(item.ptr())) {
      // Bytes are a sequence of ints to Python, yet no one means them as
      // token ids; and which text they are is the caller's to say.
      throw py::type_error(
          where + ": expected a str or a list of token ids, found " +
          Py_TYPE(item.ptr())->tp_name +
          ": decode it first (.decode('utf-8', 'surrogateescape') keeps "
          "invalid bytes, which are then replaced as the translator "
          "does)");
    } else if (PySequence_Check(item.ptr())) {
      if (detection)
        throw py::value_error(where + ": source_lang 'auto' detects the "
                                      "language of text: pass a str, not "
                                      "token ids");
      ids[i] = tokenIds(item, where);
    } else {
      throw py::type_error(where +
                           ": expected a str or a list of token ids, "
                           "found " +
                           describe(item));
    }
    size_t length = ids[i].size();
    if (tfm_client::cutToPositions(ids[i], config))
      warn(PyExc_UserWarning, where + ": " + std::to_string(length) +
                                  " tokens, truncated to the model's " +
                                  std::to_string(config.max_positions) +
                                  " positions");
  }

  return ids;
}

/// A sequence of token ids, checked against the vocabulary here so that
/// the error names the sentence as Python counts; EOS appended when
/// missing (the model reads sentences that end in it).
std::vector<int32_t> SentenceReader::tokenIds(py::handle item,
                                              const std::string &where) {
  // A copy, as for the sentences: __index__ could change the original.
  auto list = py::reinterpret_steal<py::list>(PySequence_List(item.ptr()));
  if (!list) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError))
      throwPythonError();
    PyErr_Clear(); // a 0-d numpy array, say
    throw py::type_error(where +
                         ": expected a str or a list of token ids, found " +
                         describe(item));
  }
  std::vector<int32_t> out;
  for (size_t k = 0; k < list.size(); ++k) {
    py::handle token = list[k];
    if (!isInteger(token))
      throw py::type_error(where + ": token " + std::to_string(k) + " is " +
                           describe(token) + "; token ids must be integers");
    std::optional<long long> id = indexValue(token);
    if (!id || *id < 0 || *id >= config.source_vocab_size)
      throw py::value_error(where + ": token id " + reprText(token) +
                            " is outside the vocabulary [0, " +
                            std::to_string(config.source_vocab_size) + ")");
    out.push_back(int32_t(*id));
  }
  if (!out.empty() && out.back() != config.eos_token_id)
    out.push_back(int32_t(config.eos_token_id));
  return out;
}

/// Source ids of a text, or none when it is blank; framed with the
/// source language's tokens where the model has languages.
std::vector<int32_t> SentenceReader::encode(const std::string &line,
                                            const std::string &where,
                                            const tfm_language_tokens &frame) {
  if (tfm_tools::isBlank(line))
    return {};
  if (!tokenizer)
    throw std::invalid_argument(
        where + ": this model has no tokenizer (source.spm, target.spm, "
                "vocab.json): pass lists of token ids");
  int32_t *ids = nullptr, length = 0;
  tfm_status status =
      api.tfm_tokenizer_encode_framed(tokenizer, languages ? &frame : nullptr,
                                      line.data(), line.size(), &ids, &length);
  if (status)
    throw std::invalid_argument(statusError(api, where, status));
  std::vector<int32_t> out(ids, ids + length);
  api.tfm_free(ids);
  return out;
}

const tfm_language_tokens &
SentenceReader::detectedFrame(const std::string &text, const std::string &where,
                              const tfm_language_tokens &fallback) {
  std::string detected;
  if (const tfm_language_tokens *frame = detection->frameOf(text, detected))
    return *frame;
  warn(PyExc_UserWarning,
       where + ": " +
           (detected.empty()
                ? std::string("no language detected")
                : "detected " + detected + ", not a language of this model") +
           ": framed as the tokenizer's default source language, as the "
           "translator's --source-lang auto does");
  return fallback;
}

std::vector<int32_t> SentenceReader::textIds(const std::string &text,
                                             const std::string &where,
                                             const tfm_language_tokens &frame) {
  std::vector<int32_t> ids = encode(text, where, frame);
  size_t length = ids.size();
  if (tfm_client::cutToPositions(ids, config))
    warn(PyExc_UserWarning, where + ": " + std::to_string(length) +
                                " tokens, truncated to the model's " +
                                std::to_string(config.max_positions) +
                                " positions");
  return ids;
}

/// `value` copied into a list (a str is no list of tokens or sentences),
/// else a TypeError: `expected`, then what was found.
static py::list listOf(py::handle value, const std::string &expected) {
  auto list = py::reinterpret_steal<py::list>(
      PyUnicode_Check(value.ptr()) ? nullptr : PySequence_List(value.ptr()));
  if (!list) {
    PyErr_Clear();
    throw py::type_error(expected + ", found " + describe(value));
  }
  return list;
}

/// `arg`, named `name`, as a list of one `entry` per `sentence` of the
/// `count` ("a prefix" per "sentence": "target_prefix has 2 entries for 3
/// sentences").
static py::list entryPerSentence(py::handle arg, const std::string &name,
                                 const std::string &entry, size_t count,
                                 const std::string &sentence) {
  py::list list =
      listOf(arg, name + " must be a list with " + entry + " per " + sentence);
  if (list.size() != count)
    throw py::value_error(name + " has " + std::to_string(list.size()) +
                          " entries for " + std::to_string(count) + " " +
                          sentence + "s");
  return list;
}

/// The target prefix of each of `count` sentences: `arg` is None, or a
/// list holding for each sentence None or a sequence of target token ids
/// or of vocabulary pieces (str).
std::vector<std::vector<int32_t>> SentenceReader::targetPrefixes(py::handle arg,
                                                                 size_t count) {
  std::vector<std::vector<int32_t>> out(count);
  if (arg.is_none())
    return out;
  py::list list = entryPerSentence(arg, "target_prefix", "a prefix (or None)",
                                   count, "sentence");
  for (size_t i = 0; i < count; ++i)
    if (!list[i].is_none())
      out[i] = targetIds(list[i], "target_prefix " + std::to_string(i),
                         "expected a list of target token ids or pieces", true);
  return out;
}

/// A list of target token ids (also vocabulary pieces, where `pieces`),
/// else a TypeError: `where`, `expected`, then what was found.
std::vector<int32_t> SentenceReader::targetIds(py::handle item,
                                               const std::string &where,
                                               const std::string &expected,
                                               bool pieces) {
  py::list list = listOf(item, where + ": " + expected);
  std::vector<int32_t> out;
  for (size_t k = 0; k < list.size(); ++k) {
    py::handle token = list[k];
    std::string tokenWhere = where + ": token " + std::to_string(k);
    if (pieces && PyUnicode_Check(token.ptr()))
      out.push_back(pieceId(token.cast<std::string>(), tokenWhere));
    else
      out.push_back(targetId(token, tokenWhere));
  }
  return out;
}

int32_t SentenceReader::targetId(py::handle token, const std::string &where) {
  if (!isInteger(token))
    throw py::type_error(where + " is " + describe(token) +
                         "; expected a token id or a piece");
  std::optional<long long> id = indexValue(token);
  if (!id || *id < 0 || *id >= config.target_vocab_size)
    throw py::value_error(where + ": token id " + reprText(token) +
                          " is outside the target vocabulary [0, " +
                          std::to_string(config.target_vocab_size) + ")");
  return int32_t(*id);
}

int32_t SentenceReader::pieceId(const std::string &piece,
                                const std::string &where) {
  if (piece.empty())
    throw py::value_error(where + ": an empty piece names no token");
  if (!tokenizer)
    throw std::invalid_argument(where + ": this model has no tokenizer: "
                                        "give target token ids");
  int32_t id = 0;
  tfm_status status =
      api.tfm_tokenizer_piece_id(tokenizer, piece.data(), piece.size(), &id);
  if (status)
    throw std::invalid_argument(statusError(api, where, status));
  return id;
}

std::vector<std::vector<int32_t>>
SentenceReader::scoredTargets(py::handle arg, size_t count,
                              const tfm_language_tokens &langTokens) {
  py::list list = entryPerSentence(arg, "target", "a translation", count,
                                   "source sentence");
  std::vector<std::vector<int32_t>> out(count);
  for (size_t i = 0; i < count; ++i) {
    std::string where = "target " + std::to_string(i);
    if (PyUnicode_Check(list[i].ptr()))
      out[i] = targetText(list[i], where, langTokens);
    else
      out[i] = targetTokenIds(list[i], where);
  }
  return out;
}

std::vector<int32_t>
SentenceReader::targetText(py::handle item, const std::string &where,
                           const tfm_language_tokens &langTokens) {
  if (!tokenizer)
    throw std::invalid_argument(where + ": this model has no tokenizer: "
                                        "give target token ids");
  std::string line;
  if (utf8Text(item, line))
    warn(PyExc_UnicodeWarning, where + ": lone surrogates (invalid UTF-8), "
                                       "replaced by U+FFFD");
  std::vector<int32_t> out(langTokens.target_prefix,
                           langTokens.target_prefix +
                               langTokens.target_prefix_length);
  int32_t *ids = nullptr, length = 0;
  tfm_status status = api.tfm_tokenizer_encode_target(
      tokenizer, line.data(), line.size(), &ids, &length);
  if (status)
    throw std::invalid_argument(statusError(api, where, status));
  out.insert(out.end(), ids, ids + length);
  api.tfm_free(ids);
  return out;
}

std::vector<int32_t> SentenceReader::targetTokenIds(py::handle item,
                                                    const std::string &where) {
  std::vector<int32_t> out = targetIds(
      item, where, "expected a str or a list of target token ids", false);
  if (!out.empty() && out.back() == config.eos_token_id)
    out.pop_back();
  for (int32_t id : out)
    if (id == config.eos_token_id || id == config.pad_token_id)
      throw py::value_error(where + ": token id " + std::to_string(id) +
                            " is the model's " +
                            (id == config.eos_token_id ? "EOS" : "padding") +
                            ", which a target holds only last (EOS)");
  return out;
}

/// The tokens of source_lang and target_lang (each checked alone first,
/// so that an error names it); none without them or without languages.
tfm_language_tokens SentenceReader::languageTokens(py::handle sourceArg,
                                                   py::handle targetArg) {
  std::string codes[2] = {codeArg(sourceArg, "source_lang"),
                          codeArg(targetArg, "target_lang")};
  bool detect = codes[0] == "auto";
  if (detect)
    startDetection(codes[1]);
  const char *source = codes[0].empty() || detect ? nullptr : codes[0].c_str();
  const char *target = codes[1].empty() ? nullptr : codes[1].c_str();
  tfm_language_tokens tokens{};
  for (int side = 0; side < 2; ++side) {
    const char *name = side == 0 ? "source_lang" : "target_lang";
    const char *code = side == 0 ? source : target;
    if (!code)
      continue;
    if (!languages)
      throw py::value_error(std::string(name) + " " +
                            reprText(side == 0 ? sourceArg : targetArg) +
                            ": this model has no languages (a multilingual "
                            "model's come with its tokenizer's files; a "
                            "model of one pair gets them from tfmc compile "
                            "--source-lang --target-lang)");
    tfm_status status =
        api.tfm_languages_tokens(languages, side == 0 ? code : nullptr,
                                 side == 1 ? code : nullptr, &tokens);
    if (status)
      throw py::value_error(statusError(api, name, status));
  }
  if (languages)
    tfm_client::check(
        api, api.tfm_languages_tokens(languages, source, target, &tokens));
  return tokens;
}

/// source_lang "auto": each text's language detected, on a multilingual
/// model (a model of one pair has its one source, as in the translator).
/// The target is checked first, so that its error names it.
void SentenceReader::startDetection(const std::string &target) {
  detection.reset();
  if (!languages)
    throw py::value_error("source_lang 'auto': this model has no languages "
                          "to detect (a multilingual model's come with its "
                          "tokenizer's files)");
  if (!target.empty()) {
    tfm_language_tokens tokens{};
    if (tfm_status status = api.tfm_languages_tokens(languages, nullptr,
                                                     target.c_str(), &tokens))
      throw py::value_error(statusError(api, "target_lang", status));
  }
  int32_t pairSource = -1, pairTarget = -1;
  api.tfm_languages_pair(languages, &pairSource, &pairTarget);
  if (pairSource < 0)
    detection = std::make_unique<tfm_translator::SourceDetection>(
        api, languages, target);
}
