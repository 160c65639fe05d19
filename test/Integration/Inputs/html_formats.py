#!/usr/bin/env python3
"""The translator's --format html and --source-lang auto against the Python
module's format="html" and source_lang="auto" (translator-html.test,
python-html.test).

  html_formats.py concatenated TRANSLATOR OUT_DIR PAGE...
      the translator given all PAGEs at once writes their translations
      one after the other: each equal to OUT_DIR/<its name>, the
      translation of the page alone (so that documents share nothing)
  html_formats.py labelled-pages TSV OUT_DIR LANG...
      one page per LANG of TSV (LANGUAGE<TAB>SENTENCE): its sentences in a
      heading, paragraphs and inline tags; prints the languages
  html_formats.py auto-pages TRANSLATOR PAGES_DIR TARGET
      each page translated with --source-lang auto equals the page
      translated with --source-lang LANG (its name), and some differ from
      --source-lang en's (else detection could not be seen)
  html_formats.py python-html MODEL_DIR PAGES_DIR TRANSLATED_DIR [KEY=VALUE...]
      translate_batch(pages, format="html", ...) (one call for all, in
      batches of 7, and a page alone) equals the translator's --format
      html of each page in TRANSLATED_DIR (KEY=VALUE: source_lang,
      target_lang)
  html_formats.py python-sampled MODEL_DIR TRANSLATED PAGE...
      translate_batch(pages, format="html", sampling_topk=5, seed=3)
      joined equals TRANSLATED, the translator's output of all PAGEs at
      once with --sampling-topk 5 --seed 3: sentences are seeded by their
      number across the documents in both
  html_formats.py python-auto MODEL_DIR TSV TRANSLATED TARGET
      translate_batch(sentences, source_lang="auto", target_lang=TARGET,
      max_length=8) equals TRANSLATED, the translator's --source-lang auto
      lines of TSV's sentences
  html_formats.py python-errors MODEL_DIR MULTILINGUAL_DIR
      the arguments format="html" and source_lang="auto" refuse, each
      error printed
"""
import html
import os
import subprocess
import sys
import warnings


def fail(message):
    sys.exit("html_formats.py: " + message)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run_concatenated(translator, out_dir, pages):
    answer = subprocess.run([translator, "-q", "--format", "html"] + pages,
                            capture_output=True, timeout=600)
    if answer.returncode != 0:
        fail("translator: " + answer.stderr.decode())
    expected = b"".join(
        open(os.path.join(out_dir, os.path.basename(p)), "rb").read() for p in pages)
    if answer.stdout != expected:
        fail("the translations of %d pages at once differ from each page's alone"
             % len(pages))
    print("concatenated: %d pages, %d bytes, each as translated alone"
          % (len(pages), len(expected)))


def labelled(tsv):
    by_language = {}
    for line in read(tsv).splitlines():
        language, sentence = line.split("\t", 1)
        by_language.setdefault(language, []).append(sentence)
    return by_language


def page_of(sentences):
    """A heading, then paragraphs with an inline tag around a sentence's
    first word, and an image whose alt is a sentence."""
    e = html.escape
    parts = ["<h1>%s</h1>" % e(sentences[0])]
    for sentence in sentences[1:]:
        first, _, rest = sentence.partition(" ")
        parts.append("<p><b>%s</b> %s</p>" % (e(first), e(rest)))
    parts.append('<img src="x.png" alt="%s">' % e(sentences[-1], quote=True))
    return "<div>\n" + "\n".join(parts) + "\n</div>\n"


def run_labelled_pages(tsv, out_dir, wanted):
    os.makedirs(out_dir, exist_ok=True)
    languages = sorted((l, s) for l, s in labelled(tsv).items() if l in wanted)
    for language, sentences in languages:
        with open(os.path.join(out_dir, language + ".html"), "w", encoding="utf-8") as f:
            f.write(page_of(sentences))
    print("pages: " + " ".join(language for language, _ in languages))


def translate_page(translator, page, *options):
    answer = subprocess.run([translator, "-q", "--format", "html", page] + list(options),
                            capture_output=True, text=True, timeout=300)
    if answer.returncode != 0:
        fail("translator %s: %s" % (" ".join(options), answer.stderr))
    return answer.stdout


def run_auto_pages(translator, pages_dir, target):
    differ = 0
    names = sorted(n for n in os.listdir(pages_dir) if n.endswith(".html"))
    for name in names:
        page, language = os.path.join(pages_dir, name), name[:-len(".html")]
        common = ("--target-lang", target, "--max-length", "8")
        auto = translate_page(translator, page, "--source-lang", "auto", *common)
        given = translate_page(translator, page, "--source-lang", language, *common)
        if auto != given:
            fail("%s: --source-lang auto gave\n%s\nand --source-lang %s\n%s"
                 % (name, auto, language, given))
        english = translate_page(translator, page, "--source-lang", "en", *common)
        differ += auto != english
    if differ == 0:
        fail("every page translated with auto as with en: the test could not fail")
    print("auto pages: %d pages as their language given (%d differ from en's)"
          % (len(names), differ))


def options_of(pairs):
    out = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        out[key] = int(value) if value.isdigit() else value
    return out


def run_python_html(model_dir, pages_dir, translated_dir, pairs):
    import tfmc
    options = options_of(pairs)
    names = sorted(n for n in os.listdir(pages_dir) if n.endswith(".html"))
    pages = [read(os.path.join(pages_dir, n)) for n in names]
    expected = [read(os.path.join(translated_dir, n)) for n in names]
    translator = tfmc.Translator(model_dir)
    results = translator.translate_batch(pages, format="html", max_batch_size=7, **options)
    got = [r.hypotheses for r in results]
    for name, hypotheses, want in zip(names, got, expected):
        if hypotheses != [want]:
            fail("%s: format='html' gave %r, the translator %r" % (name, hypotheses, want))
    alone = translator.translate_batch(pages[-1:], format="html", **options)
    if alone[0].hypotheses != [expected[-1]]:
        fail("%s alone: %r" % (names[-1], alone[0].hypotheses))
    print("python html: %d documents as the translator's --format html" % len(pages))


def run_python_sampled(model_dir, translated, pages):
    import tfmc
    documents = [read(page) for page in pages]
    results = tfmc.Translator(model_dir).translate_batch(
        documents, format="html", sampling_topk=5, seed=3, max_batch_size=3)
    if "".join(r.hypotheses[0] for r in results) != read(translated):
        fail("sampled documents differ from the translator's")
    print("python sampled: %d documents as the translator's" % len(documents))


def run_python_auto(model_dir, tsv, translated, target):
    import tfmc
    sentences = [line.split("\t", 1)[1] for line in read(tsv).splitlines()]
    expected = read(translated).splitlines()
    translator = tfmc.Translator(model_dir)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        results = translator.translate_batch(sentences, source_lang="auto",
                                             target_lang=target, max_length=8)
    got = [r.hypotheses[0] for r in results]
    if got != expected:
        bad = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
        fail("source_lang='auto' differs from the translator's on sentences %s" % bad[:5])
    given_en = translator.translate_batch(sentences, source_lang="en",
                                          target_lang=target, max_length=8)
    differ = sum(r.hypotheses[0] != g for r, g in zip(given_en, got))
    print("python auto: %d sentences as the translator's --source-lang auto "
          "(%d differ from en's)" % (len(got), differ))


def error_of(call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            call()
    except Exception as e:  # noqa: BLE001 - printed for FileCheck
        return "%s: %s" % (type(e).__name__, e)
    return "no error"


def run_python_errors(model_dir, multilingual_dir):
    import tfmc
    en_de = tfmc.Translator(model_dir)
    page = ["<p>Open the file.</p>"]
    cases = [
        ("format xml", lambda: en_de.translate_batch(page, format="xml")),
        ("format 1", lambda: en_de.translate_batch(page, format=1)),
        ("n_best", lambda: en_de.translate_batch(page, format="html", beam_size=2, n_best=2)),
        ("scores", lambda: en_de.translate_batch(page, format="html", return_scores=True)),
        ("token scores", lambda: en_de.translate_batch(page, format="html",
                                                       return_token_scores=True)),
        ("prefix", lambda: en_de.translate_batch(page, format="html", target_prefix=[None])),
        ("ids document", lambda: en_de.translate_batch([[1, 2]], format="html")),
        ("one str", lambda: en_de.translate_batch(page[0], format="html")),
        ("no languages", lambda: en_de.translate_batch(["Open the file."],
                                                       source_lang="auto")),
    ]
    multi = tfmc.Translator(multilingual_dir)
    cases += [
        ("auto ids", lambda: multi.translate_batch([[5, 6]], source_lang="auto")),
        ("auto bad target", lambda: multi.translate_batch(["Hallo"], source_lang="auto",
                                                          target_lang="xx")),
        ("auto digits", lambda: multi.translate_batch(["12345"], source_lang="auto",
                                                      target_lang="de")),
    ]
    for name, call in cases:
        print("%s: %s" % (name, error_of(call)))


def main():
    args = sys.argv[1:]
    if len(args) >= 3 and args[0] == "concatenated":
        run_concatenated(args[1], args[2], args[3:])
    elif len(args) >= 4 and args[0] == "labelled-pages":
        run_labelled_pages(args[1], args[2], args[3:])
    elif len(args) == 4 and args[0] == "auto-pages":
        run_auto_pages(*args[1:])
    elif len(args) >= 4 and args[0] == "python-html":
        run_python_html(args[1], args[2], args[3], args[4:])
    elif len(args) >= 4 and args[0] == "python-sampled":
        run_python_sampled(args[1], args[2], args[3:])
    elif len(args) == 5 and args[0] == "python-auto":
        run_python_auto(*args[1:])
    elif len(args) == 3 and args[0] == "python-errors":
        run_python_errors(args[1], args[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
