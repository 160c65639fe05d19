#!/usr/bin/env python3
"""Writes pages of realistic markup around a model's test sentences.

    html_pages.py SENTENCES OUT_DIR [--count 200] [--seed 1]

Each page (OUT_DIR/page-NNN.html) is a whole document (doctype, head,
title, meta, style, script) or a fragment, built from the sentences of
SENTENCES (one a line) wrapped in nested blocks (sections, divs,
blockquotes, lists within lists, tables with head and body, definition
lists, figures), inline tags around words (b, i, em, strong, a href with
a title, span, nested ones), images with alt text, line breaks, code,
translate="no" and class="notranslate" spans, preformatted code, scripts
and comments, with entities for &, <, >, quotes and dashes. Deterministic
for a seed; the markup is well-formed, as the checker
(html_check.py, Python's html.parser) expects.
"""
import argparse
import html
import os
import random

ENTITY_SPELLINGS = {
    "&": ["&amp;", "&#38;", "&#x26;"],
    "<": ["&lt;", "&#60;"],
    ">": ["&gt;", "&#62;"],
    '"': ['"', "&quot;", "&#34;"],
    "'": ["'", "&#39;", "&apos;"],
}
INLINE_TAGS = ["b", "i", "em", "strong", "span", "a", "a", "mark", "small",
               "u", "abbr", "cite", "q"]
BRANDS = ["Acme", "Globex", "GNU/Linux", "tfmc", "LibreOffice", "KDE"]


class Page:
    def __init__(self, rng, sentences):
        self.rng = rng
        self.sentences = sentences

    def sentence(self):
        return self.rng.choice(self.sentences)

    def escape(self, text):
        """Text with its markup characters (and some quotes) as
        references, each spelled one of several ways."""
        out = []
        for c in text:
            spellings = ENTITY_SPELLINGS.get(c)
            out.append(self.rng.choice(spellings) if spellings else c)
        return "".join(out)

    def attribute(self, text):
        return html.escape(text, quote=True)

    def link(self):
        q = self.rng.randint(1, 99)
        return f'/docs/page?id={q}&amp;lang=en#s{q}'

    def inline_open(self, tag):
        r = self.rng.random()
        if tag == "a":
            title = ""
            if r < 0.5:
                title = f' title="{self.attribute(self.sentence())}"'
            return f'<a href="{self.link()}"{title}>'
        if tag == "span":
            return f'<span class="hl-{self.rng.randint(1, 9)}">'
        if tag == "abbr":
            return f'<abbr title="{self.attribute(self.sentence())}">'
        return f"<{tag}>"

    def wrap_words(self, words):
        """Words with inline markup around some of them: tags around word
        ranges (some nested), a code span or a kept brand between words,
        an image, a line break."""
        words = [self.escape(w) for w in words]
        n = len(words)
        taken = set()
        if n >= 3 and self.rng.random() < 0.75:
            for _ in range(self.rng.randint(1, 2 if n < 8 else 3)):
                start = self.rng.randrange(n)
                end = min(n, start + self.rng.randint(1, 3))
                if taken & set(range(start, end)):
                    continue  # no overlapping ranges: the markup nests
                taken |= set(range(start, end))
                tag = self.rng.choice(INLINE_TAGS)
                opening, closing = self.inline_open(tag), f"</{tag}>"
                if self.rng.random() < 0.2:
                    inner = self.rng.choice(["b", "i", "em"])
                    opening, closing = (opening + f"<{inner}>",
                                        f"</{inner}>" + closing)
                words[start] = opening + words[start]
                last = words[end - 1]
                if end == n and last[-1:] in ".:!?" and len(last) > 1:
                    # "<a>here</a>.": the sentence's full stop outside
                    words[end - 1] = last[:-1] + closing + last[-1]
                else:
                    words[end - 1] = last + closing
        r = self.rng.random()
        if n >= 2 and r < 0.12:
            k = self.rng.randrange(1, n)
            words.insert(k, f"<code>{self.escape('--' + str(k) + ' <x>')}</code>")
        elif n >= 2 and r < 0.20:
            k = self.rng.randrange(1, n)
            brand = self.rng.choice(BRANDS)
            kept = self.rng.choice([f'<span translate="no">{brand}</span>',
                                    f'<span class="notranslate">{brand}</span>'])
            words.insert(k, kept)
        elif r < 0.26:
            alt = self.attribute(self.sentence())
            words.append(f'<img src="img/{self.rng.randint(1, 50)}.png" '
                         f'alt="{alt}" width="16">')
        return " ".join(words)

    def text(self):
        words = self.sentence().split()
        body = self.wrap_words(words)
        if self.rng.random() < 0.1:
            body += "<br>" + self.wrap_words(self.sentence().split())
        return body

    def paragraph(self):
        attrs = self.rng.choice(["", ' class="note"', ' id="p%d"' %
                                 self.rng.randint(1, 999)])
        return f"<p{attrs}>{self.text()}</p>"

    def heading(self, level):
        return f"<h{level}>{self.text()}</h{level}>"

    def items(self, depth):
        items = []
        for _ in range(self.rng.randint(2, 5)):
            item = self.text()
            if depth < 2 and self.rng.random() < 0.2:
                item += "\n" + self.list(depth + 1)
            items.append(f"  <li>{item}</li>")
        return items

    def list(self, depth=0):
        tag = self.rng.choice(["ul", "ol"])
        return f"<{tag}>\n" + "\n".join(self.items(depth)) + f"\n</{tag}>"

    def table(self):
        cols = self.rng.randint(2, 4)
        head = "".join(f"<th>{self.text()}</th>" for _ in range(cols))
        rows = []
        for _ in range(self.rng.randint(1, 4)):
            cells = "".join(f"<td>{self.text()}</td>" for _ in range(cols))
            rows.append(f"    <tr>{cells}</tr>")
        caption = f"<caption>{self.text()}</caption>" \
            if self.rng.random() < 0.4 else ""
        return (f"<table class=\"data\">{caption}\n  <thead><tr>{head}</tr>"
                f"</thead>\n  <tbody>\n" + "\n".join(rows) +
                "\n  </tbody>\n</table>")

    def definitions(self):
        pairs = [f"<dt>{self.text()}</dt><dd>{self.text()}</dd>"
                 for _ in range(self.rng.randint(1, 3))]
        return "<dl>" + "".join(pairs) + "</dl>"

    def figure(self):
        alt = self.attribute(self.sentence())
        return (f'<figure><img src="fig.png" alt="{alt}">'
                f"<figcaption>{self.text()}</figcaption></figure>")

    def preformatted(self):
        code = self.escape('if (a < b && c) {\n  print("x");\n}')
        return f"<pre><code>{code}</code></pre>"

    def script(self):
        return ('<script>\n  if (a < b && c > d) { document.write("<p>'
                f'{self.rng.randint(1, 9)}</p>"); }}\n</script>')

    def block(self, depth):
        kinds = ["p", "p", "p", "h", "list", "table", "dl", "figure",
                 "quote", "section", "pre", "comment", "script", "kept"]
        kind = self.rng.choice(kinds if depth < 2 else kinds[:3])
        if kind == "p":
            return self.paragraph()
        if kind == "h":
            return self.heading(self.rng.randint(1, 4))
        if kind == "list":
            return self.list()
        if kind == "table":
            return self.table()
        if kind == "dl":
            return self.definitions()
        if kind == "figure":
            return self.figure()
        if kind == "quote":
            return f"<blockquote>{self.paragraph()}</blockquote>"
        if kind == "pre":
            return self.preformatted()
        if kind == "comment":
            return f"<!-- {self.attribute(self.sentence())} -->"
        if kind == "script":
            return self.script()
        if kind == "kept":
            return f'<p translate="no">{self.escape(self.sentence())}</p>'
        tag = self.rng.choice(["section", "div", "article"])
        inner = "\n".join(self.block(depth + 1)
                          for _ in range(self.rng.randint(1, 4)))
        return f'<{tag} class="c{depth}">\n{inner}\n</{tag}>'

    def body(self):
        return "\n".join(self.block(0) for _ in range(self.rng.randint(2, 7)))

    def document(self):
        title = self.escape(self.sentence())
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                "<meta charset=\"utf-8\">\n"
                f"<title>{title}</title>\n"
                "<style>p > b { color: #333; } /* <b>not text</b> */</style>\n"
                "</head>\n<body>\n" + self.body() + "\n</body>\n</html>\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sentences")
    parser.add_argument("out_dir")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with open(args.sentences, encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    os.makedirs(args.out_dir, exist_ok=True)
    rng = random.Random(args.seed)
    for i in range(args.count):
        page = Page(rng, sentences)
        text = page.document() if i % 2 == 0 else page.body() + "\n"
        with open(os.path.join(args.out_dir, f"page-{i:03d}.html"), "w",
                  encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
