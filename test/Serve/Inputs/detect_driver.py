"""Language detection for the lit tests in test/Serve: tfm-serve's /detect
and source "auto", and the translator's --source-lang auto, against the
labelled sentences of detect-sentences.tsv (LANGUAGE<TAB>SENTENCE, made up
for these tests) and the translator's translations with the language given.

  detect_driver.py multilingual OUT TSV
      a random NLLB-like checkpoint (make_family_model.py m2m_100, NLLB's
      202 languages) whose SentencePiece model holds the words of TSV, so
      that its translators read those sentences as text
  detect_driver.py translator OUT_DIR TSV WORK
      OUT_DIR/translator --source-lang auto translates each line as
      --source-lang LABEL does, and not as --source-lang en does
  detect_driver.py pairs EN_DE DE_EN TSV CLI_EN
      /detect and source auto on two models of one pair each (en -> de,
      de -> en); CLI_EN: EN_DE's translator's lines of TSV's en sentences
  detect_driver.py mixed OUT_DIR TSV WORK
      a list q of several languages on a multilingual model: each item
      from its own language, as the translator with that language gives it
  detect_driver.py npm EN_DE DE_EN TSV CLI_EN CLI_DE MODULES WORK
      the npm packages libretranslate and libretranslate-extended
      (Inputs/npm/clients.js, MODULES: their node_modules) calling /detect
      and /translate with source auto; CLI_DE: DE_EN's translator's lines
      of TSV's de sentences
  detect_driver.py mo-sentences COUNT LANG...
      labelled sentences from the translations Debian's packages install
      (/usr/share/locale/LANG/LC_MESSAGES/*.mo, en from their msgids):
      COUNT a language of 5 to 25 words, spread over the catalogues (for
      the figures of docs/Serving.md; not run by the tests)
  detect_driver.py accuracy TSV [TSV...] --sources L,L --min P
      tfm-detect's first answer against the labels: at least P percent
      right on sentences of 5 words or more, per file
"""

import json
import os
import re
import struct
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_driver import Server, expect, fail, get, post, read_lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_FAMILY_MODEL = os.path.join(HERE, "..", "..", "models", "make_family_model.py")
# NLLB's language codes follow the pieces (fairseq's alignment: a piece's id
# is SentencePiece's + 1); their 202 codes and <mask> after them.
NLLB_LANGUAGES = 202
# Labels CLD2 names otherwise when no model knows them: "nb" (Norwegian
# Bokmål, NLLB's nob_Latn) is CLD2's "no".
CLD2_CODES = {"nb": "no"}


def labelled(path):
    """[(language, sentence)] of a TSV file."""
    out = []
    for line in read_lines(path):
        language, sentence = line.split("\t", 1)
        out.append((language, sentence))
    return out


# --- a multilingual model that reads the sentences as text ------------------

def varint(n):
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def field(number, payload):
    """A length-delimited protobuf field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def write_spm(path, pieces):
    """A serialized SentencePiece ModelProto (unigram, identity normalizer):
    <unk>, <s>, </s>, then `pieces`, as test/Integration/Inputs/languages.py
    writes one (Debian's python3-sentencepiece has no protobuf module)."""
    entries = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    entries += [(text, -1.0 - i / 1000, 1) for i, text in enumerate(pieces)]
    model = b""
    for text, score, kind in entries:
        piece = field(1, text.encode()) + varint(2 << 3 | 5) + \
            struct.pack("<f", score) + varint(3 << 3) + varint(kind)
        model += field(1, piece)
    model += field(2, varint(3 << 3) + varint(1))
    model += field(3, field(1, b"identity"))
    with open(path, "wb") as f:
        f.write(model)


def run_multilingual(out, tsv):
    words = []
    for _, sentence in labelled(tsv):
        for word in sentence.split():
            if "\u2581" + word not in words:
                words.append("\u2581" + word)
    # specials (3) + words, shifted by one, then the languages and <mask>.
    vocab = 1 + 3 + len(words) + NLLB_LANGUAGES + 1
    subprocess.run([sys.executable, MAKE_FAMILY_MODEL, "m2m_100", out, "--size", "tiny",
                    "--sentences", "2", "--forced-bos-token-id", "-1", "--seed", "1",
                    "--vocab", str(vocab)], check=True)
    if os.path.exists(os.path.join(out, "vocab.json")):
        os.remove(os.path.join(out, "vocab.json"))
    write_spm(os.path.join(out, "sentencepiece.bpe.model"), words)
    print("multilingual: %d pieces, vocabulary %d" % (len(words), vocab))


# --- the translator ----------------------------------------------------------

def translator_lines(translator, lines, *options, quiet=True):
    answer = subprocess.run([translator] + (["-q"] if quiet else []) + list(options),
                            input="".join(line + "\n" for line in lines),
                            capture_output=True, text=True, timeout=300)
    if answer.returncode != 0:
        fail("translator %s: %s" % (" ".join(options), answer.stderr))
    return answer.stdout.split("\n")[:-1], answer.stderr


def given_language(translator, sentences, target, *options):
    """Each sentence translated with its labelled language given."""
    out = [None] * len(sentences)
    for language in sorted({language for language, _ in sentences}):
        indexes = [i for i, (l, _) in enumerate(sentences) if l == language]
        lines, _ = translator_lines(translator, [sentences[i][1] for i in indexes],
                                    "--source-lang", language, "--target-lang", target,
                                    *options)
        for i, line in zip(indexes, lines):
            out[i] = line
    return out


def run_translator(out_dir, tsv, work):
    """Scores with the translations (a sentence alone in its batch, so that
    they are exact): a random model's words may not show the language token,
    its score does."""
    translator = os.path.join(out_dir, "translator")
    sentences = [s for s in labelled(tsv) if s[0] in ("en", "de", "fr", "es", "it")]
    texts = [sentence for _, sentence in sentences]
    scored = ("--with-scores", "--batch-size", "1", "--max-length", "8")
    auto, warnings = translator_lines(translator, texts, "--source-lang", "auto",
                                      "--target-lang", "de", *scored)
    expect("--source-lang auto, line by line", auto,
           given_language(translator, sentences, "de", *scored))
    expect("warnings on labelled sentences", warnings, "")
    as_english, _ = translator_lines(translator, texts, "--source-lang", "en",
                                     "--target-lang", "de", *scored)
    differ = sum(a != e for a, e in zip(auto, as_english))
    if differ == 0:
        fail("--source-lang auto translated every line as --source-lang en does: "
             "the language token would not matter, and this test could not fail")
    # A line of no language: the default framing and a warning naming it.
    lines, warnings = translator_lines(translator, ["12345", texts[0]], "--source-lang", "auto",
                                       "--target-lang", "de", *scored, quiet=False)
    default, _ = translator_lines(translator, ["12345"], "--target-lang", "de", *scored)
    expect("a line of digits", lines[0], default[0])
    expect("the warning", warnings, "translator: warning: stdin:1: no language detected: the "
           "line is framed as the tokenizer's default source language\n")
    print("translator: --source-lang auto as the labelled language on %d lines "
          "(%d differ from en's); undetected lines keep the default with a warning"
          % (len(auto), differ))


# --- tfm-serve ---------------------------------------------------------------

def detect(url, q, **fields):
    return post(url + "/detect", dict(q=q, **fields))


def check_detect(url, sentences):
    """/detect's first language is the label for en and de (the sources);
    other languages come after the sources they are not, never before."""
    for language, sentence in sentences:
        status, answer, _ = detect(url, sentence)
        expect("/detect status of %r" % sentence, status, 200)
        if not isinstance(answer, list) or not answer or \
                set(answer[0]) != {"confidence", "language"}:
            fail("/detect of %r: %r" % (sentence, answer))
        found = [a["language"] for a in answer]
        if language in ("en", "de"):
            expect("/detect of %r" % sentence, found[0], language)
        elif CLD2_CODES.get(language, language) not in found:
            fail("/detect of %r: %r, without %s" % (sentence, answer, language))
        confidence = answer[0]["confidence"]
        if not (0 < confidence <= 100):
            fail("/detect confidence of %r: %r" % (sentence, confidence))
    # A form, and nothing to detect: LibreTranslate's fallback.
    body = urllib.parse.urlencode({"q": sentences[0][1]}).encode()
    status, answer, _ = post(url + "/detect", body, "application/x-www-form-urlencoded")
    expect("/detect of a form", (status, answer[0]["language"]), (200, sentences[0][0]))
    expect("/detect of digits", detect(url, "12345")[:2],
           (200, [{"confidence": 0.0, "language": "en"}]))


def check_auto(url, sentences, cli_en):
    english = [s for l, s in sentences if l == "en"]
    german = [s for l, s in sentences if l == "de"]
    status, answer, _ = post(url + "/translate", {"q": english, "source": "auto", "target": "de"})
    expect("auto to de: status", status, 200)
    expect("auto to de: translations", answer["translatedText"], cli_en)
    expect("auto to de: languages", [d["language"] for d in answer["detectedLanguage"]],
           ["en"] * len(english))
    status, answer, _ = post(url + "/translate",
                             {"q": english[0], "source": "auto", "target": "de"})
    expect("auto, one q", (status, answer["translatedText"], answer["detectedLanguage"]["language"]),
           (200, cli_en[0], "en"))
    # German to German: the language is named, and the item.
    status, answer, _ = post(url + "/translate",
                             {"q": [english[0], german[1]], "source": "auto", "target": "de"})
    expect("German to de", status, 400)
    if "q[1]: detected language de" not in answer.get("error", ""):
        fail("German to de: %r" % answer)
    for language, sentence in sentences:
        if language in ("en", "de"):
            continue
        status, answer, _ = post(url + "/translate",
                                 {"q": sentence, "source": "auto", "target": "de"})
        expect("%s to de: status" % language, status, 400)
        if "detected language %s" % CLD2_CODES.get(language, language) not in \
                answer.get("error", ""):
            fail("%s to de: %r" % (language, answer))


def bad_detect_requests():
    """(what, body, content type, expected status, words of the message)."""
    json_type = "application/json"
    return [
        ("no q", b'{"api_key": "k"}', json_type, 400, "missing q"),
        ("empty q", b'{"q": ""}', json_type, 400, "q is empty"),
        ("empty list", b'{"q": []}', json_type, 400, "q is empty"),
        ("q a number", b'{"q": 5}', json_type, 400, "q must be a string"),
        ("q[1] a number", b'{"q": ["a", 5]}', json_type, 400, "q[1] must be a string"),
        ("q an object", b'{"q": {"a": 1}}', json_type, 400, "q must be a string"),
        ("api_key a number", b'{"q": "Hallo Welt", "api_key": 5}', json_type, 400,
         "api_key must be a string"),
        ("invalid UTF-8", b'{"q": "\xff\xfe Hallo"}', json_type, 400, "Invalid JSON"),
        ("a lone surrogate", b'{"q": "\\ud800 Hallo"}', json_type, 400, ""),
        ("invalid UTF-8 in a form", b"q=%FF%FE", "application/x-www-form-urlencoded", 400,
         "q is not valid UTF-8"),
        ("overlong", json.dumps({"q": "a" * 5001}).encode(), json_type, 400,
         "more than the limit of 5000"),
        ("a key twice", b'{"q": "a", "q": "b"}', json_type, 400, "appears twice"),
        ("not JSON", b'{"q": ', json_type, 400, "Invalid JSON"),
        ("a list body", b'["q"]', json_type, 400, "expected an object"),
        ("text/plain", b"q=a", "text/plain", 415, "Content-Type"),
    ]


def check_bad_input(url):
    for what, body, content_type, status, words in bad_detect_requests():
        code, answer, _ = post(url + "/detect", body, content_type)
        if code != status or words not in str(answer):
            fail("/detect with %s: %d %r, expected %d naming %r" % (what, code, answer, status,
                                                                     words))
    bad_auto = [
        ({"q": "Hallo Welt", "source": "auto", "target": "xx"}, "xx is not supported"),
        ({"q": ["Open the file.", 7], "source": "auto", "target": "de"}, "q[1] must be a string"),
        ({"q": "Open the file.", "source": "auto", "target": 5}, "target must be a string"),
        ({"q": ["Open the file.", ""], "source": "auto", "target": "de"}, None),
    ]
    for body, words in bad_auto:
        code, answer, _ = post(url + "/translate", body)
        if words is None:  # an empty item of a list is an empty translation
            expect("an empty item", (code, answer["translatedText"][1]), (200, ""))
            continue
        if code != 400 or words not in str(answer):
            fail("/translate %r: %d %r, expected 400 naming %r" % (body, code, answer, words))
    return len(bad_detect_requests()) + len(bad_auto)


def run_pairs(en_de, de_en, tsv, cli_en_path):
    sentences = labelled(tsv)
    server = Server(None, en_de, de_en)
    try:
        check_detect(server.url, sentences)
        check_auto(server.url, sentences, read_lines(cli_en_path))
        bad = check_bad_input(server.url)
    finally:
        expect("exit status", server.stop(), 0)
    print("pairs: /detect ranks the sources first and names the others; source auto "
          "translates as the translator, 400 naming the language no model translates; "
          "%d bad requests answered 4xx naming the field" % bad)


def run_mixed(out_dir, tsv, work):
    translator = os.path.join(out_dir, "translator")
    sentences = [s for s in labelled(tsv) if s[0] in ("en", "de", "fr", "es", "it", "nb")]
    # Interleaved, so that items of one language are not neighbours.
    sentences = [s for _, s in sorted(enumerate(sentences), key=lambda p: (p[0] % 6, p[1][0]))]
    expected = given_language(translator, sentences, "nl")
    server = Server(out_dir)
    try:
        status, answer, _ = post(server.url + "/translate",
                                 {"q": [s for _, s in sentences] + [" "], "source": "auto",
                                  "target": "nl"})
        digits = post(server.url + "/translate", {"q": ["12345"], "source": "auto",
                                                  "target": "nl"})
    finally:
        expect("exit status", server.stop(), 0)
    expect("mixed list: status", (status, answer.get("error")), (200, None))
    expect("mixed list: languages", [d["language"] for d in answer["detectedLanguage"][:-1]],
           [l for l, _ in sentences])
    expect("mixed list: translations", answer["translatedText"][:-1], expected)
    # A blank item is blank from any language; digits, of no language, are
    # refused when many languages reach the target.
    expect("a blank item", (answer["translatedText"][-1],
                            answer["detectedLanguage"][-1]["confidence"]), ("", 0.0))
    if digits[0] != 400 or "q[0]: no language detected" not in digits[1].get("error", ""):
        fail("digits to nl: %r" % (digits[:2],))
    print("mixed: %d items in %d languages, each translated from its own; a blank item "
          "blank, digits refused" % (len(sentences), len({l for l, _ in sentences})))


# --- clients from npm ----------------------------------------------------------

def run_npm(en_de, de_en, tsv, cli_en_path, cli_de_path, modules, work):
    sentences = labelled(tsv)
    english = [s for l, s in sentences if l == "en"]
    german = [s for l, s in sentences if l == "de"]
    cli_en, cli_de = read_lines(cli_en_path), read_lines(cli_de_path)
    input_path = os.path.join(work, "npm-input.json")
    with open(input_path, "w") as f:
        json.dump({"english": english, "german": german}, f)
    server = Server(None, en_de, de_en)
    try:
        answer = subprocess.run(["node", os.path.join(HERE, "npm", "clients.js"), server.url,
                                 input_path], capture_output=True, text=True, timeout=300,
                                env=dict(os.environ, NODE_PATH=modules), cwd=work)
        status, top, _ = post(server.url + "/detect", {"q": german[0]})
        metrics = get(server.url + "/metrics")[1]
    finally:
        expect("exit status", server.stop(), 0)
    if answer.returncode != 0:
        fail("the npm clients failed: %s" % answer.stderr)
    out = json.loads(answer.stdout)
    expect("libretranslate, source auto to de", out["plainToGerman"], cli_en)
    expect("libretranslate, no source to en", out["plainToEnglish"], cli_de)
    expect("libretranslate-extended's detectLanguage", out["detected"],
           ["en"] * len(english) + ["de"] * len(german))
    expect("libretranslate-extended's /detect", (status, out["detectTop"]), (200, top[0]))
    expect("libretranslate-extended's translate", out["extendedToGerman"], cli_en[0])
    expect("libretranslate-extended, a list q: translations", out["listToGerman"]["text"], cli_en)
    expect("libretranslate-extended, a list q: languages",
           [d["language"] for d in out["listToGerman"]["detectedLanguage"]], ["en"] * len(english))
    if "HTTP 400" not in out["emptyDetect"] or "q is empty" not in out["emptyDetect"]:
        fail("libretranslate-extended's /detect of nothing: %r" % out["emptyDetect"])
    if "HTTP 400" not in out["germanToGerman"] or \
            "detected language de" not in out["germanToGerman"]:
        fail("libretranslate-extended, German to de: %r" % out["germanToGerman"])
    # detectLanguage falls back to /translate when /detect fails: every one
    # of its calls, the direct one and ours must have reached /detect.
    detects = re.search(r'tfm_serve_requests_total\{path="/detect",code="200"\} (\d+)', metrics)
    expect("/detect answered 200", int(detects.group(1)) if detects else 0,
           len(english) + len(german) + 2)
    print("npm: libretranslate and libretranslate-extended detect and translate from auto "
          "as the translator does with the language given")


# --- sentences from Debian's translations ------------------------------------

def mo_texts(language):
    """(catalogue, text) of every message of the language's .mo files."""
    import gettext
    import glob
    domain = "de" if language == "en" else language
    for path in sorted(glob.glob("/usr/share/locale/%s/LC_MESSAGES/*.mo" % domain)):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except Exception:
            continue
        for key, value in catalog.items():
            original = key[0] if isinstance(key, tuple) else key
            # A message left as its English original is no sentence of the
            # language (names, commands).
            if language != "en" and value == original:
                continue
            text = original if language == "en" else value
            if text:
                yield os.path.basename(path), text.split("\n")[0].strip()


def run_mo_sentences(count, *languages):
    for language in languages:
        seen, kept = set(), []
        for catalog, text in mo_texts(language):
            if 5 <= len(text.split()) <= 25 and text not in seen and "\t" not in text:
                seen.add(text)
                kept.append(text)
        # Every k-th: spread over the catalogues rather than the first one.
        step = max(1, len(kept) // int(count))
        for text in kept[::step][:int(count)]:
            print("%s\t%s" % (language, text))


# --- accuracy ----------------------------------------------------------------

def run_accuracy(*args):
    paths, sources, minimum = [], "", 95.0
    args = list(args)
    while args:
        arg = args.pop(0)
        if arg == "--sources":
            sources = args.pop(0)
        elif arg == "--min":
            minimum = float(args.pop(0))
        else:
            paths.append(arg)
    for path in paths:
        sentences = [(l, s) for l, s in labelled(path) if len(s.split()) >= 5]
        answer = subprocess.run(["tfm-detect", "--sources", sources, "--time"],
                                input="".join(s + "\n" for _, s in sentences),
                                capture_output=True, text=True, timeout=300, check=True)
        found = [line.split("\t")[0] for line in answer.stdout.split("\n")[:-1]]
        right = sum(f == l for f, (l, _) in zip(found, sentences))
        percent = 100.0 * right / max(1, len(sentences))
        micros = float(re.search(r"([\d.]+) us a detection", answer.stderr).group(1))
        # The figures, for docs/Serving.md; stdout holds what the test checks.
        sys.stderr.write("%s: %d of %d right (%.1f%%), %.1f us a detection\n"
                         % (os.path.basename(path), right, len(sentences), percent, micros))
        if len(found) != len(sentences) or percent < minimum:
            fail("%s: %d of %d right (%.1f%%), expected at least %.1f%%"
                 % (os.path.basename(path), right, len(sentences), percent, minimum))
        if micros > 1000:
            fail("%s: %.1f us a detection, more than 1 ms" % (os.path.basename(path), micros))
        print("accuracy: %s at least %.0f%% right, under 1 ms a detection"
              % (os.path.basename(path), minimum))


def main():
    commands = {"multilingual": run_multilingual, "translator": run_translator,
                "pairs": run_pairs, "mixed": run_mixed, "npm": run_npm,
                "mo-sentences": run_mo_sentences, "accuracy": run_accuracy}
    commands[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
