#!/usr/bin/env python3
"""Checks translated HTML pages against their sources, with Python's own
HTML parser (html.parser), apart from the C++ library and Gumbo.

    html_check.py sentences PAGE...            > sentences.txt
    html_check.py compare SENTENCES PLAIN SRC_DIR OUT_DIR
    html_check.py spoil OUT_DIR                # the test that it can fail

`sentences` prints every sentence the rules of docs/Usage.md ("Translating
HTML") make of the pages: each block's run of inline text, each piece of
a run that inline tags split, each title and alt attribute; the
translator translates them as plain text. `compare` then requires, for
every page of SRC_DIR and its translation in OUT_DIR:

- the same tree: elements, attributes, comments, the doctype, text nodes
  where there were text nodes (blank where blank);
- every start tag byte for byte, but for the title and alt values;
- the text of script, style, pre, code, translate="no" and notranslate
  elements unchanged;
- each block's text (whitespace collapsed) equal to the plain translation
  of the block's text, or, where that translation has fewer words than
  the block has pieces between inline tags, to the plain translations of
  its pieces; each title and alt equal to its plain translation.

It prints the counts and exits 1 on any difference.
"""
import html.parser
import os
import re
import sys

SPACE = " \t\n\f\r"  # HTML's whitespace: not U+00A0, not \v
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "param", "source", "track", "wbr"}
INLINE = {"a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "data",
          "del", "dfn", "em", "font", "i", "img", "ins", "label", "mark",
          "nobr", "q", "s", "small", "span", "strike", "strong", "sub",
          "sup", "time", "tt", "u", "wbr"}
INLINE_KEPT = {"code", "kbd", "samp", "var", "math", "svg"}
BLOCK_KEPT = {"script", "style", "pre", "listing", "textarea", "noscript",
              "iframe", "xmp", "plaintext", "noembed", "noframes", "template"}
TRANSLATED_ATTRIBUTES = {"title", "alt"}


class Element:
    def __init__(self, tag, attrs, raw):
        self.tag, self.attrs, self.raw, self.children = tag, attrs, raw, []


class Text:
    def __init__(self, data):
        self.data = data


class Other:
    """A comment, doctype or processing instruction."""

    def __init__(self, kind, data):
        self.kind, self.data = kind, data


class TreeBuilder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", [], "")
        self.stack = [self.root]
        self.errors = []

    def append(self, node):
        children = self.stack[-1].children
        if isinstance(node, Text) and children and isinstance(children[-1], Text):
            children[-1].data += node.data
        else:
            children.append(node)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.get_starttag_text())
        self.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.append(Element(tag, attrs, self.get_starttag_text()))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if len(self.stack) < 2 or self.stack[-1].tag != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1].tag}>")
            return
        self.stack.pop()

    def handle_data(self, data):
        self.append(Text(data))

    def handle_comment(self, data):
        self.append(Other("comment", data))

    def handle_decl(self, decl):
        self.append(Other("decl", decl))

    def handle_pi(self, data):
        self.append(Other("pi", data))


def parse(path):
    with open(path, encoding="utf-8") as f:
        builder = TreeBuilder()
        builder.feed(f.read())
        builder.close()
    if len(builder.stack) != 1:
        builder.errors.append(f"<{builder.stack[-1].tag}> left open")
    return builder.root, builder.errors


def normalize(text):
    return " ".join(w for w in re.split(f"[{SPACE}]+", text) if w)


def is_blank(text):
    return not text.strip(SPACE)


def translatable_under(element, parent):
    attrs = dict(element.attrs)
    translatable = parent
    value = attrs.get("translate")
    if value is not None:
        value = value.lower()
        if value == "no":
            translatable = False
        elif value in ("yes", ""):
            translatable = True
    if "notranslate" in (attrs.get("class") or "").split():
        translatable = False
    return translatable


HOLE = None


class Runs:
    """A tree's runs of inline text (lists of Text nodes and HOLEs, blank
    ones too, so that two trees of one shape give runs that pair) and its
    translated attributes (element, name)."""

    def __init__(self, root):
        self.runs, self.attributes, self.current = [], [], []
        self.walk(root, True)
        self.end()

    def end(self):
        self.runs.append(self.current)
        self.current = []

    def walk(self, node, translatable):
        for child in node.children:
            if isinstance(child, Text):
                self.current.append(child if translatable else HOLE)
            elif isinstance(child, Element):
                self.enter(child, translatable)

    def enter(self, element, translatable):
        tag = element.tag
        block = tag not in INLINE and tag not in INLINE_KEPT
        if block:
            self.end()
        if tag in INLINE_KEPT or tag in BLOCK_KEPT:
            self.current.append(HOLE)
            return
        translatable = translatable_under(element, translatable)
        if translatable:
            for name, value in element.attrs:
                if name in TRANSLATED_ATTRIBUTES and value and not is_blank(value):
                    self.attributes.append((element, name))
        self.walk(element, translatable)
        if block:
            self.end()


def run_text(run):
    return normalize("".join(" " if p is HOLE else p.data for p in run))


def run_has_text(run):
    return any(p is not HOLE and not is_blank(p.data) for p in run)


def pieces(run):
    return [p for p in run if p is not HOLE and not is_blank(p.data)]


def sentences_of(path):
    root, errors = parse(path)
    if errors:
        sys.exit(f"{path}: not well-formed: {errors[0]}")
    runs = Runs(root)
    out = []
    for run in runs.runs:
        if not run_has_text(run):
            continue
        out.append(run_text(run))
        if len(pieces(run)) > 1:
            out.extend(normalize(p.data) for p in pieces(run))
    for element, name in runs.attributes:
        out.append(normalize(dict(element.attrs)[name]))
    return out


def shape_differences(a, b, where="document"):
    """Where two trees differ in shape, tags, attributes (title and alt by
    name), comments, or text kept verbatim."""
    if type(a) is not type(b):
        return [f"{where}: {type(a).__name__} became {type(b).__name__}"]
    if isinstance(a, Text):
        return [] if is_blank(a.data) == is_blank(b.data) else \
            [f"{where}: text {a.data!r} became {b.data!r}"]
    if isinstance(a, Other):
        return [] if (a.kind, a.data) == (b.kind, b.data) else \
            [f"{where}: {a.kind} {a.data!r} became {b.data!r}"]
    here = f"{where}/{a.tag}"
    if a.tag != b.tag:
        return [f"{where}: <{a.tag}> became <{b.tag}>"]
    keep = lambda attrs: [(n, None if n in TRANSLATED_ATTRIBUTES else v)
                          for n, v in attrs]
    if keep(a.attrs) != keep(b.attrs):
        return [f"{here}: attributes {a.attrs} became {b.attrs}"]
    translated = any(n in TRANSLATED_ATTRIBUTES for n, _ in a.attrs)
    if not translated and a.raw != b.raw:
        return [f"{here}: start tag {a.raw!r} became {b.raw!r}"]
    if len(a.children) != len(b.children):
        return [f"{here}: {len(a.children)} children became {len(b.children)}"]
    out = []
    for x, y in zip(a.children, b.children):
        out += shape_differences(x, y, here)
    return out


def kept_texts(node, keep=False, translatable=True):
    """The text nodes the rules keep, in document order."""
    out = []
    for child in node.children:
        if isinstance(child, Text):
            if keep or not translatable:
                out.append(child.data)
        elif isinstance(child, Element):
            kept = keep or child.tag in INLINE_KEPT or child.tag in BLOCK_KEPT
            out += kept_texts(child, kept, translatable_under(child, translatable))
    return out


PUNCTUATION = ".,;:!?\"'()[]"


def bare_words(text):
    """Words without the punctuation around them (the library's rule for
    finding words a translation copies)."""
    return [w.strip(PUNCTUATION) for w in text.split() if w.strip(PUNCTUATION)]


def copied_once(piece_words, words):
    """Where the piece's words stand in the translation's, exactly once."""
    n = len(piece_words)
    places = [i for i in range(len(words) - n + 1) if words[i:i + n] == piece_words]
    return places[0] if len(places) == 1 else None


class Tally:
    def __init__(self):
        self.pages = self.shapes = self.blocks = self.whole = 0
        self.piecewise = self.attributes = self.kept = 0
        self.copied = self.copied_wrapped = 0
        self.problems = []

    def report(self):
        print(f"pages: {self.pages}")
        print(f"pages with the same tree, tags and attributes: {self.shapes}")
        print(f"blocks: {self.blocks}")
        print(f"blocks equal to the block's translation: {self.whole}")
        print(f"blocks equal to their pieces' translations: {self.piecewise}")
        print(f"title and alt attributes equal to their translation: "
              f"{self.attributes}")
        print(f"pages with kept text unchanged: {self.kept}")
        print(f"pieces cut by inline tags whose words the translation "
              f"copies, holding their copy: {self.copied_wrapped} of "
              f"{self.copied}")
        print(f"problems: {len(self.problems)}")
        for problem in self.problems[:20]:
            print("  " + problem)


def check_block(run, translated, plain, tally, where):
    expected = plain.get(run_text(run), "")
    got = run_text(translated)
    tally.blocks += 1
    if got == normalize(expected):
        tally.whole += 1
        count_copies(run, translated, expected, tally)
        return
    parts = pieces(run)
    if len(expected.split()) < len(parts):
        piecewise = []
        for p in parts:
            t = normalize(plain.get(normalize(p.data), ""))
            piecewise.append(t if t else normalize(p.data))
        pieces_text = run_text([Text(t + " ") for t in piecewise])
        # Holes and blank pieces only add spaces between the pieces.
        if normalize(got) == pieces_text:
            tally.piecewise += 1
            return
    tally.problems.append(f"{where}: block {run_text(run)!r} became {got!r}, "
                          f"its translation is {expected!r}")


def count_copies(run, translated, expected, tally):
    """Pieces of a block cut by inline tags whose words the translation
    copies once (a name, a number, a command): is their copy what they
    hold now? Only for these is the right place of an inline tag known
    without alignments."""
    if len(pieces(run)) < 2:
        return
    words = bare_words(expected)
    for source, output in zip(run, translated):
        if source is HOLE or is_blank(source.data):
            continue
        piece = bare_words(source.data)
        if piece and copied_once(piece, words) is not None:
            tally.copied += 1
            tally.copied_wrapped += bare_words(output.data) == piece


def check_attribute(source, output, name, plain, tally, where):
    value = dict(source.attrs)[name]
    got = dict(output.attrs)[name]
    translation = normalize(plain.get(normalize(value), ""))
    lead = value[:len(value) - len(value.lstrip(SPACE))]
    trail = value[len(value.rstrip(SPACE)):]
    expected = lead + translation + trail if translation else value
    if got == expected:
        tally.attributes += 1
    else:
        tally.problems.append(f"{where}: {name}={value!r} became {got!r}, "
                              f"its translation is {translation!r}")


def check_page(source_path, output_path, plain, tally):
    tally.pages += 1
    name = os.path.basename(source_path)
    source, _ = parse(source_path)
    output, errors = parse(output_path)
    if errors:
        tally.problems.append(f"{name}: output not well-formed: {errors[0]}")
        return
    differences = shape_differences(source, output)
    if differences:
        tally.problems.append(f"{name}: {differences[0]}")
        return
    tally.shapes += 1
    if kept_texts(source) == kept_texts(output):
        tally.kept += 1
    else:
        tally.problems.append(f"{name}: kept text changed")
    source_runs, output_runs = Runs(source), Runs(output)
    for run, translated in zip(source_runs.runs, output_runs.runs):
        if run_has_text(run):
            check_block(run, translated, plain, tally, name)
    for (a, attr), (b, _) in zip(source_runs.attributes, output_runs.attributes):
        check_attribute(a, b, attr, plain, tally, name)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def spoil(out_dir):
    """Changes two translated pages, so that a test sees the check fail: a
    word added to a block of the first with a paragraph, an href changed
    in the next with a link."""
    changes = [("</p>", " extra</p>", "added a word to"),
               (' href="', ' href="x', "changed an href in")]
    for name in sorted(os.listdir(out_dir)):
        if not changes:
            return
        path = os.path.join(out_dir, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        old, new, what = changes[0]
        if old not in text:
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))
        print(f"{what} {name}")
        changes.pop(0)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "spoil":
        spoil(sys.argv[2])
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "sentences":
        seen = set()
        for path in sys.argv[2:]:
            for sentence in sentences_of(path):
                if sentence not in seen:
                    seen.add(sentence)
                    print(sentence)
        return 0
    if len(sys.argv) == 6 and sys.argv[1] == "compare":
        _, _, sentences, translations, src_dir, out_dir = sys.argv
        sources, plain = read_lines(sentences), read_lines(translations)
        if len(sources) != len(plain):
            sys.exit(f"{len(sources)} sentences, {len(plain)} translations")
        plain = dict(zip(sources, plain))
        tally = Tally()
        for name in sorted(os.listdir(src_dir)):
            check_page(os.path.join(src_dir, name),
                       os.path.join(out_dir, name), plain, tally)
        tally.report()
        return 1 if tally.problems else 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
