//===- HtmlFuzzer.cpp - Fuzz HTML translation -------------------*- C++ -*-===//
//
// Input: byte 0 chooses the fake translation, the rest is the document
// given to translateHtml (tools/common/Html.cpp, instrumented; Gumbo is a
// library it calls). Unless the document is refused as too deep, the
// output must be valid UTF-8 and parse (Gumbo, walked here apart from the
// library) to the input's tree: the same elements with the same
// attributes (title and alt by name: they are translated), the same
// comments, text nodes where there were text nodes (blank where blank),
// and the text of script, style, pre, textarea and code unchanged. The
// first sentences translated are htmlSentences', and translate is called
// at most twice.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "tools/common/Html.h"
#include "tools/common/Text.h"

#include <gumbo.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

using namespace tfm_tools;
using namespace std::string_literals;

namespace {

/// Fake translations that stress the writing back: words moved, markup
/// characters and references, fewer or more words, blank, invalid UTF-8.
std::string fakeTranslation(const std::string &sentence, unsigned mode) {
  switch (mode % 7) {
  case 0: {
    std::string out = sentence;
    for (char &c : out)
      c = char(std::toupper((unsigned char)c));
    return out;
  }
  case 1: {
    std::string out(sentence.rbegin(), sentence.rend());
    return out;
  }
  case 2:
    return "<b>&amp; \"x\" </p> <!-- " + sentence + " -->";
  case 3:
    return "one";
  case 4:
    return mode & 8 ? "" : " \t\n";
  case 5:
    return sentence + " " + sentence + "\r\n\f\xFF\xC3 \0x"s;
  default:
    return "\0"s;
  }
}

std::string tagName(const GumboNode &node) {
  const GumboElement &e = node.v.element;
  if (e.tag != GUMBO_TAG_UNKNOWN)
    return gumbo_normalized_tagname(e.tag);
  // The original text of a tag right after an ignored "</>" begins with
  // it ("</><x>"): the name follows the first '<' and a letter.
  std::string_view text(e.original_tag.data, e.original_tag.length);
  size_t start = 0;
  while (start < text.size() &&
         !(text[start] == '<' && start + 1 < text.size() &&
           std::isalpha((unsigned char)text[start + 1])))
    ++start;
  GumboStringPiece original{text.data() + start, text.size() - start};
  gumbo_tag_from_original_text(&original);
  std::string name(original.data, original.length);
  for (char &c : name)
    c = char(std::tolower((unsigned char)c));
  return name;
}

/// Text whose every byte is kept: under an element the library never
/// translates.
bool keptVerbatim(const GumboNode &node) {
  for (const GumboNode *n = node.parent; n; n = n->parent)
    if (n->type == GUMBO_NODE_ELEMENT) {
      GumboTag tag = n->v.element.tag;
      if (tag == GUMBO_TAG_SCRIPT || tag == GUMBO_TAG_STYLE ||
          tag == GUMBO_TAG_PRE || tag == GUMBO_TAG_TEXTAREA ||
          tag == GUMBO_TAG_CODE)
        return true;
    }
  return false;
}

void dumpNode(const GumboNode &node, std::string &out) {
  switch (node.type) {
  case GUMBO_NODE_TEXT:
  case GUMBO_NODE_CDATA:
    out += keptVerbatim(node) ? "#text{" + std::string(node.v.text.text) + "}"
                              : "#text ";
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
  const GumboElement &e = node.v.element;
  out += "<" + tagName(node) + " ns" + std::to_string(e.tag_namespace);
  for (unsigned i = 0; i < e.attributes.length; ++i) {
    auto *a = static_cast<const GumboAttribute *>(e.attributes.data[i]);
    std::string name = a->name;
    out += " " + name;
    if (name != "title" && name != "alt")
      out += "=\"" + std::string(a->value) + "\"";
  }
  out += "> ";
}

/// Gumbo's blocks, freed together: its own destroy recurses once per
/// level, and inputs nest deeply.
struct Blocks {
  std::vector<void *> all;
  ~Blocks() {
    for (void *block : all)
      std::free(block);
  }
  static void *allocate(void *self, size_t size) {
    void *block = std::malloc(size ? size : 1);
    static_cast<Blocks *>(self)->all.push_back(block);
    return block;
  }
  static void keep(void *, void *) {}
};

/// The tree as text, walked without recursion.
std::string shape(const std::string &html) {
  Blocks blocks;
  GumboOptions options = kGumboDefaultOptions;
  options.allocator = &Blocks::allocate;
  options.deallocator = &Blocks::keep;
  options.userdata = &blocks;
  GumboOutput *output =
      gumbo_parse_with_options(&options, html.data(), html.size());
  std::string out;
  struct Frame {
    const GumboNode *node;
    unsigned next;
  };
  std::vector<Frame> stack{{output->document, 0}};
  while (!stack.empty()) {
    Frame &frame = stack.back();
    const GumboVector &children = frame.node->type == GUMBO_NODE_DOCUMENT
                                      ? frame.node->v.document.children
                                      : frame.node->v.element.children;
    if (frame.next == children.length) {
      out += "</> ";
      stack.pop_back();
      continue;
    }
    auto *child = static_cast<const GumboNode *>(children.data[frame.next++]);
    dumpNode(*child, out);
    if (child->type == GUMBO_NODE_ELEMENT || child->type == GUMBO_NODE_TEMPLATE)
      stack.push_back({child, 0});
  }
  return out;
}

/// Control bytes as \xNN, for messages.
std::string printable(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
    out += c < 0x20 && c != '\n' ? escaped : std::string(1, char(c));
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  unsigned mode = data[0];
  std::string document(reinterpret_cast<const char *>(data) + 1, size - 1);

  std::vector<std::vector<std::string>> calls;
  auto translate = [&](const std::vector<std::string> &sentences) {
    calls.push_back(sentences);
    std::vector<std::string> out;
    for (const std::string &s : sentences)
      out.push_back(fakeTranslation(s, mode + unsigned(calls.size() - 1)));
    return out;
  };
  HtmlResult result = translateHtml(document, translate);
  if (!result.error.empty()) {
    TFM_FUZZ_CHECK(result.error.rfind("the document nests", 0) == 0);
    if (tfm_fuzz::verbose())
      std::fprintf(stderr, "refused: %s\n", result.error.c_str());
    return 0;
  }
  TFM_FUZZ_CHECK(calls.size() <= 2);
  std::vector<std::string> sentences = htmlSentences(document);
  TFM_FUZZ_CHECK(calls.empty() ? sentences.empty() : calls[0] == sentences);

  std::string output = result.html;
  TFM_FUZZ_CHECK(!replaceInvalidUtf8(output));
  std::string repaired = document;
  replaceInvalidUtf8(repaired);
  std::string before = shape(repaired), after = shape(output);
  if (before != after && tfm_fuzz::verbose())
    std::fprintf(stderr, "input:  %s\noutput: %s\nbefore: %s\nafter:  %s\n",
                 printable(repaired).c_str(), printable(output).c_str(),
                 printable(before).c_str(), printable(after).c_str());
  TFM_FUZZ_CHECK(before == after);
  return 0;
}
