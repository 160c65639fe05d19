//===- HtmlDocuments.cpp - --format html: documents, not lines --*- C++ -*-===//
//
// Each input is read whole as one HTML document (or fragment) and handed to
// tools/common/Html.h, which cuts its text into sentences; they go through
// the same path as lines (framing, batches of --batch-size sorted by
// length, the client, --continuous), and the library writes their
// translations back into the markup.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Html.h"
#include "tools/translator/Run.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

using namespace tfm_translator;

namespace {

/// The whole of `input` ("-": stdin), `name` naming it in errors. Past the
/// library's limit it stops reading: the library refuses the document.
std::string readDocument(const std::string &input, const std::string &name,
                         size_t limit) {
  FILE *file = input == "-" ? stdin : std::fopen(input.c_str(), "rb");
  if (!file)
    die(name + ": cannot open: " + std::strerror(errno));
  std::string document;
  char buffer[1 << 16];
  size_t n = 0;
  while (document.size() <= limit &&
         (n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
    document.append(buffer, n);
  bool failed = std::ferror(file);
  int error = errno;
  if (file != stdin)
    std::fclose(file);
  if (failed)
    die(name + ": cannot read: " + std::strerror(error));
  return document;
}

} // namespace

void Run::translateDocuments(Output &out) {
  std::vector<std::string> inputs = o.inputs;
  if (inputs.empty())
    inputs.push_back("-");
  for (const std::string &input : inputs) {
    std::string name = input == "-" ? "stdin" : input;
    tfm_tools::HtmlOptions limits;
    out.write(
        translateDocument(readDocument(input, name, limits.maxBytes), name));
    out.flush();
  }
  warnings.summarize();
}

/// One document translated: with --source-lang auto, framed by the
/// language of all its text (its sentences, which the library gives in
/// its first call), not sentence by sentence: a short heading would be
/// detected alone as anything.
std::string Run::translateDocument(const std::string &document,
                                   const std::string &name) {
  const tfm_language_tokens *frame = s.languages ? &s.languageTokens : nullptr;
  bool detected = false;
  auto translate = [&](const std::vector<std::string> &texts) {
    if (s.autoSource && !detected) {
      std::string text;
      for (const std::string &sentence : texts)
        text += sentence + "\n";
      frame = detectedFrame(text, name, "document");
      detected = true;
    }
    return translateTexts(texts, name, frame);
  };
  tfm_tools::HtmlResult result = tfm_tools::translateHtml(document, translate);
  if (!result.error.empty())
    die(name + ": " + result.error);
  return result.html;
}

/// The library's sentences translated as lines are (the best hypothesis;
/// a blank one is left blank, which the library keeps in the source
/// language). Sentence k of a document is `name`:k+1 in messages, and
/// seeds sampling with its number among all the sentences translated so
/// far, as a line does with its line's.
std::vector<std::string>
Run::translateTexts(const std::vector<std::string> &texts,
                    const std::string &name, const tfm_language_tokens *frame) {
  std::vector<Sentence> sentences(texts.size());
  for (size_t k = 0; k < texts.size(); ++k) {
    Sentence &sentence = sentences[k];
    sentence.where = {&name, k + 1};
    if (!tfm_tools::isBlank(texts[k])) {
      sentence.ids = encodeText(texts[k], frame, sentence.where);
      truncate(sentence.ids, sentence.where);
    }
    sentence.prefix = prefixes.next(sentence.where);
    sentence.index = linesRead++;
  }
  translateWindow(sentences, reader.bytesRead);
  std::vector<std::string> translations;
  for (const Sentence &sentence : sentences) {
    bool blank =
        sentence.nbest.empty() || sentence.nbest.front().tokens.empty();
    translations.push_back(
        blank ? "" : show(sentence.nbest.front().tokens, sentence.where));
  }
  sentencesDone += sentences.size();
  return translations;
}
