"""Drives tfm-serve for the lit tests in test/Serve: starts it on a free
loopback port, talks to it with urllib (and raw sockets where a client
must misbehave), stops it with SIGTERM. Every loop is bounded in requests
and every wait in time.

  serve_driver.py api MODEL SRC CLI NBEST       answers equal the translator's
  serve_driver.py keys MODEL SRC CLI KEYS       API keys and the request rate
  serve_driver.py load MODEL SRC CLI            64 clients x 20 requests
  serve_driver.py overload MODEL SRC CLI        a small queue: only 200 and 503
  serve_driver.py sigterm MODEL SRC CLI         SIGTERM under load, then restart
  serve_driver.py hostile MODEL SRC CLI         malformed and hostile requests
  serve_driver.py port MODEL SRC CLI            a port in use, --reuse-port, restart
  serve_driver.py empty-options MODEL           empty values of naming options
  serve_driver.py fields MODEL SRC CLI          numbers checked, duplicate keys
  serve_driver.py models A B R SRC CLI          two models of one pair, "model"
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

SERVE = "tfm-serve"
TIMEOUT = 60  # seconds any one request may take


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


class Server:
    """tfm-serve on a free port (or `port`); stop() sends SIGTERM and returns
    its exit code. model None: the models are among the options."""

    def __init__(self, model, *options, port=0, quiet=True):
        command = [SERVE, "--port", str(port)] + (["--quiet"] if quiet else [])
        command += list(options) + ([model] if model else [])
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self._first_line(30)
        match = re.search(r"listening on http://([\d.]+):(\d+)", line)
        if not match:
            self.proc.kill()
            fail("tfm-serve did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(match.group(2))
        self.url = "http://127.0.0.1:%d" % self.port

    def _first_line(self, seconds):
        result = []
        reader = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()))
        reader.daemon = True
        reader.start()
        reader.join(seconds)
        return result[0] if result else ""

    def stop(self, seconds=60):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("tfm-serve did not exit within %d s of SIGTERM" % seconds)

    def alive(self):
        return self.proc.poll() is None


def post(url, body, content_type="application/json", timeout=TIMEOUT):
    """(status, parsed JSON answer or raw text, headers)."""
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body
    request = urllib.request.Request(url, data=data, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, _decode(answer.read()), answer.headers
    except urllib.error.HTTPError as error:
        return error.code, _decode(error.read()), error.headers


def get(url, timeout=TIMEOUT):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _decode(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def read_nbest(path):
    """translator -n N lines 'INDEX ||| TEXT ||| SCORE' grouped per sentence."""
    groups = {}
    for line in read_lines(path):
        index, text, score = line.split(" ||| ")
        groups.setdefault(int(index), []).append((text, float(score)))
    return [groups[i] for i in sorted(groups)]


def translate(url, q, **fields):
    return post(url + "/translate", dict(q=q, source="en", target="de", **fields))


def expect(what, actual, expected):
    if actual != expected:
        fail("%s: expected %r, found %r" % (what, expected, actual))


def unique_alternatives(best, others):
    out = []
    for text in others:
        if text != best and text not in out:
            out.append(text)
    return out


# --- api ------------------------------------------------------------------


def check_single_and_array(url, src, cli):
    for i in range(0, len(src), 7):
        status, answer, _ = translate(url, src[i])
        if src[i].strip():
            expect("line %d" % i, (status, answer), (200, {"translatedText": cli[i]}))
    status, answer, _ = translate(url, src)
    expect("array q", (status, answer), (200, {"translatedText": cli}))
    status, answer, _ = post(url + "/translate", urllib.parse.urlencode(
        {"q": src[1], "source": "en", "target": "de"}).encode(),
        "application/x-www-form-urlencoded")
    expect("form-encoded q", (status, answer), (200, {"translatedText": cli[1]}))


def check_multiline(url, src, cli):
    text = "\n".join(src[:12])
    status, answer, _ = translate(url, text)
    expect("multi-line q", (status, answer), (200, {"translatedText": "\n".join(cli[:12])}))
    status, answer, _ = translate(url, [text, src[20]])
    expect("multi-line q in an array", answer["translatedText"], ["\n".join(cli[:12]), cli[20]])


def check_alternatives(url, src, nbest):
    for i in range(0, 12):
        if not src[i].strip():
            continue
        status, answer, _ = translate(url, src[i], alternatives=2)
        texts = [text for text, _ in nbest[i]]
        expected = {"translatedText": texts[0],
                    "alternatives": unique_alternatives(texts[0], texts[1:])}
        expect("alternatives of line %d" % i, (status, answer), (200, expected))


def check_native(url, src, nbest):
    body = {"source": src[:12], "source_lang": "en", "target_lang": "de",
            "beam_size": 3, "n_best": 3, "return_scores": True}
    status, answer, _ = post(url + "/v1/translate", body)
    expect("/v1/translate status", status, 200)
    for i, result in enumerate(answer["results"]):
        if not src[i].strip():
            expect("blank sentence %d" % i, result["hypotheses"], [""])
            continue
        expect("hypotheses of %d" % i, result["hypotheses"], [t for t, _ in nbest[i]])
        for score, (_, expected) in zip(result["scores"], nbest[i]):
            if abs(score - expected) > 1e-3:
                fail("score of %d: %f, the translator's %f" % (i, score, expected))


def check_languages(url):
    status, text = get(url + "/languages")
    expect("/languages", (status, json.loads(text)),
           (200, [{"code": "de", "name": "German", "targets": []},
                  {"code": "en", "name": "English", "targets": ["de"]}]))
    status, answer, _ = post(url + "/translate",
                             {"q": "Open the file.", "source": "auto", "target": "de"})
    _, detected, _ = post(url + "/detect", {"q": "Open the file."})
    expect("source auto: the language detected", detected[0]["language"], "en")
    expect("source auto: detectedLanguage is /detect's first", answer.get("detectedLanguage"),
           detected[0])


def run_api(model, src_path, cli_path, nbest_path):
    src, cli, nbest = read_lines(src_path), read_lines(cli_path), read_nbest(nbest_path)
    server = Server(model)
    check_single_and_array(server.url, src, cli)
    check_multiline(server.url, src, cli)
    check_alternatives(server.url, src, nbest)
    check_native(server.url, src, nbest)
    check_languages(server.url)
    check_frontend_settings(server.url, False)
    expect("exit status after SIGTERM", server.stop(), 0)
    print("api: single, array, form, multi-line, alternatives, /v1/translate "
          "and /languages as the translator's")


# --- options --------------------------------------------------------------


def native_one_by_one(url, src, **options):
    """Each nonblank sentence alone through /v1/translate (a batch of its
    own, as translator --batch-size 1 translates it), its 1-best."""
    out = []
    for i, sentence in enumerate(src):
        if not sentence.strip():
            out.append("")
            continue
        body = {"source": [sentence], "source_lang": "en", "target_lang": "de"}
        body.update(options)
        status, answer, _ = post(url + "/v1/translate", body)
        expect("/v1/translate %s of sentence %d" % (options, i), status, 200)
        out.append(answer["results"][0]["hypotheses"][0])
    return out


def check_sampling(url, src, sampled):
    """All sentences in one request, sampled over the whole vocabulary:
    sentence i's stream is seeded from the seed and i, as the translator
    seeds line i's, whatever the batches."""
    body = {"source": src, "source_lang": "en", "target_lang": "de", "use_vmap": False,
            "sampling_topk": 10, "sampling_temperature": 0.8, "seed": 7}
    status, answer, _ = post(url + "/v1/translate", body)
    expect("sampling status", status, 200)
    expect("samples", [r["hypotheses"][0] for r in answer["results"]], sampled)
    body["beam_size"] = 3
    status, answer, _ = post(url + "/v1/translate", body)
    expect("sampling with a beam",
           (status, "sampling needs beam size 1" in answer.get("error", "")),
           (400, True))


def check_token_scores(url, src, scored_path):
    """return_scores and return_token_scores, a sentence a request, give
    translator --token-scores's SCORE<TAB>TRANSLATION<TAB>TOKEN SCORES
    (within 1e-3)."""
    for i, line in enumerate(read_lines(scored_path)):
        score, translation, tokens = line.split("\t")
        body = {"source": [src[i]], "source_lang": "en", "target_lang": "de",
                "return_scores": True, "return_token_scores": True}
        status, answer, _ = post(url + "/v1/translate", body)
        result = answer["results"][0]
        expect("token scores of %d" % i, (status, result["hypotheses"][0]), (200, translation))
        got = [result["scores"][0]] + result["token_scores"][0]
        want = [float(score)] + [float(x) for x in tokens.split()]
        if len(got) != len(want) or max(abs(a - b) for a, b in zip(got, want)) > 1e-3:
            fail("scores of %d: %s, the translator's %s" % (i, got, want))


def run_options(model, src_path, short_path, full_path, guarded_path, sampled_path,
                scored_path):
    """The native endpoint's shortlist, repetition, sampling and score
    options give the translator's; bad values are 400s naming the field."""
    src = read_lines(src_path)
    server = Server(model)
    url = server.url
    check_sampling(url, src, read_lines(sampled_path))
    check_token_scores(url, src, scored_path)
    expect("the model's shortlist", native_one_by_one(url, src), read_lines(short_path))
    expect("use_vmap false", native_one_by_one(url, src, use_vmap=False),
           read_lines(full_path))
    expect("repetition guards",
           native_one_by_one(url, src, repetition_penalty=1.4, no_repeat_ngram_size=2),
           read_lines(guarded_path))
    for field, value, message in (
            ("repetition_penalty", 0, "Invalid request: repetition_penalty 0 is no penalty: "
             "leave it out for the model's, 1 turns it off"),
            ("repetition_penalty", -1,
             "Invalid request: the repetition penalty must be a finite number > 0"),
            ("beam_size", 0, "Invalid request: need beam size >= 1 and 1 <= n-best <= beam size"),
            ("n_best", 0, "Invalid request: need beam size >= 1 and 1 <= n-best <= beam size"),
            ("no_repeat_ngram_size", -1, "no_repeat_ngram_size must be in [0"),
            ("use_vmap", "yes", "use_vmap must be a boolean"),
            ("sampling_topp", 1.5, "Invalid request: the sampling top-p must be in (0, 1]"),
            ("sampling_temperature", 0, "Invalid request: the sampling temperature must be"),
            ("n_best", 9, "Invalid request: need beam size >= 1 and 1 <= n-best <= beam size"),
            ("seed", -3, "seed must be in [0")):
        body = {"source": [src[0]], "source_lang": "en", "target_lang": "de", field: value}
        status, answer, _ = post(url + "/v1/translate", body)
        expect("%s %r" % (field, value), (status, message in answer.get("error", "")),
               (400, True))
    expect("exit status", server.stop(), 0)
    print("options: the shortlist, use_vmap, the repetition guards, sampling and "
          "token scores as the translator's; bad values 400")


# --- keys -----------------------------------------------------------------


def check_frontend_settings(url, keys):
    """LibreTranslate's /frontend/settings: its fields, their types, no key
    needed to read it."""
    status, text = get(url + "/frontend/settings")
    expect("/frontend/settings", (status, json.loads(text)), (200, {
        "charLimit": 5000, "frontendTimeout": 500, "apiKeys": keys, "keyRequired": keys,
        "suggestions": False, "filesTranslation": True,
        "supportedFilesFormat": [".txt", ".html", ".htm"],
        "language": {"source": {"code": "en", "name": "English"},
                     "target": {"code": "de", "name": "German"}}}))


def run_keys(model, src_path, cli_path, keys_path):
    src, cli = read_lines(src_path), read_lines(cli_path)
    server = Server(model, "--api-keys", keys_path, "--key-rate", "3")
    check_frontend_settings(server.url, True)
    status, answer, _ = translate(server.url, src[1])
    expect("no key", (status, answer.get("error", "")[:15]), (403, "Invalid request"))
    status, answer, _ = translate(server.url, src[1], api_key="wrong")
    expect("a wrong key", (status, answer), (403, {"error": "Invalid API key"}))
    statuses = [translate(server.url, src[1], api_key="key-two")[0] for _ in range(5)]
    expect("3 a minute with key-two", statuses, [200, 200, 200, 429, 429])
    status, answer, headers = translate(server.url, src[1], api_key="key-one")
    expect("key-one has a rate of its own", (status, answer), (200, {"translatedText": cli[1]}))
    expect("exit status", server.stop(), 0)
    print("keys: 403 without a valid key, 429 past the rate, per key; "
          "/frontend/settings: keyRequired")


# --- load -----------------------------------------------------------------


def run_clients(url, src, cli, clients, requests, outcomes, sentence_of):
    def client(c):
        for r in range(requests):
            i = sentence_of(c, r)
            try:
                status, answer, _ = translate(url, src[i])
            except (OSError, urllib.error.URLError) as error:
                outcomes.append((c, r, "error", str(error)))
                continue
            ok = status == 200 and answer == {"translatedText": cli[i]}
            outcomes.append((c, r, status, "ok" if ok else repr(answer)))

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
    for thread in threads:
        thread.start()
    return threads


def join_all(threads, seconds):
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(thread.is_alive() for thread in threads):
        fail("clients still waiting after %d s" % seconds)


def metric(text, name, labels=""):
    match = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(match.group(1)) if match else None


def nonblank(src):
    return [i for i, line in enumerate(src) if line.strip()]


def run_load(model, src_path, cli_path):
    src, cli = read_lines(src_path), read_lines(cli_path)
    lines = nonblank(src)
    server = Server(model)
    outcomes = []
    start = time.monotonic()
    threads = run_clients(server.url, src, cli, 64, 20, outcomes,
                          lambda c, r: lines[(c * 20 + r) % len(lines)])
    join_all(threads, 300)
    seconds = time.monotonic() - start
    seen = sorted((c, r) for c, r, _, _ in outcomes)
    expect("one answer per request", seen, [(c, r) for c in range(64) for r in range(20)])
    bad = [o for o in outcomes if o[2] != 200 or o[3] != "ok"]
    if bad:
        fail("%d answers wrong, first: %r" % (len(bad), bad[0]))
    _, text = get(server.url + "/metrics")
    name = 'tfm_serve_batch_sentences'
    label = '{model="%s"' % os.path.basename(model.rstrip("/"))
    batches = metric(text, name + "_count", label + "}")
    ones = metric(text, name + "_bucket", label + ',le="1"}')
    sentences = metric(text, "tfm_serve_sentences_total", label + "}")
    expect("sentences counted", sentences, 1280.0)
    expect("requests counted", metric(text, "tfm_serve_requests_total",
                                      '{path="/translate",code="200"}'), 1280.0)
    if not batches or batches - ones < 1:
        fail("no batch larger than 1 in /metrics: %s batches, %s of 1" % (batches, ones))
    expect("exit status", server.stop(), 0)
    print("load: 1280 answers, each once and as the translator's; batches larger than 1: yes")
    print("load: %.0f requests/s, %.1f sentences per batch on average"
          % (1280 / seconds, sentences / batches), file=sys.stderr)


# --- overload ---------------------------------------------------------------


def run_overload(model, src_path, cli_path):
    src, cli = read_lines(src_path), read_lines(cli_path)
    lines = nonblank(src)
    server = Server(model, "--max-queue", "2", "--max-batch-sentences", "2")
    statuses = {}
    lock = threading.Lock()

    def client(c):
        for r in range(10):
            status, answer, headers = translate(server.url, [src[i] for i in lines[:2]])
            if status == 503 and headers.get("Retry-After") is None:
                status = "503 without Retry-After"
            elif status == 200 and answer["translatedText"] != [cli[i] for i in lines[:2]]:
                status = "200 with a wrong answer"
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(64)]
    for thread in threads:
        thread.start()
    join_all(threads, 300)
    if set(statuses) != {200, 503}:
        fail("expected 200s and 503s only, found %r" % statuses)
    status, answer, _ = translate(server.url, src[lines[0]])
    expect("after the overload", (status, answer), (200, {"translatedText": cli[lines[0]]}))
    expect("exit status", server.stop(), 0)
    print("overload: only 200 and 503 (with Retry-After), then served normally")
    print("overload: %r" % statuses, file=sys.stderr)


# --- sigterm ----------------------------------------------------------------


def run_sigterm(model, src_path, cli_path):
    src, cli = read_lines(src_path), read_lines(cli_path)
    lines = nonblank(src)
    server = Server(model)
    outcomes = []
    threads = run_clients(server.url, src, cli, 32, 30, outcomes,
                          lambda c, r: lines[(c + r) % len(lines)])
    deadline = time.monotonic() + 30
    while len(outcomes) < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    code = server.stop()
    join_all(threads, 120)
    expect("exit status after SIGTERM under load", code, 0)
    answered = [o for o in outcomes if o[2] != "error"]
    wrong = [o for o in answered if o[2] != 200 or o[3] != "ok"]
    if wrong:
        fail("%d accepted requests not answered right, first: %r" % (len(wrong), wrong[0]))
    if len(answered) < 100:
        fail("only %d answers before the signal" % len(answered))
    again = Server(model)
    status, answer, _ = translate(again.url, src[lines[0]])
    expect("restarted", (status, answer), (200, {"translatedText": cli[lines[0]]}))
    expect("exit status of the restarted server", again.stop(), 0)
    print("sigterm: every accepted request answered right, exit 0, restarted and served")
    print("sigterm: %d answered, %d refused at the door"
          % (len(answered), len(outcomes) - len(answered)), file=sys.stderr)


# --- hostile ----------------------------------------------------------------


def raw_exchange(url, data, seconds=10):
    """Sends bytes on a socket; returns the status of the answer (None: closed)."""
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=seconds) as sock:
        sock.sendall(data)
        answer = b""
        try:
            while b"\r\n" not in answer:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except socket.timeout:
            return "timeout"
    match = re.match(rb"HTTP/1\.[01] (\d+)", answer)
    return int(match.group(1)) if match else None


def slow_client(url, seconds):
    """A request line sent, then silence: the server must drop it in time."""
    host, port = url.split("//")[1].split(":")
    start = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=seconds + 10) as sock:
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\n")
        try:
            sock.recv(4096)
        except socket.timeout:
            return None
    return time.monotonic() - start


def hostile_cases(src):
    ok = {"q": src[1], "source": "en", "target": "de"}
    deep = "[" * 10000 + "]" * 10000
    form = "application/x-www-form-urlencoded"
    return [
        ("bad JSON", b'{"q": "a", ', "application/json", 400),
        ("JSON not an object", b"[1, 2]", "application/json", 400),
        ("q a number", dict(ok, q=5), "application/json", 400),
        ("q an array with a number", dict(ok, q=["a", 3]), "application/json", 400),
        ("q missing", {"source": "en", "target": "de"}, "application/json", 400),
        ("q empty", dict(ok, q=""), "application/json", 400),
        ("q an empty array", dict(ok, q=[]), "application/json", 400),
        ("target missing", {"q": "a", "source": "en"}, "application/json", 400),
        ("an unknown target", dict(ok, target="xx"), "application/json", 400),
        ("an unknown pair", dict(ok, source="de", target="en"), "application/json", 400),
        ("format xml", dict(ok, format="xml"), "application/json", 400),
        ("alternatives too many", dict(ok, alternatives=100), "application/json", 400),
        ("alternatives not a number", dict(ok, alternatives="x"), "application/json", 400),
        ("a huge body", b'{"q": "' + b"a" * (2 << 20) + b'"}', "application/json", 413),
        ("a huge q array", dict(ok, q=["a"] * 1000), "application/json", 400),
        ("a huge q item", dict(ok, q="a " * 6000), "application/json", 400),
        ("deep nesting", ('{"q": %s}' % deep).encode(), "application/json", 400),
        ("wrong content type", json.dumps(ok).encode(), "text/plain", 415),
        ("invalid UTF-8 in JSON", b'{"q": "\xff\xfe", "source": "en", "target": "de"}',
         "application/json", 400),
        ("invalid UTF-8 in a form", b"q=%FF%FE&source=en&target=de", form, 400),
        ("a lone surrogate", b'{"q": "\\udc80", "source": "en", "target": "de"}',
         "application/json", 400),
        ("/v1: an unknown field", {"source": ["a"], "target_lang": "de", "beamsize": 2},
         "application/json", 400),
        ("/v1: n_best over beam_size", {"source": ["a"], "target_lang": "de", "n_best": 3},
         "application/json", 400),
        ("/v1: EOS in a prefix", {"source": ["a"], "target_lang": "de",
                                  "target_prefix": [["</s>"]]}, "application/json", 400),
    ]


def check_hostile_posts(url, src):
    cases = hostile_cases(src)
    for what, body, content_type, expected in cases:
        path = "/v1/translate" if what.startswith("/v1") else "/translate"
        try:
            status, answer, _ = post(url + path, body, content_type)
        except (OSError, urllib.error.URLError) as error:
            status, answer = "error", str(error)
        if status != expected or not (isinstance(answer, dict) and answer.get("error")):
            fail("%s: expected %d with an error, found %r %r" % (what, expected, status,
                                                                str(answer)[:200]))
    return len(cases)


def check_hostile_raw(url):
    many = b"".join(b"X-Flood-%d: y\r\n" % i for i in range(200))
    cases = [
        ("many headers", b"GET /health HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n", 431),
        ("garbage request line", b"HELLO THERE\r\n\r\n", 400),
        ("a Content-Length past the limit",
         b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", 413),
        ("an unknown path", b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", 404),
        ("GET /translate", b"GET /translate HTTP/1.1\r\nHost: x\r\n\r\n", 405),
        ("DELETE /languages", b"DELETE /languages HTTP/1.1\r\nHost: x\r\n\r\n", 405),
        ("POST /detect", b"POST /detect HTTP/1.1\r\nHost: x\r\nContent-Type: "
         b"application/json\r\nContent-Length: 10\r\n\r\n{\"q\": \"a\"}", 200),
    ]
    for what, data, expected in cases:
        expect(what, raw_exchange(url, data), expected)
    return len(cases)


def check_deadline(model, src):
    """A request past --timeout: 504, its queued sentences dropped."""
    server = Server(model, "--timeout", "0.001", "--max-batch-sentences", "1")
    status, answer, _ = translate(server.url, [src[1]] * 20)
    expect("past the deadline", (status, str(answer.get("error"))[:40]),
           (504, "the translation took longer than the dea"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        queued = metric(get(server.url + "/metrics")[1], "tfm_serve_queue_sentences",
                        '{model="%s"}' % os.path.basename(model.rstrip("/")))
        if queued == 0:
            break
        time.sleep(0.05)
    expect("sentences left in the queue", queued, 0)
    expect("exit status", server.stop(), 0)


def run_hostile(model, src_path, cli_path):
    src, cli = read_lines(src_path), read_lines(cli_path)
    server = Server(model, "--io-timeout", "2", "--max-body", "1048576")
    stalled = []
    staller = threading.Thread(target=lambda: stalled.append(slow_client(server.url, 2)))
    staller.start()
    count = check_hostile_posts(server.url, src) + check_hostile_raw(server.url)
    staller.join(30)
    if not stalled or stalled[0] is None or stalled[0] > 10:
        fail("a slow client was not dropped in time: %r" % stalled)
    if not server.alive():
        fail("the server died")
    expect("health afterwards", get(server.url + "/health"), (200, '{"status":"ok"}'))
    status, answer, _ = translate(server.url, src[1])
    expect("served afterwards", (status, answer), (200, {"translatedText": cli[1]}))
    expect("exit status", server.stop(), 0)
    check_deadline(model, src)
    print("hostile: %d bad requests, each its 4xx with an error; a slow client "
          "dropped; the server stayed up; past --timeout: 504" % (count + 1))


# --- start-up failures --------------------------------------------------------


def refused_start(arguments, seconds=60):
    """Runs tfm-serve expecting it to refuse to start: returns (exit code,
    stderr). A server that starts listening instead fails the test at once."""
    proc = subprocess.Popen([SERVE, *arguments], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()),
                              daemon=True)
    reader.start()
    reader.join(seconds)
    if first and "listening" in first[0]:
        proc.kill()
        proc.wait(10)
        fail("tfm-serve %r started (%s) instead of refusing" % (arguments, first[0].strip()))
    try:
        code = proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("tfm-serve %r neither started nor exited within %d s" % (arguments, seconds))
    return code, proc.stderr.read()


# --- port -----------------------------------------------------------------


def keep_alive_connection(url):
    """A connection that has had its answer and stays open, so that the
    server closes it first and its side of it lingers in TIME_WAIT."""
    host, port = url.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = b""
    while not answer.endswith(b'{"status":"ok"}'):
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
    expect("a keep-alive answer", answer.split(b"\r\n")[0], b"HTTP/1.1 200 OK")
    return sock


def check_port_in_use(model, port, *options):
    code, err = refused_start(["--quiet", "--port", str(port), *options, model])
    expect("exit status on a port in use %r" % (options,), code, 1)
    if "port %d on 127.0.0.1 is in use" % port not in err:
        fail("the error does not name port %d: %r" % (port, err))


def check_shared_port(model, port, src, cli):
    """Two servers that both ask for --reuse-port share it."""
    first = Server(model, "--reuse-port", port=port)
    second = Server(model, "--reuse-port", port=port)
    expect("the shared port", (first.port, second.port), (port, port))
    for _ in range(4):
        status, answer, _ = translate(first.url, src[1])
        expect("served on the shared port", (status, answer), (200, {"translatedText": cli[1]}))
    expect("exit status of the first sharer", first.stop(), 0)
    expect("exit status of the second sharer", second.stop(), 0)


def run_port(model, src_path, cli_path):
    src, cli = read_lines(src_path), read_lines(cli_path)
    server = Server(model)
    port = server.port
    check_port_in_use(model, port)
    check_port_in_use(model, port, "--reuse-port")  # the holder did not ask
    status, answer, _ = translate(server.url, src[1])
    expect("the first server still serves", (status, answer), (200, {"translatedText": cli[1]}))
    lingering = keep_alive_connection(server.url)
    expect("exit status", server.stop(), 0)
    lingering.close()
    # SO_REUSEADDR: the port binds again at once, TIME_WAIT or not.
    again = Server(model, port=port)
    check_port_in_use(model, port, "--reuse-port")
    expect("exit status of the restarted server", again.stop(), 0)
    check_shared_port(model, port, src, cli)
    print("port: a port in use is an error naming it, exit 1; --reuse-port only "
          "shares with servers that ask too; a restart binds at once")


# --- empty options ------------------------------------------------------------


EMPTY_OPTIONS = [
    # (arguments before the model directory, text the error must hold)
    (["--api-keys", ""], "--api-keys: the value is empty"),
    (["--api-keys", "  "], "--api-keys: the value is empty"),
    (["--api-keys="], "--api-keys: the value is empty"),
    (["--host", ""], "--host: the value is empty"),
    (["--model", ""], "--model: the value is empty"),
    (["--model", "=%(model)s"], "--model expects NAME=DIR"),
    (["--model", "name="], "--model expects NAME=DIR"),
    (["--model", "name= "], "--model expects NAME=DIR"),
    (["", "--model", "m=%(model)s"], "MODEL_DIR: the value is empty"),
    (["--port", ""], "--port"),
    (["--threads", ""], "--threads"),
    (["--max-q-chars", ""], "--max-q-chars"),
]


def run_empty_options(model, keys_path):
    for arguments, message in EMPTY_OPTIONS:
        arguments = [a % {"model": model} for a in arguments]
        port = [] if "--port" in arguments else ["--port", "0"]
        code, err = refused_start([*port, "--quiet", *arguments, model])
        expect("exit status of %r" % arguments, code, 1)
        if not err.startswith("tfm-serve: error: ") or message not in err:
            fail("%r: the error does not say %r: %r" % (arguments, message, err))
    # The same options with values start, and the keys are required.
    server = Server(model, "--api-keys", keys_path, "--host", "127.0.0.1")
    status, answer, _ = translate(server.url, "Open the file.")
    expect("no key", status, 403)
    expect("exit status", server.stop(), 0)
    print("empty-options: %d empty or blank values refused naming the option, exit 1"
          % len(EMPTY_OPTIONS))


# --- fields -----------------------------------------------------------------


def expect_refused(url, path, body, field, message, content_type="application/json"):
    status, answer, _ = post(url + path, body, content_type)
    error = answer.get("error", "") if isinstance(answer, dict) else str(answer)
    if status != 400 or field not in error or message not in error:
        fail("%s %s: expected 400 naming %r (%r), found %r %r"
             % (path, str(body)[:120], field, message, status, error))


def translate_cases(src):
    """(body, field, message) of /translate bodies to refuse."""
    base = {"q": src[1], "source": "en", "target": "de"}
    cases = [(dict(base, alternatives=value), "alternatives", message)
             for value, message in [(-1, "in [0, 8]"), (9, "in [0, 8]"), (1e30, "in [0, 8]"),
                                    ("2", "found string"), ("-1", "found string"),
                                    (True, "found boolean"), ([2], "found array"),
                                    ({"n": 2}, "found object"), (2.5, "not an integer")]]
    raw = json.dumps(base)[:-1]
    for key, value in [("alternatives", "1"), ("q", '"x"'), ("api_key", '"k"'),
                       ("target", '"de"'), ("format", '"text"')]:
        twice = '%s, "%s": %s, "%s": %s}' % (raw, key, value, key, value)
        cases.append((twice.encode(), key, "appears twice"))
    nested = '{"q": [{"a": 1, "a": 2}], "source": "en", "target": "de"}'
    cases.append((nested.encode(), "'a'", "appears twice"))
    return cases


NATIVE_INTEGERS = {"beam_size": (0, 10), "n_best": (0, 10), "max_length": (0, 1 << 21),
                   "min_length": (-1, 1 << 21), "no_repeat_ngram_size": (-1, 1 << 21),
                   "sampling_topk": (-1, 1 << 31), "seed": (-1, 2 ** 53 + 2)}
NATIVE_NUMBERS = {"max_length_ratio": -1, "length_penalty": -2e6, "repetition_penalty": -1,
                  "sampling_topp": 0, "sampling_temperature": 0}
# The fields whose values the runtime judges: 400s in its words.
BEAM_RULE = "need beam size >= 1 and 1 <= n-best <= beam size"
RUNTIME_WORDS = {"beam_size": BEAM_RULE, "n_best": BEAM_RULE,
                 "sampling_topk": "the sampling top-k must be at least 0 (0: no limit)",
                 "repetition_penalty": "the repetition penalty must be a finite number > 0",
                 "sampling_topp": "the sampling top-p must be in (0, 1]",
                 "sampling_temperature": "the sampling temperature must be a finite number > 0"}
# The server's limit on the beam (--max-alternatives + 1).
BEAM_LIMIT = "must be at most 9 (the server's --max-alternatives + 1), found 10"


def low_integer_case(name):
    """What a value below an integer field's range gives: the runtime's
    words where it judges the field."""
    if name in RUNTIME_WORDS:
        return "Invalid request", RUNTIME_WORDS[name]
    return name, "must be in ["


def native_cases(src):
    """(body, field, message) of /v1/translate bodies to refuse: every
    number as a string, below and above its range."""
    base = {"source": [src[1]], "source_lang": "en", "target_lang": "de"}
    cases = []
    for name, (low, high) in NATIVE_INTEGERS.items():
        cases += [(dict(base, **{name: "2"}), name, "must be an integer, found string"),
                  (dict(base, **{name: low}), *low_integer_case(name)),
                  (dict(base, **{name: high}), name,
                   BEAM_LIMIT if name in ("beam_size", "n_best") else "must be in ["),
                  (dict(base, **{name: 1.5}), name, "not an integer")]
    for name, bad in NATIVE_NUMBERS.items():
        cases += [(dict(base, **{name: "0.5"}), name, "must be a number, found string"),
                  (dict(base, **{name: bad}), "Invalid request" if name in RUNTIME_WORDS else name,
                   RUNTIME_WORDS.get(name, name))]
    cases.append((dict(base, return_scores=1), "return_scores", "must be a boolean"))
    raw = json.dumps(base)[:-1]
    for key, value in [("beam_size", "2"), ("target_lang", '"de"'), ("source", '["a"]')]:
        twice = '%s, "%s": %s, "%s": %s}' % (raw, key, value, key, value)
        cases.append((twice.encode(), key, "appears twice"))
    return cases


def check_fields_accepted(url, src, cli):
    """The neighbours that must still pass: numbers in range, a form's digits."""
    status, answer, _ = translate(url, src[1], alternatives=0)
    expect("alternatives 0", (status, answer), (200, {"translatedText": cli[1]}))
    status, answer, _ = translate(url, src[1], alternatives=8)
    expect("alternatives 8", (status, sorted(answer)), (200, ["alternatives", "translatedText"]))
    form = urllib.parse.urlencode({"q": src[1], "source": "en", "target": "de",
                                   "alternatives": "8"}).encode()
    expect("a form's alternatives 8",
           post(url + "/translate", form, "application/x-www-form-urlencoded")[:2],
           (200, answer))
    base = {"source": [src[1]], "source_lang": "en", "target_lang": "de"}
    for options in ({"beam_size": 9, "n_best": 9, "max_length": 256, "min_length": 0,
                     "max_length_ratio": 3, "length_penalty": 1.0,
                     "repetition_penalty": 1.0, "no_repeat_ngram_size": 0},
                    {"sampling_topk": 10, "sampling_topp": 1, "sampling_temperature": 0.5,
                     "seed": 2 ** 53}):
        status, answer, _ = post(url + "/v1/translate", dict(base, **options))
        expect("/v1/translate with %r" % options, status, 200)


def run_fields(model, src_path, cli_path):
    """Every number of /translate and /v1/translate: a string where a number
    belongs and a number out of range are 400s naming the field; a key
    given twice is a 400 naming it (/translate, /v1/translate, /detect)."""
    src, cli = read_lines(src_path), read_lines(cli_path)
    server = Server(model, "--max-alternatives", "8")
    form = b"q=a&source=en&target=de&alternatives=-1"
    cases = [("/translate", *case) for case in translate_cases(src)]
    cases += [("/v1/translate", *case) for case in native_cases(src)]
    cases.append(("/detect", b'{"q": "a", "q": "b"}', "q", "appears twice"))
    cases.append(("/translate", form, "alternatives", "in [0, 8]"))
    for path, body, field, message in cases:
        content_type = ("application/x-www-form-urlencoded" if body is form
                        else "application/json")
        expect_refused(server.url, path, body, field, message, content_type)
    check_fields_accepted(server.url, src, cli)
    if not server.alive():
        fail("the server died")
    expect("exit status", server.stop(), 0)
    print("fields: %d bodies refused naming the field (numbers as strings, out of "
          "range, keys twice); numbers in range and a form's digits accepted" % len(cases))


# --- models -------------------------------------------------------------------


def sentences_of(url, model):
    return metric(get(url + "/metrics")[1], "tfm_serve_sentences_total",
                  '{model="%s"}' % model)


def sentences_of_a_and_b(url, expected, seconds=10):
    """The sentences a and b translated, once they are `expected` or the
    time is up: a batch is counted just after its requests are answered."""
    deadline = time.monotonic() + seconds
    while True:
        counts = (sentences_of(url, "a"), sentences_of(url, "b"))
        if counts == expected or time.monotonic() > deadline:
            return counts
        time.sleep(0.05)


def native(url, sentence, source="en", target="de", **fields):
    body = {"source": [sentence], "source_lang": source, "target_lang": target}
    return post(url + "/v1/translate", dict(body, **fields))


def check_chosen_models(url, src, cli):
    """Without a model the first given serves en -> de; "model" picks one.
    The metrics count each model's sentences."""
    expected = {"results": [{"hypotheses": [cli[1]]}]}
    for fields, counts in [({}, (1, 0)), ({"model": "b"}, (1, 1)), ({"model": "a"}, (2, 1))]:
        status, answer, _ = native(url, src[1], **fields)
        expect("/v1/translate with %r" % fields, (status, answer), (200, expected))
        expect("sentences of a and b after %r" % fields,
               sentences_of_a_and_b(url, counts), counts)
    status, answer, _ = translate(url, src[1])
    expect("/translate", (status, answer), (200, {"translatedText": cli[1]}))
    expect("/translate goes to a", sentences_of_a_and_b(url, (3, 1)), (3, 1))


def check_model_errors(url, src):
    for fields, source, target, message in [
            ({"model": "nope"}, "en", "de", "model 'nope' is not served here (the models: a, b, r)"),
            ({"model": "r"}, "en", "de", "model r does not serve en -> de"),
            ({"model": "a"}, "de", "en", "model a does not serve de -> en"),
            ({"model": ""}, "en", "de", "model is empty: give the name of a served model"),
            ({"model": 5}, "en", "de", "model must be a string, found number")]:
        status, answer, _ = native(url, src[1], source, target, **fields)
        expect("%r %s -> %s" % (fields, source, target),
               (status, answer.get("error")), (400, "Invalid request: " + message))


def check_start_messages(err):
    for line in ["tfm-serve: model a (2 languages) serves en -> de\n",
                 "tfm-serve: model b (2 languages) serves no pair\n",
                 "tfm-serve: model r (2 languages) serves de -> en\n",
                 "tfm-serve: warning: model b is shadowed: 1 of its 1 pairs are served "
                 "by a model given before it (en -> de by a); only /v1/translate's "
                 "\"model\": \"b\" reaches it for them\n",
                 "tfm-serve: 2 language pairs\n"]:
        if line not in err:
            fail("the start-up messages lack %r: %r" % (line, err))
    expect("warnings", err.count("warning"), 1)


def run_models(model_a, model_b, model_r, src_path, cli_path):
    """Two models of one pair (a, then b) and one of another (r)."""
    src, cli = read_lines(src_path), read_lines(cli_path)
    server = Server(None, "--model", "a=" + model_a, "--model", "b=" + model_b,
                    "--model", "r=" + model_r, quiet=False)
    status, text = get(server.url + "/languages")
    expect("/languages", (status, json.loads(text)),
           (200, [{"code": "de", "name": "German", "targets": ["en"]},
                  {"code": "en", "name": "English", "targets": ["de"]}]))
    check_chosen_models(server.url, src, cli)
    check_model_errors(server.url, src)
    expect("exit status", server.stop(), 0)
    check_start_messages(server.proc.stderr.read())
    quiet = Server(None, "--model", "a=" + model_a, "--model", "b=" + model_b)
    expect("exit status (quiet)", quiet.stop(), 0)
    expect("--quiet keeps the warning only", quiet.proc.stderr.read().splitlines(),
           ["tfm-serve: warning: model b is shadowed: 1 of its 1 pairs are served by a "
            "model given before it (en -> de by a); only /v1/translate's \"model\": "
            "\"b\" reaches it for them"])
    print("models: each pair's model and the shadowed one printed at start; "
          "/v1/translate's model chooses; unknown or wrong models 400")


def main():
    command, model = sys.argv[1], sys.argv[2]
    commands = {"api": run_api, "options": run_options, "keys": run_keys, "load": run_load,
                "overload": run_overload, "sigterm": run_sigterm, "hostile": run_hostile,
                "port": run_port,
                "empty-options": run_empty_options,
                "fields": run_fields,
                "models": run_models}
    commands[command](model, *sys.argv[3:])


if __name__ == "__main__":
    main()
