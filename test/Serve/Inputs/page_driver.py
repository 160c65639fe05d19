"""Drives tfm-serve's page (GET /) in a real browser for
test/Serve/serve-page.test: Debian's chromium, headless, through selenium
and chromedriver. It loads the page from a server on a free loopback port,
waits for the language selectors to fill, chooses the pair, types
sentences and translates them (the button, then Ctrl+Enter), and reads
back what the page shows: the translation and its alternatives must be the
translator's (its n-best from the same beam); an over-long text must show
the server's error in its words, a translation holding markup must stay
text, a stopped server must read "Server unreachable", and the browser
must refuse a request to another origin (the page's policy). Then, on a
server with --api-keys, the page must show a key field that a translation
needs and that keeps the key across a reload. Screenshots go
to OUT_DIR. Every wait is bounded; the browser and the server are stopped
even when a check fails.

  page_driver.py MODEL SRC NBEST PAGE_FILE OUT_DIR

SRC holds two sentences, NBEST the translator's `-b 4 -n 4` output for
them (the page asks for 3 alternatives: a beam of 4), PAGE_FILE is
tools/serve/page/index.html (GET / must serve exactly its bytes).
"""

import importlib.util
import json
import os
import shutil
import sys
import urllib.request

from serve_driver import (Server, expect, fail, get, post, read_lines, read_nbest,
                          unique_alternatives)

# The page asks for as many alternatives as LibreTranslate's does.
ALTERNATIVES = 3
# A small --max-q-chars: a text past it is the error case the page shows.
MAX_CHARS = 200
# The key of the server that requires one.
KEY = "page-key-7"
# Seconds the page may take to load, fill its selectors or show an answer.
WAIT = 30
# Seconds any one command to chromedriver may take.
DRIVER_TIMEOUT = 60

# A translation that is markup: shown as text it adds no element, and its
# handler never runs.
MARKUP = '<img id="injected" src="x" onerror="window.injected = 1"><b>bold</b>'

# Makes the page's own fetch answer /translate with MARKUP, as a server
# whose model emitted it would; other requests go to the server.
FAKE_TRANSLATE = """
const markup = arguments[0];
window.realFetch = window.fetch;
window.fetch = (path, init) => String(path).endsWith("translate")
    ? Promise.resolve(new Response(
          JSON.stringify({translatedText: markup, alternatives: [markup]}),
          {status: 200, headers: {"Content-Type": "application/json"}}))
    : window.realFetch(path, init);
"""

# A request to another origin from inside the page: the browser must refuse
# it under the page's Content-Security-Policy (connect-src 'self').
POLICY_PROBE = """
const done = arguments[arguments.length - 1];
document.addEventListener("securitypolicyviolation",
    (event) => done(event.effectiveDirective), {once: true});
fetch("http://127.0.0.2:9/").catch(() => {});
setTimeout(() => done("no violation"), 5000);
"""


def browser_stack():
    """Fails naming the Debian package when a part of the browser stack is
    missing (scripts/setup.sh installs them): a test that passed without a
    browser would prove nothing."""
    if importlib.util.find_spec("selenium") is None:
        fail("selenium is not importable by %s: install Debian's python3-selenium "
             "(scripts/setup.sh)" % sys.executable)
    for binary, package in [("chromium", "chromium"), ("chromedriver", "chromium-driver")]:
        if not shutil.which(binary):
            fail("%s not found: install Debian's %s (scripts/setup.sh)" % (binary, package))


def keys_file(out):
    path = os.path.join(out, "keys.txt")
    with open(path, "w") as f:
        f.write("other-key\n%s\n" % KEY)
    return path


def start_browser(out):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.remote.remote_connection import RemoteConnection

    RemoteConnection.set_timeout(DRIVER_TIMEOUT)
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    # --no-sandbox: chromium refuses its sandbox as root (tests run as root
    # in CI containers); --disable-dev-shm-usage: containers give /dev/shm
    # 64 MB. A profile of its own: tests run in parallel.
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu",
                 "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(out, "profile"),
                 "--window-size=1100,700", "--no-first-run", "--disable-extensions",
                 "--disable-background-networking", "--disable-sync"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = DriverService(shutil.which("chromedriver"),
                            log_path=os.path.join(out, "chromedriver.log"))
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except Exception as error:  # selenium's errors carry chromium's reason
        fail("chromium did not start under chromedriver: %s" % str(error).strip()[:2000])
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    return driver


# --- the page ---------------------------------------------------------------


class Page:
    """The page in the browser, read as a user sees it."""

    def __init__(self, driver, url):
        self.driver = driver
        self.url = url

    def by_id(self, id):
        from selenium.webdriver.common.by import By
        return self.driver.find_element(By.ID, id)

    def script(self, code, *args):
        return self.driver.execute_script(code, *args)

    def wait(self, what, condition):
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait
        try:
            return WebDriverWait(self.driver, WAIT, poll_frequency=0.1).until(
                lambda _: condition())
        except TimeoutException:
            fail("%s: not within %d s; the page shows %r" % (what, WAIT, self.shown()))

    def load(self):
        self.driver.get(self.url + "/")
        self.wait("the language selectors filled", lambda: self.script(
            "return document.getElementById('target').options.length") > 0)

    def displayed(self, id):
        from selenium.webdriver.common.by import By
        found = self.driver.find_elements(By.ID, id)
        if not found:
            fail("the page has no element #%s" % id)
        return found[0].is_displayed()

    def type_key(self, key):
        field = self.by_id("api-key")
        field.clear()
        field.send_keys(key)

    def options(self, id):
        from selenium.webdriver.support.select import Select
        return [(o.get_attribute("value"), o.text) for o in Select(self.by_id(id)).options]

    def choose(self, source, target):
        from selenium.webdriver.support.select import Select
        Select(self.by_id("source")).select_by_value(source)
        Select(self.by_id("target")).select_by_value(target)

    def shown(self):
        """What the page shows: its state, translation, alternatives, error.
        Visible text (what selenium reads as a user would) and the
        translation's exact text and element count."""
        alternatives = self.by_id("alternatives-box")
        return {
            "state": self.by_id("app").get_attribute("data-state"),
            "translation": self.by_id("translation").text,
            "exact": self.by_id("translation").get_property("textContent"),
            "elements": self.script(
                "return document.querySelectorAll('#translation *, #alternatives li *, "
                "#error *').length"),
            "alternatives": [li.text for li in alternatives.find_elements("tag name", "li")]
                            if alternatives.is_displayed() else [],
            "error": self.by_id("error").text,
        }

    def translate(self, text, keyboard=False):
        """Types text, translates it (the button or Ctrl+Enter) and returns
        what the page shows once the answer is in."""
        from selenium.webdriver.common.keys import Keys
        box = self.by_id("q")
        box.clear()
        box.send_keys(text)
        answered = int(self.by_id("app").get_attribute("data-answered"))
        if keyboard:
            box.send_keys(Keys.CONTROL, Keys.ENTER)
        else:
            self.by_id("translate").click()
        self.wait("the answer to %r" % text[:60], lambda: int(
            self.by_id("app").get_attribute("data-answered")) > answered)
        return self.shown()

    def screenshot(self, path):
        if not self.driver.save_screenshot(path):
            fail("no screenshot at " + path)
        with open(path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                fail(path + " is not a PNG")

    def console_errors(self):
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]


# --- checks -------------------------------------------------------------------


def check_served(url, page_file):
    """GET / is the source tree's page, as HTML, with its policy and caching."""
    with urllib.request.urlopen(url + "/", timeout=WAIT) as answer:
        body, headers = answer.read(), answer.headers
    with open(page_file, "rb") as f:
        if body != f.read():
            fail("GET / is not %s: the embedded page is stale or altered" % page_file)
    expect("Content-Type", headers.get("Content-Type"), "text/html; charset=utf-8")
    policy = headers.get("Content-Security-Policy", "")
    for directive in ["default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'"]:
        if directive not in policy:
            fail("Content-Security-Policy lacks %r: %r" % (directive, policy))
    if not headers.get("Cache-Control"):
        fail("GET / has no Cache-Control")


def expected_answer(nbest):
    texts = [text for text, _ in nbest]
    return texts[0], unique_alternatives(texts[0], texts[1:])


def check_translated(what, shown, nbest):
    translation, alternatives = expected_answer(nbest)
    expect(what + ": state", shown["state"], "done")
    expect(what + ": translation's text", shown["exact"], translation)
    expect(what + ": translation shown", shown["translation"], translation.strip())
    expect(what + ": alternatives shown", shown["alternatives"],
           [a.strip() for a in alternatives])
    expect(what + ": error shown", shown["error"], "")


def check_server_error(page, url, sentence):
    """A text past --max-q-chars: the page shows the server's own message."""
    text = " ".join([sentence] * (MAX_CHARS // len(sentence) + 2))
    status, answer, _ = post(url + "/translate", {"q": text, "source": "en", "target": "de",
                                                  "format": "text",
                                                  "alternatives": ALTERNATIVES})
    expect("the server's answer to an over-long text", (status, "error" in answer), (400, True))
    shown = page.translate(text)
    expect("over-long text: state", shown["state"], "error")
    expect("over-long text: the error shown", shown["error"], answer["error"])
    expect("over-long text: no translation left shown",
           (shown["translation"], shown["alternatives"]), ("", []))


def check_markup_stays_text(page, sentence):
    page.script(FAKE_TRANSLATE, MARKUP)
    shown = page.translate(sentence)
    page.script("window.fetch = window.realFetch;")
    expect("markup: shown as text", (shown["exact"], shown["alternatives"]), (MARKUP, [MARKUP]))
    expect("markup: elements made from it", shown["elements"], 0)
    expect("markup: its handler did not run",
           page.script("return window.injected === undefined"), True)


def check_unreachable(page, server, sentence):
    expect("exit status after SIGTERM", server.stop(), 0)
    shown = page.translate(sentence)
    expect("stopped server: state", shown["state"], "error")
    if not shown["error"].startswith("Server unreachable"):
        fail("stopped server: the page shows %r, not 'Server unreachable...'" % shown["error"])
    expect("stopped server: no translation left shown", shown["translation"], "")


def check_settings(url, keys):
    """/frontend/settings as LibreTranslate's: its fields and their types."""
    status, text = get(url + "/frontend/settings", WAIT)
    expect("/frontend/settings status", status, 200)
    expect("/frontend/settings", json.loads(text), {
        "charLimit": MAX_CHARS, "frontendTimeout": 500, "apiKeys": keys,
        "keyRequired": keys, "suggestions": False, "filesTranslation": True,
        "supportedFilesFormat": [".txt", ".html", ".htm"],
        "language": {"source": {"code": "en", "name": "English"},
                     "target": {"code": "de", "name": "German"}}})


def run_page(page, server, src, nbest, out):
    check_settings(server.url, False)
    page.load()
    expect("the key field without --api-keys", page.displayed("key-box"), False)
    expect("source languages", page.options("source"),
           [("auto", "Detect language"), ("en", "English (en)")])
    expect("target languages", page.options("target"), [("de", "German (de)")])
    page.choose("en", "de")
    check_translated("button", page.translate(src[0]), nbest[0])
    page.screenshot(os.path.join(out, "page.png"))
    errors = page.console_errors()
    if errors:
        fail("the browser's console has errors (a blocked script or style?): %r" % errors)
    expect("a request to another origin refused by",
           page.driver.execute_async_script(POLICY_PROBE), "connect-src")
    check_server_error(page, server.url, src[1])
    page.screenshot(os.path.join(out, "page-error.png"))
    check_translated("Ctrl+Enter after an error", page.translate(src[1], keyboard=True), nbest[1])
    check_markup_stays_text(page, src[0])
    check_unreachable(page, server, src[0])
    page.screenshot(os.path.join(out, "page-unreachable.png"))


def run_keyed_page(page, server, src, nbest, out):
    """With --api-keys the page shows a key field: without a key, or with a
    wrong one, the server's 403 message; with the key typed, translations;
    after a reload the key is still there (localStorage) and serves."""
    check_settings(server.url, True)
    page.console_errors()  # the first server's, read and dropped
    page.load()
    expect("the key field with --api-keys", page.displayed("key-box"), True)
    expect("the browser's console after loading with --api-keys", page.console_errors(), [])
    expect("the key field at first", page.by_id("api-key").get_property("value"), "")
    for key, message in [("", "Invalid request: an API key (api_key) is required"),
                         ("wrong", "Invalid API key")]:
        page.type_key(key)
        shown = page.translate(src[0])
        expect("key %r: state and error" % key, (shown["state"], shown["error"]),
               ("error", message))
    page.type_key(KEY)
    check_translated("the key typed", page.translate(src[0]), nbest[0])
    page.screenshot(os.path.join(out, "page-key.png"))
    page.load()
    expect("the key after a reload", page.by_id("api-key").get_property("value"), KEY)
    check_translated("after a reload", page.translate(src[1], keyboard=True), nbest[1])


def main():
    model, src_path, nbest_path, page_file, out = sys.argv[1:6]
    src, nbest = read_lines(src_path), read_nbest(nbest_path)
    expect("sentences in " + src_path, (len(src), len(nbest)), (2, 2))
    browser_stack()
    server = Server(model, "--max-q-chars", str(MAX_CHARS))
    driver = None
    try:
        check_served(server.url, page_file)
        driver = start_browser(out)
        page = Page(driver, server.url)
        try:
            run_page(page, server, src, nbest, out)
            keyed = Server(model, "--max-q-chars", str(MAX_CHARS), "--api-keys", keys_file(out))
            try:
                run_keyed_page(Page(driver, keyed.url), keyed, src, nbest, out)
            finally:
                keyed.stop()
        except BaseException:
            # What the page showed when a check failed; a browser that died
            # leaves none, and the check's own message is the one to keep.
            try:
                driver.save_screenshot(os.path.join(out, "page-failure.png"))
            except Exception:
                pass
            raise
    finally:
        try:
            if driver:
                driver.quit()
        finally:
            server.stop()
            # The browser's profile (megabytes of caches) is no artifact.
            shutil.rmtree(os.path.join(out, "profile"), ignore_errors=True)
    print("page: GET / serves the source tree's page with its policy; languages en -> de; "
          "the translator's translation and alternatives (button, Ctrl+Enter); the "
          "server's error and 'Server unreachable' in words; markup stays text; other "
          "origins refused")
    print("page: with --api-keys a key field; without the key the server's 403 in "
          "words; with it typed the translation; the key kept across a reload")


if __name__ == "__main__":
    main()
