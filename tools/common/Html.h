//===- Html.h - Translating the text of an HTML document --------*- C++ -*-===//
//
// `format: "html"`: the text of a document is translated and its markup
// kept. The document is parsed as a browser parses it (Gumbo, the HTML5
// algorithm); the text is gathered into sentences, one per run of inline
// content between block boundaries, plus the `title` and `alt` attributes;
// a caller-given function translates them (the server and the translator
// batch them through their own client); and the translations are written
// back into the source text in place of the text they replace, so that
// every byte of markup, every entity outside the translated text and the
// document's shape (a fragment stays a fragment) are as they were.
//
// The rules (which elements are inline, which are left alone, how a
// sentence's translation is spread over the inline tags inside it, and
// what that gets wrong) are in docs/Usage.md, "Translating HTML".
// Plain C++; the library throws nothing itself, and an exception of the
// translate function passes through with everything freed.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_COMMON_HTML_H
#define TFM_TOOLS_COMMON_HTML_H

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tfm_tools {

/// Translates sentences: one translation per sentence, in order.
using TranslateSentences =
    std::function<std::vector<std::string>(const std::vector<std::string> &)>;

struct HtmlOptions {
  /// A larger document is refused: Gumbo keeps its whole tree in memory.
  size_t maxBytes = size_t(64) << 20;
  /// A document nested so deeply that the parser would take more than a
  /// few seconds is refused: the number of open elements summed over the
  /// start tags (estimated from the tags; a page of a million tags 30
  /// deep is within it).
  size_t maxNestingWork = 50'000'000;
};

/// What a translation did, for callers that report it and for tests.
struct HtmlStats {
  size_t sentences = 0; // block runs and attributes sent to translate
  size_t spread = 0;    // runs whose translation was spread over 2+ pieces
  size_t piecewise = 0; // runs whose pieces were translated one by one
  size_t kept = 0;      // pieces left in the source language (blank
                        // translation)
  size_t translateCalls = 0;
  size_t keptAttributes = 0; // title and alt of formatting elements kept,
                             // the translations changing the tree
};

struct HtmlResult {
  std::string html;  // the translated document (valid UTF-8)
  std::string error; // non-empty: why there is no translation
  HtmlStats stats;
};

/// Translates `document` (invalid UTF-8 is repaired first, as the tools
/// repair text) with `translate`, called at most twice (every sentence
/// once, then the pieces of the runs that cannot be spread).
HtmlResult translateHtml(std::string_view document,
                         const TranslateSentences &translate,
                         const HtmlOptions &options = {});

/// The sentences translateHtml sends to `translate` first, in order.
std::vector<std::string> htmlSentences(std::string_view document,
                                       const HtmlOptions &options = {});

/// `text` with &, <, > (and " when `inAttribute`) written as references.
std::string escapeHtml(std::string_view text, bool inAttribute);

} // namespace tfm_tools

#endif // TFM_TOOLS_COMMON_HTML_H
