//===- Html.cpp - Translating the text of an HTML document ------*- C++ -*-===//

#include "tools/common/Html.h"
#include "tools/common/Text.h"

#include <gumbo.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <unordered_set>
#include <utility>

using namespace tfm_tools;

namespace {

/// HTML's whitespace (not \v, not U+00A0): what separates words here, as
/// it is what the parser and the browser collapse.
constexpr std::string_view kHtmlSpace = " \t\n\f\r";

bool isHtmlSpace(char c) {
  return kHtmlSpace.find(c) != std::string_view::npos;
}

bool isBlankHtml(std::string_view text) {
  return text.find_first_not_of(kHtmlSpace) == std::string_view::npos;
}

std::vector<std::string> splitWords(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while ((i = text.find_first_not_of(kHtmlSpace, i)) !=
         std::string_view::npos) {
    size_t end = std::min(text.find_first_of(kHtmlSpace, i), text.size());
    words.emplace_back(text.substr(i, end - i));
    i = end;
  }
  return words;
}

std::string joinWords(const std::vector<std::string> &words, size_t begin,
                      size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i)
    out += (i > begin ? " " : "") + words[i];
  return out;
}

std::string lowerAscii(std::string_view text) {
  std::string out(text);
  for (char &c : out)
    c = char(std::tolower((unsigned char)c));
  return out;
}

/// Whitespace collapsed to single spaces, none at either end: the form in
/// which a run's text is a sentence for the model.
std::string normalizeSpace(std::string_view text) {
  std::vector<std::string> words = splitWords(text);
  return joinWords(words, 0, words.size());
}

/// A translation made fit for a text node: valid UTF-8 and no NUL, which
/// the parser would drop (a text of NULs alone would vanish).
std::string cleanTranslation(std::string text) {
  replaceInvalidUtf8(text);
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  return text;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// Gumbo's allocations, all freed at once by the destructor:
/// gumbo_destroy_output recurses once per level of nesting, and a deeply
/// nested document would overflow the stack. Each block carries links to
/// its neighbours, so that a block Gumbo frees leaves the list at once.
class GumboMemory {
public:
  GumboMemory() { head.prev = head.next = &head; }
  GumboMemory(const GumboMemory &) = delete;
  GumboMemory &operator=(const GumboMemory &) = delete;
  ~GumboMemory() {
    for (Header *block = head.next; block != &head;) {
      Header *next = block->next;
      std::free(block);
      block = next;
    }
  }

  static void *allocate(void *self, size_t size) {
    auto *block = static_cast<Header *>(std::malloc(sizeof(Header) + size));
    if (!block)
      std::abort(); // Gumbo cannot report a failed allocation
    Header &head = static_cast<GumboMemory *>(self)->head;
    block->prev = &head;
    block->next = head.next;
    head.next->prev = block;
    head.next = block;
    return block + 1;
  }
  static void deallocate(void *, void *pointer) {
    if (!pointer)
      return;
    Header *block = static_cast<Header *>(pointer) - 1;
    block->prev->next = block->next;
    block->next->prev = block->prev;
    std::free(block);
  }

private:
  // Sized so that what follows it keeps malloc's alignment.
  struct alignas(std::max_align_t) Header {
    Header *prev, *next;
  };
  Header head;
};

/// A document parsed as a whole (not as a fragment: a fragment's text
/// lands in the implied <body>, and the output is spliced from the source,
/// so it stays a fragment).
class ParsedDocument {
public:
  explicit ParsedDocument(const std::string &source) {
    GumboOptions options = kGumboDefaultOptions;
    options.allocator = &GumboMemory::allocate;
    options.deallocator = &GumboMemory::deallocate;
    options.userdata = &memory;
    // Errors are recorded (not reported): Gumbo's tree of some misnested
    // markup depends on it, and with none recorded differs from a
    // browser's.
    output = gumbo_parse_with_options(&options, source.data(), source.size());
  }
  GumboNode *document() const { return output->document; }

private:
  GumboMemory memory; // declared first: freed last
  GumboOutput *output = nullptr;
};

//===----------------------------------------------------------------------===//
// Which elements are sentences, which are inside them, which are kept
//===----------------------------------------------------------------------===//

enum class Role {
  Inline,     // inside the sentence of its block (<b>, <a>, <span>)
  Block,      // a sentence boundary (<p>, <li>, <td>, <br>, anything else)
  InlineHole, // kept whole, a space in its block's sentence (<code>)
  BlockHole,  // kept whole, a sentence boundary (<script>, <pre>)
};

Role roleOf(const GumboNode &node) {
  if (node.type == GUMBO_NODE_TEMPLATE)
    return Role::BlockHole;
  const GumboElement &element = node.v.element;
  if (element.tag_namespace != GUMBO_NAMESPACE_HTML)
    return Role::InlineHole; // SVG and MathML: not text for a sentence
  switch (element.tag) {
  case GUMBO_TAG_A:
  case GUMBO_TAG_ABBR:
  case GUMBO_TAG_ACRONYM:
  case GUMBO_TAG_B:
  case GUMBO_TAG_BDI:
  case GUMBO_TAG_BDO:
  case GUMBO_TAG_BIG:
  case GUMBO_TAG_CITE:
  case GUMBO_TAG_DATA:
  case GUMBO_TAG_DEL:
  case GUMBO_TAG_DFN:
  case GUMBO_TAG_EM:
  case GUMBO_TAG_FONT:
  case GUMBO_TAG_I:
  case GUMBO_TAG_IMG:
  case GUMBO_TAG_INS:
  case GUMBO_TAG_LABEL:
  case GUMBO_TAG_MARK:
  case GUMBO_TAG_NOBR:
  case GUMBO_TAG_Q:
  case GUMBO_TAG_S:
  case GUMBO_TAG_SMALL:
  case GUMBO_TAG_SPAN:
  case GUMBO_TAG_STRIKE:
  case GUMBO_TAG_STRONG:
  case GUMBO_TAG_SUB:
  case GUMBO_TAG_SUP:
  case GUMBO_TAG_TIME:
  case GUMBO_TAG_TT:
  case GUMBO_TAG_U:
  case GUMBO_TAG_WBR:
    return Role::Inline;
  case GUMBO_TAG_CODE:
  case GUMBO_TAG_KBD:
  case GUMBO_TAG_SAMP:
  case GUMBO_TAG_VAR:
  case GUMBO_TAG_MATH:
  case GUMBO_TAG_SVG:
    return Role::InlineHole;
  case GUMBO_TAG_SCRIPT:
  case GUMBO_TAG_STYLE:
  case GUMBO_TAG_PRE:
  case GUMBO_TAG_LISTING:
  case GUMBO_TAG_TEXTAREA:
  case GUMBO_TAG_NOSCRIPT:
  case GUMBO_TAG_IFRAME:
  case GUMBO_TAG_XMP:
  case GUMBO_TAG_PLAINTEXT:
  case GUMBO_TAG_NOEMBED:
  case GUMBO_TAG_NOFRAMES:
  case GUMBO_TAG_TEMPLATE:
    return Role::BlockHole;
  default:
    return Role::Block;
  }
}

/// The elements the parser re-opens after a block closes them (the list
/// of active formatting elements): at most three alike, by tag and
/// attributes, are re-opened.
bool isFormattingElement(const GumboElement &element) {
  if (element.tag_namespace != GUMBO_NAMESPACE_HTML)
    return false;
  switch (element.tag) {
  case GUMBO_TAG_A:
  case GUMBO_TAG_B:
  case GUMBO_TAG_BIG:
  case GUMBO_TAG_CODE:
  case GUMBO_TAG_EM:
  case GUMBO_TAG_FONT:
  case GUMBO_TAG_I:
  case GUMBO_TAG_NOBR:
  case GUMBO_TAG_S:
  case GUMBO_TAG_SMALL:
  case GUMBO_TAG_STRIKE:
  case GUMBO_TAG_STRONG:
  case GUMBO_TAG_TT:
  case GUMBO_TAG_U:
    return true;
  default:
    return false;
  }
}

bool isHole(Role role) {
  return role == Role::InlineHole || role == Role::BlockHole;
}

/// Whether an element's text is translated, given its parent's answer:
/// the `translate` attribute is inherited ("yes" or "" turn it back on),
/// and Google's class "notranslate" turns it off.
bool translatableUnder(const GumboElement &element, bool parentTranslatable) {
  bool translatable = parentTranslatable;
  if (const GumboAttribute *translate =
          gumbo_get_attribute(&element.attributes, "translate")) {
    std::string value = translate->value;
    for (char &c : value)
      c = char(std::tolower((unsigned char)c));
    if (value == "no")
      translatable = false;
    else if (value == "yes" || value.empty())
      translatable = true;
  }
  if (const GumboAttribute *cls =
          gumbo_get_attribute(&element.attributes, "class"))
    for (const std::string &name : splitWords(cls->value))
      if (name == "notranslate")
        translatable = false;
  return translatable;
}

//===----------------------------------------------------------------------===//
// Runs: the text of a sentence, as pieces of the source
//===----------------------------------------------------------------------===//

/// A text node, or an attribute's value: where it is in the source and
/// its text (references decoded).
struct Piece {
  size_t begin = 0, end = 0;
  std::string text;
  bool holeBefore = false; // a kept element precedes it in its run
  bool inAttribute = false;
  bool onFormattingElement = false; // an attribute of <a>, <b>, <font>...
};

/// One sentence: a block's run of inline text, or one attribute.
struct Run {
  std::vector<Piece> pieces;

  std::string sentence() const {
    std::string text;
    for (const Piece &piece : pieces)
      text += (piece.holeBefore ? " " : "") + piece.text;
    return normalizeSpace(text);
  }
};

/// The end of the tag, comment or doctype at `source[i]` ('<'): where the
/// tokenizer would end it, quotes of attribute values respected.
size_t markupEnd(std::string_view source, size_t i) {
  if (source.compare(i, 4, "<!--") == 0) {
    size_t close = source.find("-->", i + 4);
    return close == std::string_view::npos ? source.size() : close + 3;
  }
  char quote = 0;
  for (size_t k = i + 1; k < source.size(); ++k) {
    char c = source[k];
    if (quote) {
      if (c == quote)
        quote = 0;
    } else if ((c == '"' || c == '\'') && source[k - 1] == '=') {
      quote = c;
    } else if (c == '>') {
      return k + 1;
    }
  }
  return source.size();
}

/// Whether a text node's span holds markup: a tag the parser ignored (a
/// stray </div>, a second <body> whose attributes it moved to the first)
/// does not split the text around it. Where such a tag stands changes
/// what the parser does next (text after a stray </html> puts it back in
/// the body), so the text around it is kept as it is.
bool holdsMarkup(std::string_view span) {
  for (size_t i = 0; (i = span.find('<', i)) != std::string_view::npos; ++i) {
    char next = i + 1 < span.size() ? span[i + 1] : ' ';
    char after = i + 2 < span.size() ? span[i + 2] : ' ';
    if (std::isalpha((unsigned char)next) || next == '!' || next == '?' ||
        (next == '/' && (std::isalpha((unsigned char)after) || after == '>')))
      return true;
  }
  return false;
}

/// Walks the tree (iteratively: documents may nest deeper than a stack)
/// and cuts its text into runs.
class RunCollector {
public:
  explicit RunCollector(const std::string &source) : source(source) {}

  std::vector<Run> collect(GumboNode *document) {
    walk(document);
    endRun();
    std::vector<Run> all = std::move(runs);
    for (Run &run : attributeRuns)
      all.push_back(std::move(run));
    return all;
  }

private:
  struct Frame {
    GumboNode *node;
    size_t nextChild;
    bool translatable;
    bool block;
  };

  void walk(GumboNode *document) {
    std::vector<Frame> stack{{document, 0, true, true}};
    while (!stack.empty()) {
      Frame &frame = stack.back();
      const GumboVector &children = childrenOf(*frame.node);
      if (frame.nextChild == children.length) {
        if (frame.block)
          endRun();
        stack.pop_back();
        continue;
      }
      auto *child = static_cast<GumboNode *>(children.data[frame.nextChild++]);
      bool translatable = frame.translatable;
      if (child->type == GUMBO_NODE_ELEMENT ||
          child->type == GUMBO_NODE_TEMPLATE) {
        if (auto next = enterElement(*child, translatable))
          stack.push_back(*next);
      } else if (child->type == GUMBO_NODE_TEXT ||
                 child->type == GUMBO_NODE_WHITESPACE) {
        addText(*child, translatable);
      }
    }
  }

  static const GumboVector &childrenOf(const GumboNode &node) {
    return node.type == GUMBO_NODE_DOCUMENT ? node.v.document.children
                                            : node.v.element.children;
  }

  /// The frame to walk the element's children in, if they are walked.
  std::optional<Frame> enterElement(GumboNode &node, bool parentTranslatable) {
    Role role = roleOf(node);
    bool block = role == Role::Block || role == Role::BlockHole;
    if (block)
      endRun();
    if (isHole(role)) {
      holePending = true;
      return std::nullopt;
    }
    bool translatable = translatableUnder(node.v.element, parentTranslatable);
    if (translatable)
      addAttributes(node.v.element);
    return Frame{&node, 0, translatable, block};
  }

  void addText(const GumboNode &node, bool translatable) {
    if (!translatable) {
      holePending = true;
      return;
    }
    const GumboText &text = node.v.text;
    Piece piece;
    if (!spanOf(text.original_text, piece) ||
        (!isRcdata(node) && holdsMarkup(std::string_view(source).substr(
                                piece.begin, piece.end - piece.begin)))) {
      holePending = true;
      return;
    }
    piece.text = text.text;
    piece.holeBefore = std::exchange(holePending, false);
    current.pieces.push_back(std::move(piece));
  }

  /// <title>'s text is RCDATA: a '<' in it is text, not a tag.
  static bool isRcdata(const GumboNode &node) {
    const GumboNode *parent = node.parent;
    return parent && parent->type == GUMBO_NODE_ELEMENT &&
           parent->v.element.tag == GUMBO_TAG_TITLE &&
           parent->v.element.tag_namespace == GUMBO_NAMESPACE_HTML;
  }

  void addAttributes(const GumboElement &element) {
    for (unsigned i = 0; i < element.attributes.length; ++i) {
      auto *attribute =
          static_cast<const GumboAttribute *>(element.attributes.data[i]);
      if (attribute->attr_namespace != GUMBO_ATTR_NAMESPACE_NONE)
        continue;
      std::string_view name = attribute->name;
      if (name != "title" && name != "alt")
        continue;
      Piece piece;
      if (!spanOf(attribute->original_value, piece) ||
          isBlankHtml(attribute->value))
        continue;
      // Formatting elements the parser re-opens share their attributes'
      // spans: one sentence for each span.
      if (!attributeSpans.insert(piece.begin).second)
        continue;
      piece.text = attribute->value;
      piece.inAttribute = true;
      piece.onFormattingElement = isFormattingElement(element);
      Run run;
      run.pieces.push_back(std::move(piece));
      attributeRuns.push_back(std::move(run));
    }
  }

  /// The piece's place in the source; false when Gumbo's pointer is not
  /// into it (nothing to replace).
  bool spanOf(const GumboStringPiece &original, Piece &piece) const {
    if (!original.data || original.data < source.data() ||
        original.data + original.length > source.data() + source.size())
      return false;
    piece.begin = size_t(original.data - source.data());
    piece.end = piece.begin + original.length;
    return true;
  }

  void endRun() {
    holePending = false;
    bool hasText = std::any_of(
        current.pieces.begin(), current.pieces.end(),
        [](const Piece &piece) { return !isBlankHtml(piece.text); });
    if (hasText)
      runs.push_back(std::move(current));
    current = Run();
  }

  const std::string &source;
  std::vector<Run> runs, attributeRuns;
  Run current;
  bool holePending = false;
  std::unordered_set<size_t> attributeSpans;
};

//===----------------------------------------------------------------------===//
// Writing translations back
//===----------------------------------------------------------------------===//

/// A piece's new text: its own leading and trailing whitespace around its
/// share of the translation's words.
struct Replacement {
  size_t begin = 0, end = 0;
  std::string lead, words, trail;
  bool inAttribute = false;
  bool glued = false; // punctuation cut from the word before it
  bool onFormattingElement = false;

  std::string render() const {
    std::string text = escapeHtml(lead + words + trail, inAttribute);
    return inAttribute ? "\"" + text + "\"" : text;
  }
};

std::string leadingSpace(const std::string &text) {
  return text.substr(0,
                     std::min(text.find_first_not_of(kHtmlSpace), text.size()));
}

std::string trailingSpace(const std::string &text) {
  size_t last = text.find_last_not_of(kHtmlSpace);
  return last == std::string::npos ? text : text.substr(last + 1);
}

/// Where each of `weights.size()` slots ends in `words` words, each slot's
/// share proportional to its weight (its source words) and at least one
/// word. Needs words >= slots.
std::vector<size_t> spreadEnds(const std::vector<size_t> &weights,
                               size_t words) {
  size_t total = 0;
  for (size_t weight : weights)
    total += weight;
  std::vector<size_t> ends;
  size_t cumulative = 0, previous = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    cumulative += weights[k];
    size_t slotsAfter = weights.size() - 1 - k;
    size_t end = (words * cumulative * 2 + total) / (2 * total); // rounded
    end = std::clamp(end, previous + 1, words - slotsAfter);
    ends.push_back(end);
    previous = end;
  }
  return ends;
}

/// A word without the punctuation around it, for finding copies.
std::string_view bareWord(std::string_view word) {
  constexpr std::string_view punctuation = ".,;:!?\"'()[]";
  size_t begin = word.find_first_not_of(punctuation);
  if (begin == std::string_view::npos)
    return {};
  size_t end = word.find_last_not_of(punctuation);
  return word.substr(begin, end + 1 - begin);
}

/// Where `needle`'s words stand in `words`, punctuation aside, if they do
/// exactly once; npos otherwise.
size_t uniqueCopy(const std::vector<std::string> &needle,
                  const std::vector<std::string> &words) {
  size_t found = std::string::npos;
  for (size_t at = 0; at + needle.size() <= words.size(); ++at) {
    bool same = true;
    for (size_t k = 0; same && k < needle.size(); ++k)
      same = !bareWord(needle[k]).empty() &&
             bareWord(needle[k]) == bareWord(words[at + k]);
    if (!same)
      continue;
    if (found != std::string::npos)
      return std::string::npos;
    found = at;
  }
  return found;
}

constexpr size_t kMaxAnchorComparisons = size_t(1) << 22;

/// A slot's words of the translation, [begin, end); unset: not anchored.
struct Anchor {
  size_t begin = std::string::npos, end = 0;
  bool set() const { return begin != std::string::npos; }
};

/// The slots whose words the translation copies (names, numbers, commands:
/// words a model leaves as they are), found once and in the slots' order.
std::vector<Anchor>
findAnchors(const std::vector<std::vector<std::string>> &slots,
            const std::vector<std::string> &words) {
  std::vector<Anchor> anchors(slots.size());
  size_t after = 0;
  for (size_t k = 0; k < slots.size(); ++k) {
    size_t at = uniqueCopy(slots[k], words);
    if (at == std::string::npos || at < after)
      continue;
    anchors[k] = {at, at + slots[k].size()};
    after = at + slots[k].size();
  }
  return anchors;
}

/// Where each slot ends in the translation's words: anchored slots on
/// their copies, the slots between them spread over the words between in
/// proportion to their source words (spreadEnds). Words between two
/// anchors with no slot between go to the first. Empty when some slots
/// would get no word.
std::vector<size_t>
anchoredEnds(const std::vector<std::vector<std::string>> &slots,
             const std::vector<Anchor> &anchors, size_t words) {
  std::vector<size_t> ends(slots.size());
  size_t position = 0, free = 0; // free: the first slot not yet placed
  for (size_t k = 0; k <= slots.size(); ++k) {
    if (k < slots.size() && !anchors[k].set())
      continue;
    size_t stop = k < slots.size() ? anchors[k].begin : words;
    if (free < k) {
      std::vector<size_t> weights;
      for (size_t f = free; f < k; ++f)
        weights.push_back(slots[f].size());
      if (stop - position < weights.size())
        return {};
      std::vector<size_t> spread = spreadEnds(weights, stop - position);
      for (size_t f = free; f < k; ++f)
        ends[f] = position + spread[f - free];
    } else if (k > 0) {
      ends[k - 1] = stop; // words no slot takes join the anchor before
    }
    if (k == slots.size())
      break;
    ends[k] = anchors[k].end;
    position = anchors[k].end;
    free = k + 1;
  }
  return ends;
}

bool endsWith(const std::string &word, const std::string &mark) {
  return word.size() > mark.size() &&
         word.compare(word.size() - mark.size(), mark.size(), mark) == 0;
}

/// A piece of punctuation alone closing a run, right after the word before
/// it ("<a>here</a>."), when the translation ends in it too: cut off the
/// last word, to be its share.
bool splitClosingPunctuation(const std::vector<std::vector<std::string>> &slots,
                             const std::string &sentence,
                             std::vector<std::string> &words) {
  if (slots.size() < 2 || slots.back().size() != 1 || words.empty())
    return false;
  const std::string &mark = slots.back().front();
  std::vector<std::string> source = splitWords(sentence);
  if (!bareWord(mark).empty() || source.empty() ||
      !endsWith(source.back(), mark) || !endsWith(words.back(), mark))
    return false;
  std::string &last = words.back();
  last.resize(last.size() - mark.size());
  words.push_back(mark);
  return true;
}

/// Assigns each non-blank piece of `run` its words of `translation`, or
/// returns false when there are fewer words than such pieces.
bool spreadTranslation(const Run &run, const std::string &translation,
                       std::vector<Replacement> &out) {
  std::vector<std::string> words = splitWords(translation);
  std::vector<std::vector<std::string>> slots;
  for (const Piece &piece : run.pieces)
    if (!isBlankHtml(piece.text))
      slots.push_back(splitWords(piece.text));
  bool glued = splitClosingPunctuation(slots, run.sentence(), words);
  if (words.size() < slots.size())
    return false;
  // Finding copies compares every slot with every place in the
  // translation: past a bound (a huge paragraph), proportions alone.
  std::vector<Anchor> anchors(slots.size());
  if (slots.size() * words.size() <= kMaxAnchorComparisons)
    anchors = findAnchors(slots, words);
  if (glued)
    anchors.back() = {words.size() - 1, words.size()};
  std::vector<size_t> ends = anchoredEnds(slots, anchors, words.size());
  if (ends.empty()) {
    std::vector<size_t> weights;
    for (const std::vector<std::string> &slot : slots)
      weights.push_back(slot.size());
    ends = spreadEnds(weights, words.size());
  }
  size_t slot = 0, begin = 0;
  for (const Piece &piece : run.pieces) {
    if (isBlankHtml(piece.text))
      continue;
    out.push_back({piece.begin, piece.end, leadingSpace(piece.text),
                   joinWords(words, begin, ends[slot]),
                   trailingSpace(piece.text), piece.inAttribute});
    begin = ends[slot++];
  }
  if (glued)
    out.back().glued = true;
  for (Replacement &r : out)
    r.onFormattingElement = run.pieces.front().onFormattingElement;
  return true;
}

/// Words of consecutive pieces would run together where the source had no
/// space between its pieces ("foo<b>bar</b>"): a space is added after the
/// first piece's words, so the block's text reads as the translation.
void separateWords(const Run &run, std::vector<Replacement> &pieces) {
  bool endsInWord = false;
  Replacement *previous = nullptr;
  size_t next = 0;
  for (const Piece &piece : run.pieces) {
    Replacement *own = next < pieces.size() && pieces[next].begin == piece.begin
                           ? &pieces[next++]
                           : nullptr;
    std::string text = own ? own->lead + own->words + own->trail : piece.text;
    bool startsWithWord = !text.empty() && !isHtmlSpace(text.front());
    if (piece.holeBefore)
      endsInWord = false;
    if (endsInWord && startsWithWord && !(own && own->glued)) {
      if (previous)
        previous->trail += " ";
      else if (own)
        own->lead.insert(0, " ");
    }
    if (!text.empty())
      endsInWord = !isHtmlSpace(text.back());
    previous = own;
  }
}

/// The source with each replacement's span rewritten; replacements are
/// sorted and the later of two overlapping ones dropped (the source is
/// kept there).
std::string splice(const std::string &source,
                   std::vector<Replacement> &replacements) {
  std::sort(replacements.begin(), replacements.end(),
            [](const Replacement &a, const Replacement &b) {
              return a.begin < b.begin;
            });
  std::string out;
  out.reserve(source.size() + source.size() / 4);
  size_t copied = 0;
  for (const Replacement &r : replacements) {
    if (r.begin < copied)
      continue;
    out.append(source, copied, r.begin - copied);
    out += r.render();
    copied = r.end;
  }
  out.append(source, copied, std::string::npos);
  return out;
}

//===----------------------------------------------------------------------===//
// Checking the tree
//===----------------------------------------------------------------------===//

/// An unknown element's name, lower case, from its start tag as written
/// (which may begin with an ignored "</>": "</><x-y a=b>").
std::string unknownTagName(const GumboElement &element) {
  std::string_view tag(element.original_tag.data, element.original_tag.length);
  size_t start = 0;
  while (start + 1 < tag.size() &&
         !(tag[start] == '<' && std::isalpha((unsigned char)tag[start + 1])))
    ++start;
  GumboStringPiece name{tag.data() + start, tag.size() - start};
  if (name.length < 3 || name.data[0] != '<' || tag.back() != '>')
    return lowerAscii(tag);
  gumbo_tag_from_original_text(&name);
  return lowerAscii(std::string_view(name.data, name.length));
}

/// One node for treeSignature: elements by tag (and namespace), with their
/// attributes (title and alt by name: they are translated); text nodes by
/// kind; comments whole.
void appendNode(const GumboNode &node, std::string &out) {
  switch (node.type) {
  case GUMBO_NODE_TEXT:
    out += "t ";
    return;
  case GUMBO_NODE_CDATA:
    out += "c ";
    return;
  case GUMBO_NODE_WHITESPACE:
    out += "w ";
    return;
  case GUMBO_NODE_COMMENT:
    out += "<!" + std::string(node.v.text.text) + "> ";
    return;
  default:
    break;
  }
  const GumboElement &e = node.v.element;
  out += "<" + std::to_string(e.tag) + ":" + std::to_string(e.tag_namespace);
  if (e.tag == GUMBO_TAG_UNKNOWN)
    out += unknownTagName(e);
  for (unsigned i = 0; i < e.attributes.length; ++i) {
    auto *a = static_cast<const GumboAttribute *>(e.attributes.data[i]);
    std::string_view name = a->name;
    out += " " + std::string(name);
    if (name != "title" && name != "alt")
      out += "=" + std::string(a->value);
  }
  out += "> ";
}

/// The document's tree as text, walked without recursion.
std::string treeSignature(const GumboNode *document) {
  std::string out;
  std::vector<std::pair<const GumboNode *, unsigned>> stack{{document, 0}};
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    const GumboVector &children = node->type == GUMBO_NODE_DOCUMENT
                                      ? node->v.document.children
                                      : node->v.element.children;
    if (next == children.length) {
      out += "/ ";
      stack.pop_back();
      continue;
    }
    auto *child = static_cast<const GumboNode *>(children.data[next++]);
    appendNode(*child, out);
    if (child->type == GUMBO_NODE_ELEMENT || child->type == GUMBO_NODE_TEMPLATE)
      stack.push_back({child, 0});
  }
  return out;
}

bool sameTree(const std::string &signature, const std::string &html) {
  return treeSignature(ParsedDocument(html).document()) == signature;
}

class HtmlTranslator {
public:
  HtmlTranslator(std::string source, const TranslateSentences &translate,
                 HtmlResult &result)
      : source(std::move(source)), translate(translate), result(result) {}

  void run() {
    ParsedDocument parsed(source);
    std::vector<Run> runs = RunCollector(source).collect(parsed.document());
    std::vector<std::string> sentences;
    for (const Run &run : runs)
      sentences.push_back(run.sentence());
    result.stats.sentences = sentences.size();
    std::vector<std::string> translations;
    if (!translateAll(sentences, translations))
      return;
    std::vector<const Run *> unspread;
    for (size_t i = 0; i < runs.size(); ++i)
      if (!applyWhole(runs[i], translations[i]))
        unspread.push_back(&runs[i]);
    if (!applyPiecewise(unspread))
      return;
    writeKeepingTree(treeSignature(parsed.document()));
  }

private:
  /// The output, checked to parse to the source's tree. Attributes of
  /// formatting elements take part in it: the parser re-opens at most
  /// three alike, so translations that make two alike (or unlike) can
  /// change the tree of misnested markup. Those are kept then.
  void writeKeepingTree(const std::string &signature) {
    result.html = splice(source, replacements);
    if (sameTree(signature, result.html))
      return;
    size_t before = replacements.size();
    replacements.erase(std::remove_if(replacements.begin(), replacements.end(),
                                      [](const Replacement &r) {
                                        return r.onFormattingElement;
                                      }),
                       replacements.end());
    result.stats.keptAttributes = before - replacements.size();
    result.html = splice(source, replacements);
    if (sameTree(signature, result.html))
      return;
    result.html.clear();
    result.error = "the translated document would not parse to the "
                   "source's tree";
  }

  bool translateAll(const std::vector<std::string> &sentences,
                    std::vector<std::string> &translations) {
    if (sentences.empty())
      return true;
    ++result.stats.translateCalls;
    translations = translate(sentences);
    if (translations.size() != sentences.size()) {
      result.error = "the translation gave " +
                     std::to_string(translations.size()) + " sentences for " +
                     std::to_string(sentences.size());
      return false;
    }
    for (std::string &translation : translations)
      translation = cleanTranslation(std::move(translation));
    return true;
  }

  /// The run's translation spread over its pieces; false if it cannot be.
  bool applyWhole(const Run &run, const std::string &translation) {
    std::vector<Replacement> pieces;
    if (!spreadTranslation(run, translation, pieces))
      return false;
    if (pieces.size() > 1)
      ++result.stats.spread;
    separateWords(run, pieces);
    append(pieces);
    return true;
  }

  /// Runs with more pieces than words in their translation: each piece
  /// translated alone; a piece whose translation is blank is kept.
  bool applyPiecewise(const std::vector<const Run *> &runs) {
    std::vector<std::string> sentences;
    for (const Run *run : runs) {
      ++result.stats.piecewise;
      for (const Piece &piece : run->pieces)
        if (!isBlankHtml(piece.text))
          sentences.push_back(normalizeSpace(piece.text));
    }
    std::vector<std::string> translations;
    if (!translateAll(sentences, translations))
      return false;
    size_t next = 0; // the translations are in the runs' and pieces' order
    for (const Run *run : runs) {
      std::vector<Replacement> pieces;
      for (const Piece &piece : run->pieces)
        if (!isBlankHtml(piece.text))
          addPiece(piece, translations[next++], pieces);
      separateWords(*run, pieces);
      append(pieces);
    }
    return true;
  }

  void addPiece(const Piece &piece, const std::string &translation,
                std::vector<Replacement> &pieces) {
    std::string words = normalizeSpace(translation);
    if (words.empty()) {
      ++result.stats.kept;
      return;
    }
    pieces.push_back({piece.begin, piece.end, leadingSpace(piece.text), words,
                      trailingSpace(piece.text), piece.inAttribute});
    pieces.back().onFormattingElement = piece.onFormattingElement;
  }

  void append(std::vector<Replacement> &pieces) {
    for (Replacement &piece : pieces)
      replacements.push_back(std::move(piece));
  }

  std::string source;
  const TranslateSentences &translate;
  HtmlResult &result;
  std::vector<Replacement> replacements;
};

//===----------------------------------------------------------------------===//
// What the parser is given
//===----------------------------------------------------------------------===//

/// Elements without content, and elements whose end tag may be left out
/// (the parser closes them when their like comes): neither deepens a
/// document however many there are.
bool leavesDepth(const std::string &name) {
  static const std::unordered_set<std::string> names = {
      "area",   "base",  "br",     "col",   "embed",    "hr",
      "img",    "input", "keygen", "link",  "meta",     "param",
      "source", "track", "wbr",    "html",  "head",     "body",
      "p",      "li",    "dt",     "dd",    "option",   "optgroup",
      "rb",     "rt",    "rtc",    "rp",    "tr",       "td",
      "th",     "thead", "tbody",  "tfoot", "colgroup", "caption"};
  return names.count(name) != 0;
}

/// Elements whose content is text up to their end tag, not markup.
bool holdsRawText(const std::string &name) {
  static const std::unordered_set<std::string> names = {
      "script", "style",   "textarea", "title",   "xmp",
      "iframe", "noembed", "noframes", "noscript"};
  return names.count(name) != 0;
}

/// Where `</name` (any case) begins at or after `from`; the end if nowhere.
size_t findEndTag(std::string_view source, const std::string &name,
                  size_t from) {
  for (size_t i = from; (i = source.find("</", i)) != std::string_view::npos;
       i += 2)
    if (lowerAscii(source.substr(i + 2, name.size())) == name)
      return i;
  return source.size();
}

/// The parser's work on deep documents, estimated from the tags: Gumbo
/// walks the stack of open elements at each start tag, so its time grows
/// with the sum, over start tags, of how many elements are open.
struct NestingWork {
  size_t maxDepth = 0;
  size_t startTags = 0;
  size_t work = 0;
};

NestingWork estimateNestingWork(std::string_view source) {
  NestingWork estimate;
  size_t depth = 0;
  for (size_t i = 0; (i = source.find('<', i)) != std::string_view::npos;) {
    if (source.compare(i, 4, "<!--") == 0) {
      i = markupEnd(source, i);
      continue;
    }
    bool end = i + 1 < source.size() && source[i + 1] == '/';
    size_t nameBegin = i + 1 + end, nameEnd = nameBegin;
    while (nameEnd < source.size() &&
           std::isalnum((unsigned char)source[nameEnd]))
      ++nameEnd;
    if (nameEnd == nameBegin ||
        !std::isalpha((unsigned char)source[nameBegin])) {
      ++i;
      continue;
    }
    std::string name =
        lowerAscii(source.substr(nameBegin, nameEnd - nameBegin));
    i = markupEnd(source, i);
    if (leavesDepth(name))
      continue;
    if (end) {
      depth -= depth > 0;
      continue;
    }
    if (name == "plaintext")
      break;
    if (holdsRawText(name)) {
      i = findEndTag(source, name, i);
      continue;
    }
    ++estimate.startTags;
    estimate.work += ++depth;
    estimate.maxDepth = std::max(estimate.maxDepth, depth);
  }
  return estimate;
}

/// Why `document` is not parsed, or empty: too large, or nested so deeply
/// that the parser would run for minutes (docs/Usage.md, "Translating
/// HTML", has its times).
std::string refusal(std::string_view document, const HtmlOptions &options) {
  if (document.size() > options.maxBytes)
    return "the document is " + std::to_string(document.size()) +
           " bytes; at most " + std::to_string(options.maxBytes) +
           " are translated as HTML";
  NestingWork estimate = estimateNestingWork(document);
  if (estimate.work <= options.maxNestingWork)
    return "";
  return "the document nests its elements too deeply to be parsed in "
         "reasonable time: " +
         std::to_string(estimate.maxDepth) + " levels over " +
         std::to_string(estimate.startTags) +
         " start tags (open elements summed over start tags: " +
         std::to_string(estimate.work) + ", at most " +
         std::to_string(options.maxNestingWork) + ")";
}

} // namespace

std::string tfm_tools::escapeHtml(std::string_view text, bool inAttribute) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += inAttribute ? "&quot;" : "\"";
      break;
    default:
      out += c;
    }
  }
  return out;
}

HtmlResult tfm_tools::translateHtml(std::string_view document,
                                    const TranslateSentences &translate,
                                    const HtmlOptions &options) {
  HtmlResult result;
  result.error = refusal(document, options);
  if (!result.error.empty())
    return result;
  std::string source(document);
  replaceInvalidUtf8(source);
  HtmlTranslator(std::move(source), translate, result).run();
  return result;
}

std::vector<std::string> tfm_tools::htmlSentences(std::string_view document,
                                                  const HtmlOptions &options) {
  if (!refusal(document, options).empty())
    return {};
  std::string source(document);
  replaceInvalidUtf8(source);
  ParsedDocument parsed(source);
  std::vector<std::string> sentences;
  for (const Run &run : RunCollector(source).collect(parsed.document()))
    sentences.push_back(run.sentence());
  return sentences;
}
