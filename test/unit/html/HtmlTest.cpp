//===- HtmlTest.cpp - Translating HTML, with fake translations --*- C++ -*-===//
//
// tools/common/Html.h with translate functions whose answers are known
// (upper case, words reversed, blank): the markup, entities and the
// document's shape must come back as they were, the text translated where
// the rules say. The shape is compared on trees Gumbo builds from input
// and output here, apart from the library's own walk.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Html.h"

#include "gtest/gtest.h"

#include <gumbo.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

using namespace tfm_tools;

namespace {

std::string upper(std::string text) {
  for (char &c : text)
    c = char(std::toupper((unsigned char)c));
  return text;
}

std::vector<std::string> upperAll(const std::vector<std::string> &sentences) {
  std::vector<std::string> out;
  for (const std::string &s : sentences)
    out.push_back(upper(s));
  return out;
}

/// Words in reverse order: a translation that moves words across tags.
std::vector<std::string>
reverseWords(const std::vector<std::string> &sentences) {
  std::vector<std::string> out;
  for (const std::string &s : sentences) {
    std::vector<std::string> words;
    size_t i = 0;
    while ((i = s.find_first_not_of(' ', i)) != std::string::npos) {
      size_t end = std::min(s.find(' ', i), s.size());
      words.push_back(s.substr(i, end - i));
      i = end;
    }
    std::reverse(words.begin(), words.end());
    std::string joined;
    for (const std::string &w : words)
      joined += (joined.empty() ? "" : " ") + w;
    out.push_back(joined);
  }
  return out;
}

std::string tagName(const GumboNode &node) {
  const GumboElement &e = node.v.element;
  if (e.tag != GUMBO_TAG_UNKNOWN)
    return gumbo_normalized_tagname(e.tag);
  GumboStringPiece original = e.original_tag;
  gumbo_tag_from_original_text(&original);
  std::string name(original.data, original.length);
  for (char &c : name)
    c = char(std::tolower((unsigned char)c));
  return name;
}

/// The tree as text: elements with their attributes (title and alt by name
/// only: they are translated), comments with their text, text nodes as
/// #text or #space.
void dump(const GumboNode &node, std::string &out) {
  switch (node.type) {
  case GUMBO_NODE_TEXT:
  case GUMBO_NODE_CDATA:
    out += "#text ";
    return;
  case GUMBO_NODE_WHITESPACE:
    out += "#space ";
    return;
  case GUMBO_NODE_COMMENT:
    out += "<!--" + std::string(node.v.text.text) + "--> ";
    return;
  default:
    break;
  }
  const GumboVector *children = &node.v.document.children;
  if (node.type != GUMBO_NODE_DOCUMENT) {
    const GumboElement &e = node.v.element;
    out += "<" + tagName(node);
    for (unsigned i = 0; i < e.attributes.length; ++i) {
      auto *a = static_cast<const GumboAttribute *>(e.attributes.data[i]);
      std::string name = a->name;
      out += " " + name;
      if (name != "title" && name != "alt")
        out += "=\"" + std::string(a->value) + "\"";
    }
    out += "> ";
    children = &e.children;
  }
  for (unsigned i = 0; i < children->length; ++i)
    dump(*static_cast<const GumboNode *>(children->data[i]), out);
  if (node.type != GUMBO_NODE_DOCUMENT)
    out += "</" + tagName(node) + "> ";
}

std::string shape(const std::string &html) {
  GumboOutput *output =
      gumbo_parse_with_options(&kGumboDefaultOptions, html.data(), html.size());
  std::string out;
  dump(*output->document, out);
  gumbo_destroy_output(&kGumboDefaultOptions, output);
  return out;
}

/// Translates and checks that the output has the input's shape.
std::string translated(const std::string &html,
                       const TranslateSentences &translate = upperAll) {
  HtmlResult result = translateHtml(html, translate);
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(shape(result.html), shape(html)) << result.html;
  return result.html;
}

} // namespace

TEST(Html, ParagraphTranslated) {
  EXPECT_EQ(translated("<p>Hello world.</p>"), "<p>HELLO WORLD.</p>");
}

TEST(Html, FragmentStaysAFragment) {
  EXPECT_EQ(translated("Open <b>it</b>"), "OPEN <b>IT</b>");
}

TEST(Html, DocumentKeptByteForByte) {
  std::string doc = "<!DOCTYPE html>\n<html lang=\"en\"><head>"
                    "<meta charset=\"utf-8\"><title>A page</title></head>\n"
                    "<body class=x>\n  <p id=\"p1\">One.</p>\n</body></html>\n";
  EXPECT_EQ(translated(doc),
            "<!DOCTYPE html>\n<html lang=\"en\"><head>"
            "<meta charset=\"utf-8\"><title>A PAGE</title></head>\n"
            "<body class=x>\n  <p id=\"p1\">ONE.</p>\n</body></html>\n");
}

TEST(Html, EntitiesDecodedForTheModelAndEscapedBack) {
  std::vector<std::string> seen;
  auto record = [&](const std::vector<std::string> &s) {
    seen = s;
    return upperAll(s);
  };
  EXPECT_EQ(translated("<p>Fish &amp; chips &lt;3 &eacute;</p>"
                       "<a href=\"?a=1&amp;b=2\">x</a>",
                       record),
            "<p>FISH &amp; CHIPS &lt;3 \xC3\xA9</p>"
            "<a href=\"?a=1&amp;b=2\">X</a>");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "Fish & chips <3 \xC3\xA9");
}

TEST(Html, TranslationsWithMarkupCharactersAreEscaped) {
  auto angry = [](const std::vector<std::string> &s) {
    return std::vector<std::string>(s.size(), "<b>a & \"b\"</b>");
  };
  std::string out = translated("<p title=t>x</p>", angry);
  EXPECT_EQ(out, "<p title=\"&lt;b&gt;a &amp; &quot;b&quot;&lt;/b&gt;\">"
                 "&lt;b&gt;a &amp; \"b\"&lt;/b&gt;</p>");
}

TEST(Html, BlocksAreSentencesInlineTagsAreInside) {
  EXPECT_EQ(
      htmlSentences("<div>Intro <ul><li>One <b>two</b></li>"
                    "<li>Three<br>four</li></ul> outro</div>"),
      (std::vector<std::string>{"Intro", "One two", "Three", "four", "outro"}));
}

TEST(Html, InlineTagsKeepTheirPlaceAndTheBlockReadsAsTheTranslation) {
  // Four words over three pieces weighted 1, 1, 2: the reversed sentence's
  // words fall 1, 1, 2, and the tags stay where they were.
  EXPECT_EQ(translated("<p>Click <a href=\"/x\">here</a> to continue.</p>",
                       reverseWords),
            "<p>continue. <a href=\"/x\">to</a> here Click</p>");
}

std::vector<std::string> fixed(const std::vector<std::string> &sentences,
                               const std::string &translation) {
  return std::vector<std::string>(sentences.size(), translation);
}

TEST(Html, CopiedWordsKeepTheirTags) {
  // "KDE" is copied by the translation: its tag goes around the copy, the
  // other pieces share the words around it.
  EXPECT_EQ(translated("<p>Open <b>KDE</b> settings now</p>",
                       [](const auto &s) {
                         return fixed(s, "Die KDE Einstellungen jetzt öffnen");
                       }),
            "<p>Die <b>KDE</b> Einstellungen jetzt öffnen</p>");
  // Copied twice: no anchor, proportions.
  EXPECT_EQ(translated("<p>Open <b>KDE</b> settings now</p>",
                       [](const auto &s) { return fixed(s, "KDE a KDE b c"); }),
            "<p>KDE <b>a KDE</b> b c</p>");
}

TEST(Html, ClosingPunctuationStaysAfterTheTag) {
  EXPECT_EQ(
      translated("<p>Click <a href=x>here</a>.</p>",
                 [](const auto &s) { return fixed(s, "Klicken Sie hier."); }),
      "<p>Klicken Sie <a href=x>hier</a>.</p>");
  // After a space in the source, it is a piece like any other.
  EXPECT_EQ(
      translated("<p>Password <b>expires</b> :</p>",
                 [](const auto &s) { return fixed(s, "Das Passwort endet:"); }),
      "<p>Das <b>Passwort</b> endet:</p>");
}

TEST(Html, WordsSplitByATagAreSeparated) {
  EXPECT_EQ(translated("<p>foo<b>bar</b> baz</p>"), "<p>FOO <b>BAR</b> BAZ</p>")
      << "2 words for 3 pieces: each piece translated alone";
  EXPECT_EQ(translated("<p>foo<b>bar</b> baz</p>",
                       [](const std::vector<std::string> &s) {
                         return std::vector<std::string>(s.size(), "a b c");
                       }),
            "<p>a <b>b</b> c</p>");
}

TEST(Html, FewerWordsThanPiecesTranslatesPiecesAlone) {
  HtmlResult result = translateHtml(
      "<p>a <b>b</b> c</p>", [](const std::vector<std::string> &s) {
        return s.size() == 1 ? std::vector<std::string>{"x"} : upperAll(s);
      });
  EXPECT_EQ(result.html, "<p>A <b>B</b> C</p>");
  EXPECT_EQ(result.stats.piecewise, 1u);
  EXPECT_EQ(result.stats.translateCalls, 2u);
}

TEST(Html, BlankTranslationKeepsTheSource) {
  HtmlResult result = translateHtml("<p>Keep <i>me</i></p>", [](const auto &s) {
    return std::vector<std::string>(s.size(), " ");
  });
  EXPECT_EQ(result.html, "<p>Keep <i>me</i></p>");
  EXPECT_EQ(result.stats.kept, 2u);
}

TEST(Html, CodeScriptsAndTranslateNoAreLeftAlone) {
  std::string doc =
      "<p>Run <code>ls -l</code> now.</p><script>var s = \"<p>x</p>\";"
      "</script><style>p { color: red }</style><pre>keep\n  this</pre>"
      "<textarea>and this</textarea><p translate=\"no\">Acme <b>Corp</b></p>"
      "<p>Buy <span class=\"notranslate\">Acme</span> "
      "<span translate=no>now <b translate=yes>please</b></span></p>";
  EXPECT_EQ(htmlSentences(doc),
            (std::vector<std::string>{"Run now.", "Buy please"}));
  EXPECT_EQ(translated(doc),
            "<p>RUN <code>ls -l</code> NOW.</p><script>var s = \"<p>x</p>\";"
            "</script><style>p { color: red }</style><pre>keep\n  this</pre>"
            "<textarea>and this</textarea><p translate=\"no\">Acme <b>Corp</b>"
            "</p><p>BUY <span class=\"notranslate\">Acme</span> "
            "<span translate=no>now <b translate=yes>PLEASE</b></span></p>");
}

TEST(Html, TitleAndAltTranslatedOtherAttributesNot) {
  EXPECT_EQ(translated("<img src=\"a.png\" alt='A cat' data-x=\"a cat\">"
                       "<a href=\"#\" title=A&amp;B class=\"big link\">go</a>"),
            "<img src=\"a.png\" alt=\"A CAT\" data-x=\"a cat\">"
            "<a href=\"#\" title=\"A&amp;B\" class=\"big link\">GO</a>");
}

TEST(Html, UnknownElementsKeepTheirAttributes) {
  EXPECT_EQ(translated("<x-card title=\"Hello\" data-id=7>Some text</x-card>"),
            "<x-card title=\"HELLO\" data-id=7>SOME TEXT</x-card>");
}

TEST(Html, MalformedMarkupKeepsItsShape) {
  for (const char *doc :
       {"<p>a<b>b<p>c</b>d", "<table>stray<tr><td>cell</td></tr></table>",
        "<p>a</span>b</p>", "<b title=t>x<p>y</b>z</p>",
        "<ul><li>one<li>two</ul>", "<p>x<body title=\"y\">z</p>",
        "<select><option>One<option>Two</select>", "a<!-- c -->b",
        "<p>unclosed <a href=x>link", "<div><<>></div>", "</p>text",
        "<html><frameset></frameset>text"})
    translated(doc);
}

TEST(Html, FormattingAttributesThatWouldChangeTheTreeAreKept) {
  // Four <b>s left open, then re-opened after </p>: the parser re-opens at
  // most three alike (tag and attributes). Titles translated alike would
  // lose one <b>, so they are kept; the text is translated.
  std::string doc = "<p><b title=1><b title=2><b title=3><b title=4>x</p>y";
  HtmlResult result =
      translateHtml(doc, [](const auto &s) { return fixed(s, "T"); });
  EXPECT_EQ(shape(result.html), shape(doc));
  EXPECT_EQ(result.stats.keptAttributes, 4u);
  EXPECT_EQ(result.html,
            "<p><b title=1><b title=2><b title=3><b title=4>T</p>T");
  // Titles that stay unlike are translated.
  result = translateHtml(doc, upperAll);
  EXPECT_EQ(result.stats.keptAttributes, 0u);
  EXPECT_EQ(shape(result.html), shape(doc));
}

TEST(Html, TextAroundIgnoredTagsIsKept) {
  // The parser ignores the stray tags but keeps the text around them one
  // text node; where the tag stands matters (text after </html> is put
  // back into the body), so that text is kept, a hole in its sentence.
  EXPECT_EQ(translated("<p>a</span>b <i>c</i></p>"),
            "<p>a</span>b <i>C</i></p>");
  EXPECT_EQ(translated("<p>x</p></body></html>y<!--c-->"),
            "<p>X</p></body></html>Y<!--c-->");
  EXPECT_EQ(translated("<title>a <b> c</title>"),
            "<title>A &lt;B&gt; C</title>")
      << "a title's text is not markup";
}

TEST(Html, WhitespaceAroundTextKept) {
  EXPECT_EQ(translated("<div>\n  Some   text\n</div>"),
            "<div>\n  SOME TEXT\n</div>");
}

std::string nested(const std::string &tag, int depth) {
  std::string doc;
  for (int i = 0; i < depth; ++i)
    doc += tag;
  return doc + "deep";
}

TEST(Html, DeepNestingWithinReasonIsTranslated) {
  std::string deep = nested("<div>", 2000);
  EXPECT_EQ(translateHtml(deep, upperAll).html,
            deep.substr(0, deep.size() - 4) + "DEEP");
  // Elements the parser closes by themselves do not nest.
  std::string flat = nested("<p>x", 200000);
  EXPECT_EQ(translateHtml(flat, upperAll).error, "");
}

TEST(Html, NestingBeyondReasonIsRefused) {
  // Parsed, this takes Gumbo minutes: its work grows as depth times tags.
  HtmlResult result = translateHtml(nested("<span>", 200000), upperAll);
  EXPECT_EQ(result.error,
            "the document nests its elements too deeply to be parsed in "
            "reasonable time: 200000 levels over 200000 start tags (open "
            "elements summed over start tags: 20000100000, at most 50000000)");
  // Raw text is not markup: tags in a script do not count.
  std::string script = "<script>" + nested("<div>", 200000) + "</script><p>x";
  EXPECT_EQ(translateHtml(script, upperAll).html,
            script.substr(0, script.size() - 1) + "X");
}

TEST(Html, LongTextIsTranslated) {
  std::string wide(1 << 20, 'a');
  EXPECT_EQ(translateHtml("<p>" + wide, upperAll).html, "<p>" + upper(wide));
}

TEST(Html, ManyTagsAndRunsStayLinear) {
  // Quadratic work would take minutes here: a paragraph of 100,000 pieces
  // whose translation copies every word, and 50,000 runs translated piece
  // by piece.
  std::string wide = "<p>";
  for (int i = 0; i < 50000; ++i)
    wide += "w <b>x</b> ";
  auto same = [](const std::vector<std::string> &s) { return s; };
  HtmlResult result = translateHtml(wide, same);
  EXPECT_EQ(result.stats.spread, 1u);
  EXPECT_EQ(shape(result.html), shape(wide));
  std::string many;
  for (int i = 0; i < 50000; ++i)
    many += "<p>a <b>b</b></p>";
  result = translateHtml(many, [](const auto &s) { return fixed(s, "one"); });
  EXPECT_EQ(result.stats.piecewise, 50000u);
  EXPECT_EQ(result.html.substr(0, 32), "<p>one <b>one</b></p><p>one <b>o");
}

TEST(Html, InvalidUtf8IsRepaired) {
  EXPECT_EQ(translated("<p>a\xFF b</p>"), "<p>A\xEF\xBF\xBD B</p>");
}

TEST(Html, TooLargeIsRefused) {
  HtmlOptions options;
  options.maxBytes = 8;
  HtmlResult result = translateHtml("<p>0123456789</p>", upperAll, options);
  EXPECT_EQ(result.error,
            "the document is 17 bytes; at most 8 are translated as HTML");
  EXPECT_EQ(result.html, "");
}

TEST(Html, WrongNumberOfTranslationsIsAnError) {
  HtmlResult result = translateHtml("<p>a</p><p>b</p>", [](const auto &) {
    return std::vector<std::string>{};
  });
  EXPECT_EQ(result.error, "the translation gave 0 sentences for 2");
}

TEST(Html, TranslateErrorsPassThrough) {
  EXPECT_THROW(translateHtml("<p>a</p>",
                             [](const auto &) -> std::vector<std::string> {
                               throw std::runtime_error("model failed");
                             }),
               std::runtime_error);
}

TEST(Html, NothingToTranslateCallsNothing) {
  HtmlResult result =
      translateHtml("<p> </p><script>x</script>",
                    [](const auto &) -> std::vector<std::string> {
                      ADD_FAILURE() << "called";
                      return {};
                    });
  EXPECT_EQ(result.html, "<p> </p><script>x</script>");
  EXPECT_EQ(result.stats.translateCalls, 0u);
}
