//===- Documents.cpp - translate_batch(format="html") -----------*- C++ -*-===//
//
// Each str of `source` is one HTML document (or fragment): the HTML library
// (tools/common/Html.h) cuts its text into sentences, which go through the
// model as the translator's --format html sends them (framing, the target
// language forced first, batches of max_batch_size, sampling seeded by the
// sentences' numbers across the call), and writes the translations back
// into the markup.
//
//===----------------------------------------------------------------------===//

#include "python/Arguments.h"
#include "python/Translator.h"
#include "tools/common/Html.h"
#include "tools/common/Text.h"

namespace py = pybind11;

using namespace tfm_python;

namespace {

/// The options of translations a sentence, which a translated document
/// does not have: refused, named.
void refuseSentenceOptions(const KeywordArgs &options,
                           const tfm_search_options &opts) {
  if (opts.n_best > 1)
    throw py::value_error("format='html' gives one translation of each "
                          "document: n_best must be 1, found " +
                          std::to_string(opts.n_best));
  for (const char *flag : {"return_scores", "return_token_scores"})
    if (options.boolean(flag))
      throw py::value_error(std::string("format='html' gives translated "
                                        "documents, not scores: ") +
                            flag + " must be False");
  if (!options.isNone("target_prefix"))
    throw py::value_error("format='html' takes no target_prefix: a "
                          "document's sentences are not the caller's");
}

/// `source` as a list of documents, each a str.
py::list documentList(py::handle source) {
  if (PyUnicode_Check(source.ptr()) || !py::isinstance<py::iterable>(source))
    throw py::type_error(
        "source must be a list of HTML documents (str), "
        "found " +
        describe(source) +
        (PyUnicode_Check(source.ptr()) ? ": put one document in a list" : ""));
  auto documents =
      py::reinterpret_steal<py::list>(PySequence_List(source.ptr()));
  if (!documents)
    throwPythonError();
  for (size_t i = 0; i < documents.size(); ++i)
    if (!PyUnicode_Check(documents[i].ptr()))
      throw py::type_error("document " + std::to_string(i) +
                           ": format='html' takes a str, found " +
                           describe(documents[i]));
  return documents;
}

} // namespace

std::vector<TranslationResult>
Translator::translateDocuments(py::handle source, const KeywordArgs &options,
                               const tfm_search_options &opts,
                               size_t maxBatchSize) {
  refuseSentenceOptions(options, opts);
  SentenceReader reader = sentenceReader();
  tfm_language_tokens langTokens =
      reader.languageTokens(options["source_lang"], options["target_lang"]);
  if (!tokenizer)
    throw py::value_error("format='html' translates text, and this model "
                          "has no tokenizer (source.spm, target.spm, "
                          "vocab.json)");
  std::vector<int32_t> prefix(langTokens.target_prefix,
                              langTokens.target_prefix +
                                  langTokens.target_prefix_length);
  py::list documents = documentList(source);
  std::vector<TranslationResult> results(documents.size());
  int64_t index = 0;
  for (size_t i = 0; i < documents.size(); ++i) {
    std::string where = "document " + std::to_string(i), document;
    if (utf8Text(documents[i], document))
      warn(PyExc_UnicodeWarning,
           where + ": lone surrogates (invalid UTF-8), replaced by U+FFFD "
                   "as the translator does");
    // source_lang "auto": the language of the whole text (the sentences
    // of the library's first call), as the translator detects it.
    const tfm_language_tokens *frame = &langTokens;
    bool detected = !reader.detecting();
    auto translate = [&](const std::vector<std::string> &sentences) {
      if (!detected) {
        std::string text;
        for (const std::string &sentence : sentences)
          text += sentence + "\n";
        frame = &reader.detectedFrame(text, where, langTokens);
        detected = true;
      }
      return translateSentences(reader, sentences, where, *frame, prefix, index,
                                opts, maxBatchSize);
    };
    tfm_tools::HtmlResult result =
        tfm_tools::translateHtml(document, translate);
    if (!result.error.empty())
      throw py::value_error(where + ": " + result.error);
    results[i].hypotheses.emplace_back(std::move(result.html));
  }
  return results;
}

std::vector<std::string> Translator::translateSentences(
    SentenceReader &reader, const std::vector<std::string> &sentences,
    const std::string &where, const tfm_language_tokens &frame,
    const std::vector<int32_t> &prefix, int64_t &index,
    const tfm_search_options &opts, size_t maxBatchSize) const {
  std::vector<std::vector<int32_t>> ids(sentences.size());
  std::vector<size_t> pending;
  for (size_t k = 0; k < sentences.size(); ++k) {
    ids[k] = reader.textIds(sentences[k],
                            where + ": sentence " + std::to_string(k), frame);
    if (!ids[k].empty())
      pending.push_back(k);
  }
  std::vector<std::string> translations(sentences.size());
  int64_t first = index;
  runBatches(
      false, opts, pending, maxBatchSize,
      [&](tfm_client::BatchBuilder &batch, size_t k) {
        batch.add(ids[k], prefix, first + int64_t(k));
      },
      [&](const tfm_client::Results &out, int32_t k, size_t i) {
        translations[i] = decode(out.hypothesis(k, 0).tokens);
      });
  index += int64_t(sentences.size());
  return translations;
}
