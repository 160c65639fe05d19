"""The page's "Detect language" source for test/Serve/serve-page.test, in
the headless chromium of page_driver.py (whose browser, page and checks it
uses): on a server of two one-pair models (en -> de, de -> en) the source
selector offers "Detect language" first, whose targets are every served
target; an English text to de and a German one to en show the
translator's translation and alternatives of the detected pair and the
detected language with the server's confidence; German to de shows the
server's error naming the detected language. Screenshot: page-detect.png.

  page_detect_driver.py EN_DE DE_EN SRC_EN NBEST_DE SRC_DE NBEST_EN OUT_DIR

SRC_EN and SRC_DE hold a sentence each; NBEST_* the translator's `-b 4 -n
4` output for it (the page asks for 3 alternatives: a beam of 4).
"""

import os
import shutil
import sys

from page_driver import Page, browser_stack, check_translated, start_browser
from serve_driver import Server, expect, fail, post, read_lines, read_nbest


def detected_words(url, sentence, target):
    """What the page must show for the language the server detects."""
    status, answer, _ = post(url + "/translate", {"q": sentence, "source": "auto",
                                                  "target": target, "alternatives": 3})
    expect("source auto to %s: status" % target, status, 200)
    names = {"en": "English", "de": "German"}
    language = answer["detectedLanguage"]
    return "Detected: %s (%s), confidence %g%%" % (names[language["language"]],
                                                    language["language"],
                                                    language["confidence"])


def check_detected(page, url, sentence, target, nbest, language):
    page.choose("auto", target)
    shown = page.translate(sentence)
    check_translated("detect %s to %s" % (language, target), shown, nbest)
    words = detected_words(url, sentence, target)
    if "(%s)" % language not in words:
        fail("the server detected %r in %r" % (words, sentence))
    expect("detect %s to %s: the language shown" % (language, target),
           page.by_id("detected").text, words)


def check_undetectable_pair(page, sentence):
    """German to German: the server's 400 in words, no detection left shown."""
    page.choose("auto", "de")
    shown = page.translate(sentence)
    expect("German to de: state", shown["state"], "error")
    if "detected language de" not in shown["error"]:
        fail("German to de: the page shows %r" % shown["error"])
    expect("German to de: no detection left shown", page.displayed("detected"), False)


def run(page, url, src_en, nbest_de, src_de, nbest_en, out):
    page.load()
    expect("source languages", page.options("source"),
           [("auto", "Detect language"), ("de", "German (de)"), ("en", "English (en)")])
    page.choose("auto", "de")
    expect("targets of Detect language", page.options("target"),
           [("de", "German (de)"), ("en", "English (en)")])
    check_detected(page, url, src_en, "de", nbest_de, "en")
    page.screenshot(os.path.join(out, "page-detect.png"))
    check_detected(page, url, src_de, "en", nbest_en, "de")
    check_undetectable_pair(page, src_de)
    # A chosen source shows no detection.
    page.choose("en", "de")
    shown = page.translate(src_en)
    check_translated("en chosen", shown, nbest_de)
    expect("en chosen: no detection shown", page.displayed("detected"), False)


def main():
    en_de, de_en, src_en, nbest_de, src_de, nbest_en, out = sys.argv[1:8]
    src_en, src_de = read_lines(src_en)[0], read_lines(src_de)[0]
    nbest_de, nbest_en = read_nbest(nbest_de)[0], read_nbest(nbest_en)[0]
    browser_stack()
    server = Server(None, en_de, de_en)
    driver = None
    try:
        driver = start_browser(out)
        try:
            run(Page(driver, server.url), server.url, src_en, nbest_de, src_de, nbest_en, out)
        except BaseException:
            try:
                driver.save_screenshot(os.path.join(out, "page-detect-failure.png"))
            except Exception:
                pass
            raise
    finally:
        try:
            if driver:
                driver.quit()
        finally:
            expect("exit status", server.stop(), 0)
            shutil.rmtree(os.path.join(out, "profile"), ignore_errors=True)
    print("page: Detect language offers every served target; English to de and German "
          "to en show the translator's translation and alternatives and the detected "
          "language; German to de shows the server's error naming it")


if __name__ == "__main__":
    main()
