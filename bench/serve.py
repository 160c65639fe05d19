"""tfm-serve under load in the benchmark harness (bench.py --serve): the
benchmark model of --size, compiled per backend and precision (backend
auto, fp32 and int8 unless given) with --source-lang en --target-lang de,
served by tfm-serve on 127.0.0.1 and loaded by wrk with LibreTranslate
requests of one sentence each, beside the same translator run on the same
sentences in the same run.

Text: the benchmark model has random weights and no tokenizer, and
tfm-serve serves text. The harness gives it examples/en-de's SentencePiece
models and vocab.json, filled up (or cut) to the model's vocabulary
(model-SIZE-text: links to the weights, the tokenizer files beside them),
and sends the first --sentences lines of examples/en-de/test.en. Random
weights almost never pick EOS, so every sentence decodes the translator's
default length bound (3 x its source tokens + 5): the work of a sentence is
the same in the server and in the translator, whose translations the
server's equal (checked on the first sentences).

Per engine:
  load      for each of --serve-clients (1, 8, 64) connections, a fresh
            server, one warm-up request, then `wrk -t1 -cN -d--serve-seconds`
            (a Lua script posting {"q": SENTENCE, "source": "en", "target":
            "de"}, cycling through the sentences, each connection's own
            offset): requests/s, sentences/s, non-2xx answers and socket
            errors, median and p99 latency, and from /metrics the batches
            the server formed (sentences per batch, as its histogram's
            buckets); beside `translator --batch-size 32` on the same
            sentences, measured before and after the loads (their mean):
            the ratio of sentences/s (issue 40's target: >= 0.8 at 64
            clients)
  latency   one connection sending one sentence (the sentences' median by
            length) again and again: median and p99 latency beside the
            translator's own time for that sentence with the model loaded
            (--batch-size 1), measured just before and just after the
            server's run (the host drifts over minutes), and the server's
            mean batch time from /metrics; overhead = the median latency
            minus the mean of the translator's two times (target: <= 2 ms)

The translator's times are its --timing's, for a pass over the sentences
once it runs: a run over them once subtracted from a run over them
repeated (translator_seconds), median of --runs. The server's are after a
warm-up of the same load (served_run); both leave out what a process pays
once (threads starting, pages first read, kernels made per shape).
"""
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

BATCH = 32  # the translator's batch size to compare with
# How tfm-serve batches (--serve-modes): sentences joining the running
# batch between its steps, or batches run to their end.
SERVE_MODES = {"continuous": [], "batches": ["--no-continuous"]}
LUA = r"""-- POST /translate, one sentence a request, cycling through the bodies
-- of a file (one JSON body a line; its path is wrk's first argument after
-- --). One wrk thread: its connections take the bodies in turn, so that
-- concurrent requests hold different sentences.
local bodies, next_body = {}, 0

function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  next_body = next_body + 1
  return wrk.format(nil, nil, nil, bodies[next_body % #bodies + 1])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests": %d, "duration_us": %d, ' ..
    '"non_2xx": %d, "connect_errors": %d, "read_errors": %d, ' ..
    '"write_errors": %d, "timeouts": %d, "latency_p50_us": %d, ' ..
    '"latency_p99_us": %d, "latency_mean_us": %.1f, "latency_max_us": %d}\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write,
    e.timeout, latency:percentile(50), latency:percentile(99), latency.mean,
    latency.max))
end
"""


def text_model(h, args):
    """The benchmark model with examples/en-de's tokenizer (see above): a
    directory of links to its weights and the tokenizer files."""
    model = os.path.join(args.out, f"model-{args.size}")
    if not os.path.exists(os.path.join(model, "config.json")):
        h.make_model(args.size, model, args.quick)
    text = model + "-text"
    shutil.rmtree(text, ignore_errors=True)
    os.makedirs(text)
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.abspath(os.path.join(model, name)), os.path.join(text, name))
    example = os.path.join(h.ROOT, "examples", "en-de")
    for name in ("source.spm", "target.spm"):
        shutil.copy(os.path.join(example, name), text)
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(example, "vocab.json")) as f:
        vocab = fitted_vocab(json.load(f), config["vocab_size"], config["pad_token_id"])
    with open(os.path.join(text, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    return text


def fitted_vocab(vocab, size, pad):
    """examples/en-de's vocabulary (</s> 0, <unk> 1, as the benchmark
    model's) on `size` ids: pieces past it dropped (they encode as <unk>),
    free ids given placeholder pieces, <pad> at the model's padding."""
    by_id = {i: p for p, i in vocab.items() if i < size and i != pad and p != "<pad>"}
    by_id[pad] = "<pad>"
    return {by_id.get(i, f"<tfm-bench-{i}>"): i for i in range(size)}


def read_sentences(h, count):
    with open(os.path.join(h.ROOT, "examples", "en-de", "test.en")) as f:
        lines = [l.strip() for l in f if l.strip()]
    return lines[:count]


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def body(sentence):
    return json.dumps({"q": sentence, "source": "en", "target": "de"}, ensure_ascii=False)


class Server:
    """tfm-serve on a free port of 127.0.0.1, stopped by SIGTERM (it
    answers what it accepted, then exits 0)."""

    def __init__(self, serve, model, threads, env, log, flags=()):
        self.log = open(log, "a")
        self.proc = subprocess.Popen(
            [serve, "--port", "0", "--quiet", "--threads", str(threads),
             # Queued requests wait up to two batches of the base model;
             # no 504 should cut them.
             "--timeout", "600", *flags, model],
            stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline() if ready else ""
        match = re.search(r"listening on (http://[\d.]+:\d+)", line)
        if not match:
            self.proc.kill()
            sys.exit(f"bench: tfm-serve did not start ({line!r}); see {log}")
        self.url = match.group(1)

    def post(self, payload):
        request = urllib.request.Request(
            self.url + "/translate", data=payload.encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as answer:
            return json.loads(answer.read())

    def metrics(self):
        with urllib.request.urlopen(self.url + "/metrics", timeout=60) as answer:
            return parse_metrics(answer.read().decode())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=900)
        self.log.close()
        if code:
            sys.exit(f"bench: tfm-serve exited with status {code}")


def parse_metrics(text):
    """Prometheus text: {(name, le or None): value}, summed over labels
    other than le (one model a server here)."""
    values = {}
    for line in text.splitlines():
        m = re.match(r'^(\w+)(?:\{([^}]*)\})? (\S+)$', line)
        if not m:
            continue
        le = re.search(r'le="([^"]+)"', m.group(2) or "")
        key = (m.group(1), le.group(1) if le else None)
        values[key] = values.get(key, 0) + float(m.group(3))
    return values


def metrics_delta(before, after):
    return {k: v - before.get(k, 0) for k, v in after.items()}


def batch_record(delta):
    """The batches a run formed, from the /metrics histogram of sentences
    per batch: counts per bucket ("3-4": batches of 3 or 4 sentences), the
    batches, sentences and mean; and the mean batch time."""
    bucket = "tfm_serve_batch_sentences_bucket"
    bounds = sorted((le for (name, le) in delta if name == bucket and le != "+Inf"),
                    key=float)
    buckets, below, low = {}, 0, 1
    for le in bounds:
        count, high = delta[(bucket, le)] - below, int(float(le))
        below += count
        if count:
            buckets[f"{low}" if low == high else f"{low}-{high}"] = int(count)
        low = high + 1
    batches = delta.get(("tfm_serve_batch_sentences_count", None), 0)
    sentences = delta.get(("tfm_serve_batch_sentences_sum", None), 0)
    seconds = delta.get(("tfm_serve_batch_duration_seconds_sum", None), 0)
    return {"batches": int(batches), "sentences": int(sentences),
            "mean_sentences": sentences / batches if batches else 0,
            "batches_over_one": int(batches) - buckets.get("1", 0),
            "buckets": buckets,
            "mean_batch_ms": 1e3 * seconds / batches if batches else 0,
            "failures": int(delta.get(("tfm_serve_batch_failures_total", None), 0))}


def run_wrk(url, script, bodies, connections, seconds, log):
    """wrk's figures (the script's done()), bounded: `seconds` of load,
    `connections` connections, each request allowed 600 s."""
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "600s",
           "-s", script, url + "/translate", "--", bodies]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 900)
    with open(log, "a") as f:
        f.write(" ".join(cmd) + "\n" + done.stdout + done.stderr)
    line = next((l for l in done.stdout.splitlines() if l.startswith("WRK_JSON ")), None)
    if done.returncode or not line:
        sys.exit(f"bench: wrk failed (status {done.returncode}); see {log}")
    return json.loads(line[len("WRK_JSON "):])


def served_run(args, engine, bodies, connections, seconds, env):
    """One wrk run against a fresh server, after a warm-up (a fifth of the
    time, at least a second, of the same load: the shapes of its batches
    met once) and one more request, answered once the warm-up's queue has
    gone: wrk's figures and the batches formed after the warm-up."""
    server = Server(engine["serve"], engine["dir"], args.threads, env, engine["log"],
                    engine["serve_flags"])
    try:
        server.post(body(engine["warm_up"]))
        run_wrk(server.url, engine["script"], bodies, connections, max(1, seconds // 5),
                engine["log"])
        server.post(body(engine["warm_up"]))
        # A batch's figures are recorded just after its answers go out.
        time.sleep(0.2)
        before = server.metrics()
        figures = run_wrk(server.url, engine["script"], bodies, connections, seconds,
                          engine["log"])
        batches = batch_record(metrics_delta(before, server.metrics()))
    finally:
        server.stop()
    return figures, batches


def translator_seconds(h, translator, lines, batch, args, env, out, extra):
    """Seconds the translator takes for `lines` once it runs: the median
    over --runs of its --timing for the lines `extra` + 1 times, minus that
    for them once, over `extra`. The difference leaves out the first pass
    (OpenMP's threads starting, the weights' pages first read, oneDNN's
    kernels made for each new shape), which a server pays once, in its
    warm-up. Also the translations of one pass."""
    once = write_lines(out + ".src", lines)
    more = write_lines(out + ".more.src", lines * (extra + 1))
    cmd = [translator, "--batch-size", str(batch), "--threads", str(args.threads)]
    differences = []
    for _ in range(args.runs):
        first = h.run(cmd + [once], out, env)[1]
        differences.append((h.run(cmd + [more], out + ".more", env)[1] - first) / extra)
    with open(out) as f:
        translations = f.read().splitlines()
    return statistics.median(differences), translations


def compile_engine(h, args, tfmc, model, backend, precision, has_flag):
    name = f"tfmc-{backend}" + ("" if precision == "fp32" else f"-{precision}")
    out_dir = os.path.join(args.out, f"serve-{name}-{args.size}")
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = ([tfmc, "compile", model, "-o", out_dir, "--source-lang", "en",
            "--target-lang", "de"] + ([f"--backend={backend}"] if has_flag else []))
    if precision != "fp32":
        cmd.append(f"--precision={precision}")
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    print(f"serve {name}: compiled in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return name, {"dir": out_dir, "precision": precision, "backend": backend,
                  "translator": os.path.join(out_dir, "translator")}


def same_as_translator(server, sentences, translations):
    """How many of the first sentences the server translates as the
    translator did (one request with an array q)."""
    answer = server.post(json.dumps({"q": sentences, "source": "en", "target": "de"},
                                    ensure_ascii=False))["translatedText"]
    return sum(a == b for a, b in zip(answer, translations))


def pass_seconds(h, args, engine, lines, batch, out, extra, env):
    """translator_seconds, tried again when it comes out not positive: a
    difference of two runs can on a busy host (the quick mode's tiny model
    runs in milliseconds, beside other tests); the quick mode tries 5
    times."""
    for _ in range(5 if args.quick else 1):
        seconds, translations = translator_seconds(h, engine["translator"], lines, batch,
                                                   args, env, out, extra)
        if seconds > 0:
            return seconds, translations
    sys.exit(f"bench: {engine['name']}: the translator's time per pass is not "
             f"positive ({seconds:.4f} s): the machine is too noisy for this measurement")


def measure_translator(h, args, engine, sentences, env):
    """The translator on the sentences at batch 32 (per pass, as
    translator_seconds); its translations, to compare the server's with."""
    out = os.path.join(args.out, f"serve-{engine['name']}")
    # Passes of at least 128 sentences beyond the first (4 batches of 32).
    extra = max(1, -(-128 // len(sentences)))
    seconds, translations = pass_seconds(h, args, engine, sentences, BATCH, out + ".de",
                                         extra, env)
    return {"batch_size": BATCH, "seconds": seconds, "extra_passes": extra,
            "sentences_per_second": len(sentences) / seconds}, translations


def one_sentence_ms(h, args, engine, one, env):
    """The translator's time for the latency sentence alone at batch 1."""
    out = os.path.join(args.out, f"serve-{engine['name']}.one.de")
    return pass_seconds(h, args, engine, [one], 1, out, 8, env)[0] * 1e3


def load_level(args, engine, paths, connections, env):
    figures, batches = served_run(args, engine, paths["bodies"], connections,
                                  args.serve_seconds, env)
    seconds = figures["duration_us"] / 1e6
    ok = figures["requests"] - figures["non_2xx"]
    print(f"serve {engine['name']} {connections:3d} clients: {ok / seconds:7.2f} "
          f"sentences/s, p50 {figures['latency_p50_us'] / 1e3:.1f} ms, mean batch "
          f"{batches['mean_sentences']:.1f}", file=sys.stderr)
    return {"connections": connections, "seconds": seconds, **figures,
            "socket_errors": sum(figures[k] for k in ("connect_errors", "read_errors",
                                                      "write_errors", "timeouts")),
            "requests_per_second": figures["requests"] / seconds,
            "sentences_per_second": ok / seconds,
            "ratio_to_translator": None,  # once the translator's rate is known
            "batches": batches}


def latency_run(h, args, engine, paths, sentence, env):
    """The server's latency for one sentence, between two measurements of
    the translator's time for it (the host's speed drifts over minutes:
    the mean of the two is the translator's time during the run)."""
    before = one_sentence_ms(h, args, engine, sentence, env)
    figures, batches = served_run(args, engine, paths["one_body"], 1, args.serve_seconds,
                                  env)
    after = one_sentence_ms(h, args, engine, sentence, env)
    translator_ms = (before + after) / 2
    p50 = figures["latency_p50_us"] / 1e3
    return {"sentence": sentence, "requests": figures["requests"],
            "non_2xx": figures["non_2xx"], "p50_ms": p50,
            "p99_ms": figures["latency_p99_us"] / 1e3,
            "mean_ms": figures["latency_mean_us"] / 1e3,
            "translator_ms": translator_ms,
            "translator_ms_before_after": [before, after],
            "server_batch_ms": batches["mean_batch_ms"],
            "overhead_ms": p50 - translator_ms,
            "overhead_over_batch_ms": p50 - batches["mean_batch_ms"]}


def inputs(h, args):
    """The sentences, the latency sentence (the median by length) and the
    files wrk and the translator read."""
    sentences = read_sentences(h, args.sentences)
    one = sorted(sentences, key=len)[len(sentences) // 2]
    paths = {"sentences": write_lines(os.path.join(args.out, "serve-sentences.en"), sentences),
             "bodies": write_lines(os.path.join(args.out, "serve-bodies.jsonl"),
                                   [body(s) for s in sentences]),
             "one_body": write_lines(os.path.join(args.out, "serve-one.jsonl"), [body(one)])}
    script = os.path.join(args.out, "serve.lua")
    with open(script, "w") as f:
        f.write(LUA)
    return sentences, one, paths, script


def end_to_end(args, notes, h):
    """The load benchmark: results["serve"] of results.json."""
    os.makedirs(args.out, exist_ok=True)
    if not shutil.which("wrk"):
        sys.exit("bench: --serve needs wrk (Debian's package wrk)")
    serve = os.path.join(args.build, "bin", "tfm-serve")
    tfmc = os.path.join(args.build, "bin", "tfmc")
    backends, has_flag = h.tfmc_backends(tfmc, args.backends.split(","), notes)
    if not backends:
        sys.exit("bench: none of the backends " + args.backends + " is in this tfmc")
    model = text_model(h, args)
    sentences, one, paths, script = inputs(h, args)
    env = h.micro.environment(args.threads)
    results = {"size": args.size, "threads": args.threads, "runs": args.runs,
               "sentences": len(sentences), "seconds_per_run": args.serve_seconds,
               "clients": args.serve_clients, "translator_batch_size": BATCH,
               "backends": backends, "precisions": args.precisions, "engines": {}}
    for backend, precision in [(b, p) for p in args.precisions for b in backends]:
        name, compiled = compile_engine(h, args, tfmc, model, backend, precision, has_flag)
        for mode in args.serve_modes:
            named = name if mode == "continuous" else f"{name}-{mode}"
            engine = dict(compiled, name=named, serve=serve, script=script,
                          warm_up=sentences[0], serve_flags=SERVE_MODES[mode],
                          log=os.path.join(args.out, f"serve-{named}.log"))
            results["engines"][named] = measure_engine(h, args, engine, paths, one, env)
    return results


def measure_engine(h, args, engine, paths, one, env):
    with open(paths["sentences"]) as f:
        sentences = f.read().splitlines()
    translator, translations = measure_translator(h, args, engine, sentences, env)
    checked = min(4, len(sentences))
    server = Server(engine["serve"], engine["dir"], args.threads, env, engine["log"],
                    engine["serve_flags"])
    try:
        same = same_as_translator(server, sentences[:checked], translations[:checked])
    finally:
        server.stop()
    record = {"precision": engine["precision"], "backend": engine["backend"],
              "translator": translator, "compared_sentences": checked,
              "same_as_translator": same, "load": {}}
    for connections in args.serve_clients:
        record["load"][str(connections)] = load_level(args, engine, paths, connections, env)
    # The translator's rate before and after the loads (the host drifts
    # over minutes): their mean is its rate during them.
    after, _ = measure_translator(h, args, engine, sentences, env)
    rates = [translator["sentences_per_second"], after["sentences_per_second"]]
    translator["sentences_per_second"] = sum(rates) / 2
    translator["sentences_per_second_before_after"] = rates
    for level in record["load"].values():
        level["ratio_to_translator"] = (level["sentences_per_second"]
                                        / translator["sentences_per_second"])
    record["latency"] = latency_run(h, args, engine, paths, one, env)
    return record


def buckets_text(batches):
    return ", ".join(f"{k}: {v}" for k, v in batches["buckets"].items()) or "-"


def tables(results):
    """Markdown of the load benchmark."""
    engines = results["engines"]
    text = (f"tfm-serve, {results['size']} model with examples/en-de's tokenizer, "
            f"{results['threads']} threads: wrk for {results['seconds_per_run']} s per run, "
            f"one sentence a request cycling through {results['sentences']} sentences of "
            f"examples/en-de/test.en, a fresh server per run; the translator "
            f"(`--batch-size {results['translator_batch_size']}`, its `--timing`, median of "
            f"{results['runs']} run(s), before and after each engine's loads: their mean) "
            f"on the same sentences in the same run.")
    rows = ["| engine | clients | requests/s | sentences/s | translator b32 sentences/s | "
            "ratio | p50 (ms) | p99 (ms) | non-2xx | socket errors | batches | mean batch |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, e in engines.items():
        for c, r in e["load"].items():
            rows.append(f"| {name} | {c} | {r['requests_per_second']:.2f} | "
                        f"{r['sentences_per_second']:.2f} | "
                        f"{e['translator']['sentences_per_second']:.2f} | "
                        f"{r['ratio_to_translator']:.2f}x | {r['latency_p50_us'] / 1e3:.1f} | "
                        f"{r['latency_p99_us'] / 1e3:.1f} | {r['non_2xx']} | "
                        f"{r['socket_errors']} | {r['batches']['batches']} | "
                        f"{r['batches']['mean_sentences']:.1f} |")
    text += "\n\n**Throughput** (target: >= 1.1x the translator at 64 clients)\n\n" + "\n".join(rows)
    rows = ["| engine | requests | p50 (ms) | p99 (ms) | translator --timing, before / "
            "after (ms) | overhead (ms) | server batch, /metrics (ms) | p50 - batch (ms) |",
            "|---|---|---|---|---|---|---|---|"]
    for name, e in engines.items():
        r = e["latency"]
        rows.append(f"| {name} | {r['requests']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                    + " / ".join(f"{t:.1f}" for t in r["translator_ms_before_after"])
                    + f" | {r['overhead_ms']:+.1f} | "
                    f"{r['server_batch_ms']:.1f} | {r['overhead_over_batch_ms']:+.1f} |")
    one = next(iter(engines.values()))["latency"]["sentence"]
    text += (f"\n\n**Latency at 1 client**, one sentence (\"{one}\") again and again; "
             "overhead = p50 minus the translator's own time for it with the model "
             "loaded, the mean of its times just before and just after the server's "
             "run (target: <= 2 ms)\n\n" + "\n".join(rows))
    rows = ["| engine | clients | batches | sentences per batch: batches |", "|---|---|---|---|"]
    for name, e in engines.items():
        for c, r in e["load"].items():
            rows.append(f"| {name} | {c} | {r['batches']['batches']} | "
                        f"{buckets_text(r['batches'])} |")
    same = ", ".join(f"{n} {e['same_as_translator']}/{e['compared_sentences']}"
                     for n, e in engines.items())
    text += ("\n\n**Batches the server formed** (/metrics' histogram of sentences per "
             "batch)\n\n" + "\n".join(rows)
             + f"\n\nServer translations equal to the translator's: {same}.")
    return text
