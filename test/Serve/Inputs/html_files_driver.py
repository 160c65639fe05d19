"""Drives tfm-serve's format html and /translate_file for
test/Serve/serve-html.test. Starts the server on a free loopback port with
serve_driver's helpers and always stops it (a failure included). Every
wait is bounded.

  html_files_driver.py html MODEL PAGES REFERENCE OUT
      each page of PAGES through /translate with format html (one a
      request, three in one array, as a form, with alternatives, with
      source auto) must equal REFERENCE/<page> (tfm-html-translate's);
      the answers are written to OUT for html_check.py
  html_files_driver.py files MODEL SRC PAGES REFERENCE
      .txt and .html uploads equal /translate's answers; the download's
      headers; downloads until --file-expiry, then 404; --max-files
  html_files_driver.py hostile MODEL
      malformed and hostile multipart requests and downloads: each a 4xx
      whose error names the problem
"""

import json
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_driver  # noqa: E402
from serve_driver import Server, expect, get, post  # noqa: E402


class Failure(Exception):
    pass


def fail(message):
    raise Failure(message)


# serve_driver's checks end the process at once; here they raise, so that
# the server is stopped in `finally`.
serve_driver.fail = fail


def started(model, *options):
    return Server(model, *options)


def stop(server):
    if server.alive():
        server.proc.kill()
        server.proc.wait(30)


def translate_html(url, q, **fields):
    body = dict(q=q, source="en", target="de", format="html")
    body.update(fields)
    return post(url + "/translate", body)


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def pages_of(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith(".html"))


# --- multipart ---------------------------------------------------------------


BOUNDARY = "tfmTestBoundary7MA4YWxkTrZu0gW"


def multipart(parts, boundary=BOUNDARY):
    """A multipart/form-data body of (name, value) or (name, filename,
    bytes) parts, built by hand."""
    out = b""
    for part in parts:
        out += b"--" + boundary.encode() + b"\r\n"
        if len(part) == 2:
            name, value = part
            out += b'Content-Disposition: form-data; name="%s"\r\n\r\n' % name.encode()
            out += value.encode() + b"\r\n"
        else:
            name, filename, data = part
            out += (b'Content-Disposition: form-data; name="%s"; filename="%s"\r\n'
                    % (name.encode(), filename.encode()))
            out += b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
    return out + b"--" + boundary.encode() + b"--\r\n"


def upload(url, filename, data, source="en", target="de", extra=()):
    parts = [("source", source), ("target", target), ("file", filename, data), *extra]
    return post(url + "/translate_file", multipart(parts),
                "multipart/form-data; boundary=" + BOUNDARY)


def download(file_url):
    """(status, bytes, headers) of a GET."""
    try:
        with urllib.request.urlopen(file_url, timeout=serve_driver.TIMEOUT) as answer:
            return answer.status, answer.read(), answer.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def uploaded(url, filename, data, **fields):
    """The translated file of an upload, and its download's headers."""
    status, answer, _ = upload(url, filename, data, **fields)
    expect("upload of %s" % filename, status, 200)
    file_url = answer["translatedFileUrl"]
    if not re.fullmatch(r"http://127\.0\.0\.1:\d+/download_file/[A-Za-z0-9]{32}", file_url):
        fail("translatedFileUrl %r is not this server's /download_file/<32 letters "
             "and digits>" % file_url)
    status, content, headers = download(file_url)
    expect("download of %s" % filename, status, 200)
    return file_url, content.decode("utf-8"), headers


# --- html ----------------------------------------------------------------------


def check_pages_one_by_one(url, pages, reference, out):
    for name in pages_of(pages):
        status, answer, _ = translate_html(url, read(os.path.join(pages, name)))
        expect("%s: status" % name, (status, sorted(answer)), (200, ["translatedText"]))
        expect("%s: as tfm-html-translate translates it" % name, answer["translatedText"],
               read(os.path.join(reference, name)))
        with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
            f.write(answer["translatedText"])


def check_pages_together(url, pages, reference):
    names = pages_of(pages)[:3]
    q = [read(os.path.join(pages, name)) for name in names]
    expected = [read(os.path.join(reference, name)) for name in names]
    status, answer, _ = translate_html(url, q)
    expect("three pages in one request", (status, answer),
           (200, {"translatedText": expected}))
    status, answer, _ = translate_html(url, q, alternatives=2)
    expect("html with alternatives: LibreTranslate's empty ones", (status, answer),
           (200, {"translatedText": expected, "alternatives": [[], [], []]}))
    # A form body holds 8 KiB (cpp-httplib's limit): the smallest page.
    smallest = min(pages_of(pages), key=lambda name: len(read(os.path.join(pages, name))))
    form = urllib.parse.urlencode({"q": read(os.path.join(pages, smallest)), "source": "en",
                                   "target": "de", "format": "html"}).encode()
    status, answer, _ = post(url + "/translate", form, "application/x-www-form-urlencoded")
    expect("a form's format html (%d bytes)" % len(form), (status, answer),
           (200, {"translatedText": read(os.path.join(reference, smallest))}))
    status, answer, _ = post(url + "/translate", {"q": q[0], "source": "auto", "target": "de",
                                                  "format": "html"})
    detected = answer.get("detectedLanguage", {})
    expect("html with source auto",
           (status, answer.get("translatedText"), detected.get("language"),
            detected.get("confidence", 0) > 50), (200, expected[0], "en", True))
    # Detected on the text, not the markup: German text in English markup
    # (tags, attribute names, a script) is German.
    german = ('<div class="content" id="main"><script>var enabled = true;</script>'
              '<p title="Die Datei">Die Datei wurde nicht gefunden. Bitte '
              'versuchen Sie es später noch einmal.</p></div>')
    status, answer, _ = post(url + "/translate", {"q": german, "source": "auto",
                                                  "target": "de", "format": "html"})
    expect("German html to de",
           (status, "detected language de" in answer.get("error", "")), (400, True))
    status, answer, _ = translate_html(url, q[0], format="xml")
    expect("format xml", (status, "format xml is not supported" in answer.get("error", "")),
           (400, True))


def run_html(model, pages, reference, out):
    server = started(model, "--max-q-chars", "200000", "--max-body", "8388608")
    try:
        check_pages_one_by_one(server.url, pages, reference, out)
        check_pages_together(server.url, pages, reference)
        expect("exit status", server.stop(), 0)
    finally:
        stop(server)
    print("html: %d pages through /translate as tfm-html-translate translates them; "
          "an array, a form, alternatives (empty), source auto" % len(pages_of(pages)))


# --- files ---------------------------------------------------------------------


def translated_lines(url, lines):
    """/translate's answers for the nonblank lines, blank ones kept blank."""
    texts = [line for line in lines if line.strip()]
    status, answer, _ = post(url + "/translate", {"q": texts, "source": "en", "target": "de"})
    expect("/translate of the file's lines", status, 200)
    answers = iter(answer["translatedText"])
    return [next(answers) if line.strip() else "" for line in lines]


def check_text_file(url, src):
    lines = serve_driver.read_lines(src)[:12]
    lines[4] = ""
    lines[7] = "   "
    expected = translated_lines(url, lines)
    data = "\n".join(lines) + "\n"
    file_url, content, headers = uploaded(url, "notes.txt", data.encode())
    answered = time.monotonic()  # after the file was stored
    again = download(file_url)
    expect("a second download", (again[0], again[1].decode()), (200, content))
    expect(".txt: its lines as /translate translates them", content,
           "\n".join(expected) + "\n")
    expect(".txt: Content-Type", headers.get("Content-Type"), "text/plain; charset=utf-8")
    expect(".txt: Content-Disposition", headers.get("Content-Disposition"),
           "attachment; filename=\"notes_de.txt\"; filename*=UTF-8''notes_de.txt")
    crlf = "\r\n".join(lines[:3])
    _, content, _ = uploaded(url, "Windows Notes.TXT", crlf.encode())
    expect(".txt with CRLF and no final newline", content, "\r\n".join(expected[:3]))
    _, content, headers = uploaded(url, "Übersicht.txt", b"", source="auto")
    expect("an empty file", content, "")
    expect("a name in UTF-8", headers.get("Content-Disposition"),
           "attachment; filename=\"__bersicht_de.txt\"; "
           "filename*=UTF-8''%C3%9Cbersicht_de.txt")
    return file_url, answered


def check_html_file(url, pages, reference):
    for name in pages_of(pages)[:4]:
        page = read(os.path.join(pages, name))
        _, content, headers = uploaded(url, name, page.encode())
        status, answer, _ = translate_html(url, page)
        expect("%s: as /translate format html" % name, content, answer["translatedText"])
        expect("%s: as tfm-html-translate" % name, content, read(os.path.join(reference, name)))
        expect("%s: Content-Type" % name, headers.get("Content-Type"), "text/html; charset=utf-8")
        expect("%s: never rendered here" % name,
               "sandbox" in headers.get("Content-Security-Policy", ""), True)
    page = read(os.path.join(pages, pages_of(pages)[0]))
    _, content, _ = uploaded(url, "page.htm", page.encode(), source="auto")
    expect(".htm with source auto", content, read(os.path.join(reference, pages_of(pages)[0])))


def check_expiry(url, file_url, stored, expiry):
    time.sleep(max(0.0, stored + expiry + 0.5 - time.monotonic()))
    status, body, _ = download(file_url)
    expect("after --file-expiry", (status, "no translated file" in body.decode()), (404, True))


def check_settings(url):
    status, text = get(url + "/frontend/settings")
    settings = json.loads(text)
    expect("/frontend/settings files",
           (status, settings["filesTranslation"], settings["supportedFilesFormat"]),
           (200, True, [".txt", ".html", ".htm"]))


def check_max_files(model, src):
    """Two files kept at most: a third upload is a 503 until they expire
    (5 s: room for a loaded host between the uploads)."""
    server = started(model, "--max-files", "2", "--file-expiry", "5")
    try:
        for i in range(2):
            expect("file %d of 2" % i, upload(server.url, "a.txt", b"Open the file.")[0], 200)
        stored = time.monotonic()
        status, answer, headers = upload(server.url, "a.txt", b"Open the file.")
        expect("a third file", (status, "--max-files" in answer.get("error", ""),
                                headers.get("Retry-After")), (503, True, "1"))
        time.sleep(max(0.0, stored + 5.5 - time.monotonic()))
        expect("after the others expired", upload(server.url, "a.txt", b"Open the file.")[0],
               200)
        expect("exit status", server.stop(), 0)
    finally:
        stop(server)


def run_files(model, src, pages, reference):
    server = started(model, "--file-expiry", "4", "--max-file-bytes", "262144")
    try:
        file_url, stored = check_text_file(server.url, src)
        check_html_file(server.url, pages, reference)
        check_settings(server.url)
        check_expiry(server.url, file_url, stored, 4)
        expect("exit status", server.stop(), 0)
    finally:
        stop(server)
    check_max_files(model, src)
    print("files: .txt (blank lines, CRLF, empty, a UTF-8 name) and .html/.htm "
          "uploads as /translate translates them; downloads until the expiry, then "
          "404; --max-files: 503")


# --- hostile -------------------------------------------------------------------


def raw_post(url, path, content_type, body):
    return post(url + path, body, content_type)


def hostile_cases():
    """(what, content type, body, status, text the error must hold)."""
    mp = "multipart/form-data; boundary=" + BOUNDARY
    ok_file = ("file", "a.txt", b"Open the file.")
    languages = [("source", "en"), ("target", "de")]
    return [
        ("no file", mp, multipart(languages), 400, "missing file parameter"),
        ("two files", mp, multipart(languages + [ok_file, ok_file]), 400,
         "file given 2 times"),
        ("file a text field", mp, multipart(languages + [("file", "hello")]), 400,
         "file must be a file upload"),
        ("no source", mp, multipart([("target", "de"), ok_file]), 400,
         "missing source parameter"),
        ("no target", mp, multipart([("source", "en"), ok_file]), 400,
         "missing target parameter"),
        ("an unknown target", mp, multipart([("source", "en"), ("target", "xx"), ok_file]),
         400, "xx"),
        ("an unknown extension", mp,
         multipart(languages + [("file", "program.exe", b"MZ\x90\x00")]), 400,
         "file format not supported: '.exe'"),
        ("no extension", mp, multipart(languages + [("file", "README", b"a")]), 400,
         "file format not supported"),
        ("a path", mp, multipart(languages + [("file", "../../etc/passwd.txt", b"a")]),
         400, "holds a path"),
        ("a Windows path", mp,
         multipart(languages + [("file", "..\\..\\boot.ini.txt", b"a")]), 400, "holds a path"),
        ("a hidden name", mp, multipart(languages + [("file", ".profile.txt", b"a")]), 400,
         "starts with a dot"),
        ("a name with a control character", mp,
         multipart(languages + [("file", "a\tb.txt", b"a")]), 400, "control character"),
        ("not UTF-8", mp, multipart(languages + [("file", "a.txt", b"\xff\xfe\x00a")]), 400,
         "file is not valid UTF-8"),
        ("an oversize file", mp, multipart(languages + [("file", "a.txt", b"a " * 40000)]),
         413, "--max-file-bytes"),
        ("a body past the limit", mp,
         multipart(languages + [("file", "a.txt", b"a" * (1 << 20))]), 413,
         "Payload too large"),
        ("a wrong boundary", "multipart/form-data; boundary=other",
         multipart(languages + [ok_file]), 400, "multipart/form-data body could not be read"),
        ("no boundary", "multipart/form-data", multipart(languages + [ok_file]), 400,
         "multipart/form-data body could not be read"),
        ("an unterminated body", mp, multipart(languages + [ok_file])[:-30], 400,
         "multipart/form-data body could not be read"),
        ("JSON", "application/json", b'{"file": "a"}', 415, "multipart/form-data"),
        ("a form", "application/x-www-form-urlencoded", b"file=a&source=en&target=de", 415,
         "multipart/form-data"),
    ]


def raw_get(url, path):
    """The status and body of a GET sent as it is (urllib would normalize
    the path)."""
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    match = re.match(rb"HTTP/1\.[01] (\d+)", answer)
    return (int(match.group(1)) if match else None), answer.split(b"\r\n\r\n", 1)[-1]


DOWNLOADS = [
    (b"/download_file/..", 400, b"Invalid filename"),
    (b"/download_file/../../etc/passwd", 400, b"Invalid filename"),
    (b"/download_file/%2e%2e%2fetc", 400, b"Invalid filename"),
    (b"/download_file/abc.txt", 400, b"Invalid filename"),
    (b"/download_file/" + b"A" * 65, 400, b"Invalid filename"),
    (b"/download_file/", 400, b"Invalid filename"),
    (b"/download_file/AbCdEfGhIjKlMnOpQrStUvWxYz012345", 404, b"no translated file"),
]


def run_hostile(model):
    server = started(model, "--max-file-bytes", "65536")
    try:
        cases = hostile_cases()
        for what, content_type, body, expected, message in cases:
            try:
                status, answer, _ = raw_post(server.url, "/translate_file", content_type, body)
            except (OSError, urllib.error.URLError) as error:
                status, answer = "error", str(error)
            error = answer.get("error", "") if isinstance(answer, dict) else str(answer)
            if status != expected or message not in error:
                fail("%s: expected %d naming %r, found %r %r"
                     % (what, expected, message, status, error[:300]))
        for path, expected, message in DOWNLOADS:
            status, body = raw_get(server.url, path)
            if status != expected or message not in body:
                fail("GET %s: expected %d with %r, found %r %r"
                     % (path[:60], expected, message, status, body[:200]))
        if not server.alive():
            fail("the server died")
        status, answer, _ = upload(server.url, "a.txt", b"Open the file.")
        expect("served afterwards", status, 200)
        expect("exit status", server.stop(), 0)
    finally:
        stop(server)
    print("hostile: %d bad uploads and %d bad downloads, each its 4xx naming the "
          "problem; the server stayed up" % (len(cases), len(DOWNLOADS)))


def main():
    command = sys.argv[1]
    commands = {"html": run_html, "files": run_files, "hostile": run_hostile}
    try:
        commands[command](*sys.argv[2:])
    except Failure as failure:
        print("FAIL: %s" % failure)
        sys.exit(1)


if __name__ == "__main__":
    main()
