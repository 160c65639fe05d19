#!/usr/bin/env python3
"""The benchmark harness: the tfmc translator (compiled with each backend)
against the project's PyTorch reference on the benchmark work of
bench/make_model.py (same model, same inputs, exactly 32 target tokens per sentence
with EOS suppressed, 2 threads), plus the micro-benchmarks of bench/micro.py,
all in one run.

  /usr/bin/python3 bench/bench.py --size base           # the full harness
  /usr/bin/python3 bench/bench.py --quick --out DIR     # tiny model, one run

  options: [--size base|small|tiny] [--backends llvm,onednn,auto]
           [--precisions fp32,bf16,int8,int4] [--families marian,bart,...]
           [--serve [--serve-clients 1,8,64] [--serve-seconds 30]]
           [--shortlist]
           [--sentences 128] [--reference-sentences 16] [--runs 3]
           [--cases greedy-b1,greedy-b32,beam4-b1,beam4-b32]
           [--no-micro | --micro-only] [--plot] [--build build]
           [--baseline OLD_BUILD] [--out bench-results]

Writes results.json (every figure), results.md (the tables) and with --plot
results.png (tokens/s per case and engine) to --out. End to end, per case
and engine (engines take turns, run by run): target tokens/s (median of
--runs runs), ratio to the reference, translations identical to the reference's,
peak RSS, model load time (reported by each engine, --timing), and per
backend the compile time of `tfmc compile`. Backends that this tfmc does not
list in `tfmc compile --help` are skipped with a note. Only ratios measured
in the same run mean anything: these machines are shared and noisy.

--precisions fp32,bf16,int8,int4: each backend compiled at each precision
(`tfmc compile --precision`; engines tfmc-BACKEND, tfmc-BACKEND-bf16,
tfmc-BACKEND-int8 and tfmc-BACKEND-int4; oneDNN's take their weights f32
from the file and narrow them as they load; oneDNN has no int4, so that
pair is skipped), every case run at each; the memory bound of batch-1
decoding per precision (bf16 weights take half the bytes, int8 a quarter
and a scale per feature, int4 an eighth and a scale per group of 64), and
the translations identical to the fp32 reference's as an accuracy figure
for the narrower precisions.

--baseline OLD_BUILD: every tfmc engine twice, compiled by this build's
tfmc and by OLD_BUILD's (an older checkout's build directory; its engines
are named baseline-...), taking turns like the others; a table gives each
case's tokens/s, encode and decode time as ratios of this build's to the
baseline's and the translations identical between the two. This is how a
change that must not cost speed is shown.

--quick: the tiny test model (test/models/make_test_model.py), 8 sentences,
one run, small micro-benchmark shapes: ~1.5 minutes with three backends;
the test suite runs it (test/Bench/quick.test) so the harness cannot rot.

--families marian,bart,mbart,m2m_100,t5: a model of --size per family
(Marian's as above, the others by test/models/make_family_model.py: base
is BART-base for bart and mbart, M2M-100-418M, T5 v1.1 base), end to end
only, backends auto and precisions fp32,int8 unless given; every family's
engines take turns run by run, and each family's batch-1 share of its
memory bound (its decoder layers and output projection) stands beside
Marian's of the same run, with what runs its attention (`translator
--model-info`). A family this checkout cannot make, compile or run is
skipped with the reason. See bench/families.py; test/Bench/families.test
runs it on tiny models.

--serve: tfm-serve under load (wrk, 1, 8 and 64 clients sending one
sentence a request; --serve-modes continuous,batches: with and without
continuous batching, an engine each) on the model of --size with examples/en-de's tokenizer,
backend auto and precisions fp32,int8 unless given, beside `translator
--batch-size 32` on the same sentences; latency at 1 client beside the
translator's own time for the sentence; the batches the server formed. See
bench/serve.py; test/Bench/serve.test runs it on the tiny model.

--shortlist: the vocabulary shortlist (translator with and without
--no-vmap, taking turns) on the model of --size compiled at precisions
fp32,int8 unless given (backend auto), with a made-up map of about 1,000
target tokens a batch-1 sentence: tokens/s both ways, the median output
tokens a batch, the output projection's share of a step. See
bench/shortlist.py; test/Bench/shortlist.test runs it on the tiny model.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import families  # noqa: E402
import micro  # noqa: E402
import serve  # noqa: E402
import shortlist  # noqa: E402
import steps  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
CASES = [("greedy-b1", 1, 1), ("greedy-b32", 1, 32), ("beam4-b1", 4, 1), ("beam4-b32", 4, 32)]
TOKENS = 32  # target tokens per sentence


def run(cmd, out_path, env):
    """(load seconds, translate seconds, peak RSS MiB, parts) of one run, as
    the engine reports its own timing (--timing) and the kernel its memory;
    parts: where a tfmc translator's time went (None for the others). The
    translations go to out_path."""
    with open(out_path, "w") as out:
        proc = subprocess.Popen(cmd + ["--timing"], stdout=out, stderr=subprocess.PIPE,
                                text=True, env=env)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        sys.exit(f"{' '.join(cmd)} failed (status {code}):\n{err}")
    m = re.search(r"load ([0-9.]+) s, translate ([0-9.]+) s", err)
    if not m:
        sys.exit(f"{' '.join(cmd)}: no 'load X s, translate Y s' in its --timing output:\n{err}")
    p = re.search(r"encode ([0-9.]+) s, decode ([0-9.]+) s in (\d+) steps of (\d+) rows in all, "
                  r"search ([0-9.]+) s \(row scans ([0-9.]+) s\), cache moves ([0-9.]+) s", err)
    parts = None
    if p:
        parts = {"encode": float(p.group(1)), "decode": float(p.group(2)),
                 "steps": int(p.group(3)), "row_steps": int(p.group(4)),
                 "search": float(p.group(5)), "row_scans": float(p.group(6)),
                 "cache_moves": float(p.group(7))}
        regions = re.search(r"([0-9.]+) parallel regions a decoder step", err)
        if regions:
            parts["regions_per_step"] = float(regions.group(1))
    return float(m.group(1)), float(m.group(2)), usage.ru_maxrss / 1024, parts


def read_tokens(path):
    """The translations: one list of token ids a line."""
    with open(path) as f:
        return [line.split() for line in f.read().splitlines()]


def make_model(size, out, quick):
    maker = os.path.join(ROOT, "bench", "make_model.py")
    if os.path.exists(maker) and not quick:
        subprocess.run([PY, maker, out, "--size", size], check=True, stdout=subprocess.DEVNULL)
    else:  # the project's generator writes the same shapes
        subprocess.run([PY, os.path.join(ROOT, "test", "models", "make_test_model.py"), out,
                        "--size", size, "--sentences", "128"], check=True,
                       stdout=subprocess.DEVNULL)


def decoder_step_weights(config):
    """(matrix elements, output features, bias elements) of the weights a
    batch-1 decoder step reads once per target token, from a checkpoint's
    config.json: each decoder layer's self-attention Q, K, V, O,
    cross-attention Q and O (cross K and V are computed once per sentence)
    and feed-forward matrices, then the output projection. Marian, BART,
    mBART and M2M-100 have a bias per output feature (M2M-100's output
    projection none; Marian's, BART's and mBART's is final_logits_bias); T5
    has no biases, heads * d_kv wide attention and, where feed_forward_proj
    is gated-*, two input matrices of the feed-forward (wi_0, wi_1). Rows
    that a step gathers (the token's embedding, a learned position, T5's
    relative position bias) and the norms' weights are a few KB and not
    counted."""
    family = config.get("model_type", "marian")
    if family in ("t5", "mt5"):
        d, inner, ffn = config["d_model"], config["num_heads"] * config["d_kv"], config["d_ff"]
        layers = config.get("num_decoder_layers") or config["num_layers"]
        ffn_in = 2 if config.get("feed_forward_proj", "relu").startswith("gated-") else 1
        vocab = config["vocab_size"]
        matrices = layers * (6 * inner * d + (ffn_in + 1) * d * ffn) + vocab * d
        rows = layers * (4 * inner + 2 * d + ffn_in * ffn + d) + vocab
        return matrices, rows, 0
    d, ffn, layers = config["d_model"], config["decoder_ffn_dim"], config["decoder_layers"]
    vocab = config.get("decoder_vocab_size") or config["vocab_size"]
    matrices = layers * (6 * d * d + 2 * d * ffn) + vocab * d
    rows = layers * (6 * d + ffn + d) + vocab
    return matrices, rows, rows - vocab if family == "m2m_100" else rows


def step_weight_bytes(model, precision="fp32"):
    """Bytes of weights a batch-1 decoder step reads once per target token
    (decoder_step_weights: the decoder layers' matrices and biases, then the
    output projection and its bias). The matrices take 4 bytes an element,
    2 in bf16, 1 in int8 plus a scale and a correction (4 bytes each) per
    output feature, half a byte in int4 plus a scale per 64 of them and a
    correction per output feature; biases stay f32."""
    with open(os.path.join(model, "config.json")) as f:
        c = json.load(f)
    matrices, rows, biases = decoder_step_weights(c)
    if precision == "int8":
        return matrices + 8 * rows + 4 * biases
    if precision == "int4":
        return matrices // 2 + 4 * (matrices // 64) + 4 * rows + 4 * biases
    return (2 if precision == "bf16" else 4) * matrices + 4 * biases


def machine_probe(build, threads, env, sizes=()):
    """tfm-bench's probes of the machine now (its JSON): read bandwidths, and
    what a fork and join of the threads costs."""
    tool = os.path.join(build, "bin", "tfm-bench")
    cmd = [tool, f"--num-threads={threads}"]
    if sizes:
        cmd.append("--read-bytes=" + ",".join(str(int(b)) for b in sizes))
    return json.loads(subprocess.run(cmd, check=True, env=env, capture_output=True,
                                     text=True).stdout)


def mean_bandwidth(probe):
    """The mean of a machine probe's read bandwidths (GB/s), or None if it
    measured none."""
    gbs = probe.get("read_bandwidth_gbs") or []
    return sum(gbs) / len(gbs) if gbs else None


def read_bandwidths(build, threads, env, sizes):
    """The read bandwidth now (GB/s) of the memory (tfm-bench's 1 GiB) and
    of arrays of `sizes` bytes read again and again (a dict by size): those
    near the last-level cache's size read partly from it."""
    out = machine_probe(build, threads, env, sizes)
    measured = out["read_bandwidth_gbs"]
    sized = {r["bytes"]: r["gbs"] for r in out.get("read_bandwidth_by_size", [])}
    return sum(measured) / len(measured), sized


def tfmc_backends(tfmc, wanted, notes):
    """The wanted backends that `tfmc compile --help` lists, and whether it has
    a --backend flag at all (without one, its only backend is llvm)."""
    help_text = subprocess.run([tfmc, "compile", "--help"], capture_output=True,
                               text=True).stdout
    lines = help_text.splitlines()
    section = []
    for i, line in enumerate(lines):
        if re.match(r"\s*--backend\b", line):
            section = [line] + [l for l in lines[i + 1:i + 20] if re.match(r"\s+=", l)]
            break
    if not section:
        have = ["llvm"]
    else:
        text = "\n".join(section)
        have = [b for b in wanted if re.search(rf"(?<![\w-]){re.escape(b)}(?![\w-])", text)]
    chosen = [b for b in wanted if b in have]
    for b in wanted:
        if b not in have:
            notes.append(f"backend '{b}' skipped: `tfmc compile --help` does not list it")
    return chosen, bool(section)


def compile_engine(tfmc, has_flag, model, backend, precision, out_dir, name):
    """(translator path, facts) of `tfmc compile` of model with one backend
    and precision into out_dir: its time and the sizes of what it made."""
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [tfmc, "compile", model, "-o", out_dir] + ([f"--backend={backend}"] if has_flag else [])
    if precision != "fp32":
        cmd.append(f"--precision={precision}")
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    compile_s = time.perf_counter() - start
    translator = os.path.join(out_dir, "translator")
    print(f"{name}: compiled in {compile_s:.1f} s", file=sys.stderr)
    return translator, {"precision": precision, "compile_seconds": compile_s,
                        "translator_bytes": os.path.getsize(translator),
                        "weights_bytes": os.path.getsize(os.path.join(out_dir, "model.tfmw"))}


def end_to_end(args, notes):
    os.makedirs(args.out, exist_ok=True)
    model = os.path.join(args.out, f"model-{args.size}")
    if not os.path.exists(os.path.join(model, "config.json")):
        make_model(args.size, model, args.quick)
    lines = open(os.path.join(model, "source.ids")).read().splitlines()
    inputs = {}
    for n in {args.sentences, args.reference_sentences}:
        path = os.path.join(args.out, f"source-{n}.ids")
        with open(path, "w") as f:
            f.write("\n".join(lines[:n]) + "\n")
        inputs[n] = path

    tfmc = os.path.join(args.build, "bin", "tfmc")
    backends, has_flag = tfmc_backends(tfmc, args.backends.split(","), notes)
    if not backends:
        sys.exit("bench: none of the backends " + args.backends + " is in this tfmc")
    results = {"size": args.size, "threads": args.threads, "runs": args.runs,
               "tokens_per_sentence": TOKENS, "backends": backends,
               "precisions": args.precisions, "engines": {}}

    common = ["--suppress-eos", "--max-length", str(TOKENS), "--threads", str(args.threads)]
    engines = {}
    compilers = [("", tfmc, has_flag)]
    if args.baseline:
        base_tfmc = os.path.join(args.baseline, "bin", "tfmc")
        compilers.append(("baseline-", base_tfmc, tfmc_backends(base_tfmc, backends, notes)[1]))
    for prefix, compiler, flag in compilers:
        for backend, precision in [(b, p) for p in args.precisions for b in backends
                                   if not (b == "onednn" and p == "int4")]:
            name = prefix + f"tfmc-{backend}" + ("" if precision == "fp32" else f"-{precision}")
            translator, info = compile_engine(compiler, flag, model, backend, precision,
                                              os.path.join(args.out, f"{name}-{args.size}"), name)
            engines[name] = (
                lambda beam, batch, src, t=translator: [t, src, "-b", str(beam), "--batch-size",
                                                        str(batch)] + common,
                args.sentences, info)
    engines["reference"] = (
        lambda beam, batch, src: [PY, os.path.join(ROOT, "test", "reference", "reference.py"),
                                  model, src, "-b", str(beam), "--batch-size", str(batch)] + common,
        args.reference_sentences, {})

    # The reference's PyTorch multiplies with OpenBLAS: with its fast kernels
    # (micro.openblas_core), as a user would tune it.
    env = micro.environment(args.threads)
    detected, core = micro.openblas_core()
    results["openblas_core"] = {"detected": detected, "used": core}
    # The memory bound of batch-1 decoding: each target token reads the
    # decoder's weights once, at the read bandwidth measured just before and
    # after the case (this host's swings by half within minutes), and over
    # the run at that measured before, between and after the cases.
    probes = [machine_probe(args.build, args.threads, env)]
    case_bandwidths = {}
    # Case by case, run by run, every engine in turn: a slow spell of the
    # machine falls on all of them.
    outputs, timings = {}, {}
    for case, beam, batch in args.cases:
        for _ in range(args.runs):
            for name, (command, sentences, _) in engines.items():
                out_path = os.path.join(args.out, f"{name}-{case}.ids")
                timings.setdefault((name, case), []).append(
                    run(command(beam, batch, inputs[sentences]), out_path, env))
                outputs[(name, case)] = read_tokens(out_path)
        for name in engines:
            seconds = statistics.median(r[1] for r in timings[(name, case)])
            tokens = sum(len(t) for t in outputs[(name, case)])
            print(f"{name:14s} {case:10s} {tokens / seconds:9.1f} tokens/s", file=sys.stderr)
        probes.append(machine_probe(args.build, args.threads, env))
        case_bandwidths[case] = [mean_bandwidth(p) for p in probes[-2:]]
    bandwidths = [b for b in map(mean_bandwidth, probes) if b is not None]
    # A fork and join of the threads (an empty parallel loop), and the
    # barrier of a loop in a region that stays open, at every probe.
    results["fork_join_us"] = [p.get("fork_join_us") for p in probes]
    results["in_region_barrier_us"] = [p.get("in_region_barrier_us") for p in probes]
    step_bytes = step_weight_bytes(model)
    bandwidth = sum(bandwidths) / len(bandwidths)
    results["read_bandwidth_gbs"] = bandwidths
    results["case_read_bandwidth_gbs"] = case_bandwidths
    results["step_weight_bytes"] = step_bytes
    results["memory_bound_tokens_per_second"] = bandwidth * 1e9 / step_bytes
    # Per precision: bytes a batch-1 step reads and the bound they set.
    results["memory_bound"] = {
        p: {"step_weight_bytes": step_weight_bytes(model, p),
            "tokens_per_second": bandwidth * 1e9 / step_weight_bytes(model, p)}
        for p in args.precisions}
    parts = {}
    for name, (_, sentences, info) in engines.items():
        engine = {"sentences": sentences, **info, "cases": {}}
        for case, _, _ in args.cases:
            runs = timings[(name, case)]
            seconds = statistics.median(r[1] for r in runs)
            tokens = sum(len(t) for t in outputs[(name, case)])
            engine["cases"][case] = {"seconds": seconds,
                                     "tokens": tokens,
                                     "tokens_per_second": tokens / seconds,
                                     "peak_rss_mib": max(r[2] for r in runs)}
            # Where the time went, in the run whose time is the median.
            median_run = min(runs, key=lambda r: abs(r[1] - seconds))
            if median_run[3]:
                parts[(name, case)] = median_run[3]
        engine["load_seconds"] = statistics.median(
            r[0] for case, _, _ in args.cases for r in timings[(name, case)])
        results["engines"][name] = engine

    # Same work: every engine decodes TOKENS tokens a sentence; on the
    # sentences both ran, count the translations identical to the reference's.
    for name, engine in results["engines"].items():
        for case, r in engine["cases"].items():
            r["tokens_per_sentence"] = (r["tokens"] / engine["sentences"]
                                        if engine["sentences"] else 0.0)
            if name == "reference":
                continue
            ours, ref = outputs[(name, case)], outputs[("reference", case)]
            n = min(len(ours), len(ref))
            r["compared_sentences"] = n
            r["identical_to_reference"] = sum(a == b for a, b in zip(ours[:n], ref[:n]))
            reference_rate = results["engines"]["reference"]["cases"][case]["tokens_per_second"]
            # --reference-sentences 0: the reference did not run.
            r["ratio_to_reference"] = (r["tokens_per_second"] / reference_rate
                                       if reference_rate else None)
            if case.endswith("-b1"):
                step_bytes = results["memory_bound"][engine.get("precision", "fp32")][
                    "step_weight_bytes"]
                # The weights a step streams, per second (the roofline),
                # against the bandwidth measured around this case.
                weights_gbs = r["tokens_per_second"] * step_bytes / 1e9
                case_gbs = [b for b in case_bandwidths[case] if b is not None]
                if case_gbs:
                    r["of_memory_bound"] = weights_gbs / (sum(case_gbs) / len(case_gbs))
                r["weights_gbs"] = weights_gbs
            if (name, case) in parts:
                r["parts"] = parts[(name, case)]
            if ("baseline-" + name, case) in outputs:
                base = outputs[("baseline-" + name, case)]
                r["identical_to_baseline"] = sum(a == b for a, b in zip(outputs[(name, case)], base))
    # After the timed cases: a batch-32 step, part by part (bench/steps.py).
    if not args.baseline:
        parts = steps.measure(args, sys.modules[__name__], model, inputs[args.sentences], env,
                              notes)
        if parts:
            results["step_parts"] = parts
    return results


def e2e_table(results):
    ref = results["engines"]["reference"]
    rows = ["| case | engine | tokens/s | vs reference | of memory bound | identical to reference |"
            " peak RSS (MiB) | load (s) |", "|---|---|---|---|---|---|---|---|"]
    for case in next(iter(results["engines"].values()))["cases"]:
        for name, engine in results["engines"].items():
            r = engine["cases"][case]
            ratio = ("1" if name == "reference" else "-" if r["ratio_to_reference"] is None
                     else f"{r['ratio_to_reference']:.2f}x")
            same = (f"{r['identical_to_reference']}/{r['compared_sentences']}"
                    if name != "reference" else "-")
            bound = (f"{r['of_memory_bound']:.0%} ({r['weights_gbs']:.1f} GB/s)"
                     if "of_memory_bound" in r else "-")
            rows.append(f"| {case} | {name} | {r['tokens_per_second']:.1f} | {ratio} | {bound} | {same} | "
                        f"{r['peak_rss_mib']:.0f} | {engine['load_seconds']:.2f} |")
    compile_rows = ["| backend | compile (s) | translator (MB) | weights (MB) |", "|---|---|---|---|"]
    for name, engine in results["engines"].items():
        if name != "reference":
            compile_rows.append(f"| {name} | {engine['compile_seconds']:.1f} | "
                                f"{engine['translator_bytes'] / 1e6:.1f} | "
                                f"{engine['weights_bytes'] / 1e6:.1f} |")
    tfmc_sentences = next(e["sentences"] for n, e in results["engines"].items() if n != "reference")
    summary = (f"{results['size']} model: tfmc on {tfmc_sentences} sentences, reference on "
               f"{ref['sentences']}, {TOKENS} tokens each (EOS suppressed), {results['threads']} "
               f"threads, median of {results['runs']} run(s); load time reported by each engine, "
               f"not in tokens/s. Memory bound of batch-1 decoding: "
               f"{results['step_weight_bytes'] / 1e6:.1f} MB of weights per target token at the "
               f"read bandwidth measured before, between and after the cases ("
               + ", ".join(f"{b:.1f}" for b in results["read_bandwidth_gbs"])
               + f" GB/s, {results['threads']} threads) = "
               f"{results['memory_bound_tokens_per_second']:.0f} tokens/s.")
    case_gbs = {c: b for c, b in results.get("case_read_bandwidth_gbs", {}).items()
                if c.endswith("-b1")}
    if case_gbs:
        summary += (" Each batch-1 case's \"of memory bound\" is against the bandwidth "
                    "measured just before and after it ("
                    + "; ".join(f"{c}: " + ", ".join(f"{b:.1f}" for b in gbs)
                                for c, gbs in case_gbs.items()) + " GB/s).")
    for p, bound in results.get("memory_bound", {}).items():
        if p != "fp32":
            summary += (f" In {p}: {bound['step_weight_bytes'] / 1e6:.1f} MB per token, "
                        f"{bound['tokens_per_second']:.0f} tokens/s.")
    forks = [f for f in results.get("fork_join_us", []) if f]
    barriers = [b for b in results.get("in_region_barrier_us", []) if b]
    if forks and barriers:
        summary += (f" A fork and join of the threads (an empty parallel loop) took "
                    + ", ".join(f"{f:.2f}" for f in forks)
                    + " us before, between and after the cases; a loop's barrier inside an open "
                    "parallel region " + ", ".join(f"{b:.2f}" for b in barriers) + " us.")
    if any(p != "fp32" for p in results.get("precisions", [])):
        summary += (" Engines of another precision than fp32 are compared with the fp32 "
                    "reference: their \"identical\" column is an accuracy figure; "
                    "\"of memory bound\" is against their precision's bound.")
    core = results.get("openblas_core") or {}
    if core.get("used") and core["used"] != core["detected"]:
        summary += (f" The reference's OpenBLAS ran its {core['used']} kernels "
                    f"(OPENBLAS_CORETYPE); it takes this CPU for a {core['detected']}.")
    return (summary + "\n\n" + "\n".join(rows) + "\n\n" + "\n".join(compile_rows)
            + parts_table(results) + steps.table(results.get("step_parts"))
            + baseline_table(results))


def baseline_table(results):
    """Markdown: each engine against the same engine compiled by --baseline's
    tfmc, in the same run: tokens/s, encoder and decoder time (the median
    run's --timing) as ratios of this build's to the baseline's, and the
    translations identical to the baseline's."""
    engines = results["engines"]
    rows = ["| case | engine | tokens/s | baseline's | ratio | encode ratio | decode ratio | "
            "identical to baseline |", "|---|---|---|---|---|---|---|---|"]
    for name, engine in engines.items():
        base = engines.get("baseline-" + name)
        if not base:
            continue
        for case, r in engine["cases"].items():
            b = base["cases"][case]
            p, q = r.get("parts"), b.get("parts")
            encode = f"{p['encode'] / q['encode']:.3f}" if p and q and q["encode"] else "-"
            decode = f"{p['decode'] / q['decode']:.3f}" if p and q and q["decode"] else "-"
            rows.append(f"| {case} | {name} | {r['tokens_per_second']:.1f} | "
                        f"{b['tokens_per_second']:.1f} | "
                        f"{r['tokens_per_second'] / b['tokens_per_second']:.3f} | {encode} | "
                        f"{decode} | {r['identical_to_baseline']}/{engine['sentences']} |")
    if len(rows) == 2:
        return ""
    return ("\n\n**Against the baseline build** (same run, engines taking turns; ratios "
            "this build / baseline, times lower is faster)\n\n" + "\n".join(rows))


def parts_table(results):
    """Markdown: where each tfmc translator's time went, per case (its own
    --timing of the median run): the encoder, the decoder steps, the search
    over their logits (of it, the scans of each row's logits: log-softmax
    and best tokens) and the cache moves (the beams' tables of cache rows,
    finished rows leaving the batch); a step's mean time, the row scans' share of it, and
    the share of what search adds around the model (choosing beams, keeping
    hypotheses, moving caches); the parallel regions a decoder step began
    (forks and joins of the threads) and what they cost of a step at the
    fork and join measured in the run (tfm-bench's empty parallel loop,
    mean of its probes before, between and after the cases)."""
    fork = [f for f in results.get("fork_join_us", []) if f]
    fork_us = sum(fork) / len(fork) if fork else None
    rows = ["| case | engine | steps | rows decoded | encode (s) | decode (s) | search (s) | "
            "of it row scans (s) | cache moves (s) | ms per step | row scans of a step | "
            "beams + moves of a step | parallel regions a step | their forks and joins "
            "of a step |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, engine in results["engines"].items():
        for case, r in engine["cases"].items():
            p = r.get("parts")
            if not p or not p["steps"]:
                continue
            total = p["decode"] + p["search"] + p["cache_moves"]
            beams = p["search"] - p["row_scans"] + p["cache_moves"]
            regions = p.get("regions_per_step")
            forks = ("-" if regions is None or fork_us is None
                     else f"{regions * fork_us * 1e-6 / (total / p['steps']):.1%}")
            rows.append(f"| {case} | {name} | {p['steps']} | {p['row_steps']} | {p['encode']:.3f} | "
                        f"{p['decode']:.3f} | {p['search']:.3f} | {p['row_scans']:.3f} | "
                        f"{p['cache_moves']:.3f} | {total / p['steps'] * 1e3:.2f} | "
                        f"{p['row_scans'] / total:.1%} | {beams / total:.1%} | "
                        f"{'-' if regions is None else f'{regions:.0f}'} | {forks} |")
    if len(rows) == 2:
        return ""
    return ("\n\n**Where a translator's time goes** (its own `--timing`, the median run)\n\n"
            + "\n".join(rows))


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(results["engines"])
    cases = list(next(iter(results["engines"].values()))["cases"])
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, name in enumerate(names):
        values = [results["engines"][name]["cases"][c]["tokens_per_second"] for c in cases]
        xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(cases))]
        ax.bar(xs, values, width, label=name)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases)
    ax.set_ylabel("target tokens / s")
    ax.set_title(f"{results['size']} model, {results['threads']} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="base", choices=["tiny", "small", "base"])
    ap.add_argument("--backends",
                    help="tfmc backends, comma-separated; those tfmc lacks are skipped "
                         "(default llvm,onednn,auto; with --families auto)")
    ap.add_argument("--precisions",
                    help="tfmc compile --precision values, comma-separated: fp32,bf16,int8,int4 "
                         "(default fp32; with --families fp32,int8)")
    ap.add_argument("--families",
                    help="model families, comma-separated: some of "
                         + ",".join(families.FAMILIES) + " (Marian always): each family's "
                         "model of --size, end to end only (bench/families.py)")
    ap.add_argument("--serve", action="store_true",
                    help="tfm-serve under load with wrk, beside the translator "
                         "(bench/serve.py); end to end only")
    ap.add_argument("--serve-clients", default="1,8,64",
                    help="--serve: wrk's connections per run, comma-separated")
    ap.add_argument("--serve-modes", default="continuous",
                    help="--serve: how tfm-serve batches, comma-separated: continuous "
                         "(sentences join the running batch) and/or batches "
                         "(--no-continuous); an engine each")
    ap.add_argument("--serve-seconds", type=int,
                    help="--serve: seconds of load per run (default 30; --quick 2)")
    ap.add_argument("--shortlist", action="store_true",
                    help="the vocabulary shortlist against the whole vocabulary")
    ap.add_argument("--sentences", type=int, default=128)
    ap.add_argument("--reference-sentences", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases", default=",".join(c for c, _, _ in CASES),
                    help="end-to-end cases, comma-separated")
    ap.add_argument("--quick", action="store_true",
                    help="tiny test model, 8 sentences, one run, small micro shapes")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--no-micro", action="store_true", help="end to end only")
    group.add_argument("--micro-only", action="store_true", help="micro-benchmarks only")
    ap.add_argument("--plot", action="store_true", help="also write results.png (matplotlib)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline",
                    help="another build directory (an older checkout's): its tfmc compiles "
                         "every engine again, the two take turns and a table compares them")
    ap.add_argument("--out", default="bench-results")
    args = ap.parse_args()
    known = {c[0]: c for c in CASES}
    unknown = [c for c in args.cases.split(",") if c not in known]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}: expected some of {', '.join(known)}")
    args.cases = [known[c] for c in args.cases.split(",")]
    if args.families is not None:
        try:
            args.families = families.parse(args.families)
        except ValueError as e:
            ap.error(str(e))
        if args.micro_only:
            ap.error("--families measures end to end: it cannot take --micro-only")
    if args.serve:
        if args.families or args.micro_only:
            ap.error("--serve measures tfm-serve alone: it cannot take --families or "
                     "--micro-only")
        try:
            args.serve_clients = [int(c) for c in args.serve_clients.split(",")]
        except ValueError:
            ap.error(f"--serve-clients {args.serve_clients}: expected numbers, e.g. 1,8,64")
        if not args.serve_clients or min(args.serve_clients) < 1:
            ap.error("--serve-clients: at least one client per run")
        args.serve_modes = args.serve_modes.split(",")
        unknown = [m for m in args.serve_modes if m not in serve.SERVE_MODES]
        if unknown or not args.serve_modes:
            ap.error(f"--serve-modes: {','.join(unknown) or 'none'}: expected "
                     + " and/or ".join(serve.SERVE_MODES))
    if args.shortlist and (args.families or args.serve or args.micro_only):
        ap.error("--shortlist measures the translator alone: it cannot take --families, "
                 "--serve or --micro-only")
    whole = args.families or args.serve or args.shortlist
    if args.baseline and (whole or args.micro_only):
        ap.error("--baseline compares the end-to-end cases: it cannot take --families, "
                 "--serve, --shortlist or --micro-only")
    if args.baseline and not os.path.exists(os.path.join(args.baseline, "bin", "tfmc")):
        ap.error(f"--baseline {args.baseline}: no bin/tfmc in that build directory")
    args.backends = args.backends or ("auto" if whole else "llvm,onednn,auto")
    args.precisions = (args.precisions or ("fp32,int8" if whole else "fp32")).split(",")
    bad = [p for p in args.precisions if p not in ("fp32", "bf16", "int8", "int4")]
    if bad:
        ap.error(f"unknown precision(s) {', '.join(bad)}: expected fp32, bf16, int8 or int4")
    if args.quick:
        args.size, args.sentences, args.reference_sentences, args.runs = "tiny", 8, 8, 1
    args.serve_seconds = args.serve_seconds or (2 if args.quick else 30)

    os.makedirs(args.out, exist_ok=True)
    notes = []
    results = {"quick": args.quick}
    sections = []
    if args.families:
        results["families"] = families.end_to_end(args, notes, sys.modules[__name__])
        sections.append(families.tables(results["families"]))
        if args.plot:
            notes.append("--plot draws the Marian run alone: no picture of the families")
    elif args.serve:
        results["serve"] = serve.end_to_end(args, notes, sys.modules[__name__])
        sections.append(serve.tables(results["serve"]))
        if args.plot:
            notes.append("--plot draws the Marian run alone: no picture of --serve")
    elif args.shortlist:
        results["shortlist"] = shortlist.end_to_end(args, notes, sys.modules[__name__])
        sections.append(shortlist.tables(results["shortlist"]))
    elif not args.micro_only:
        results["end_to_end"] = end_to_end(args, notes)
        sections.append(e2e_table(results["end_to_end"]))
    if not args.no_micro and not whole:
        results["micro"] = micro.run(args.build, args.backends.split(","), args.quick,
                                     args.threads, precisions=args.precisions)
        sections.append("\n\n".join(
            t for t in (micro.summary(results["micro"]), micro.roofline(results["micro"]),
                        micro.tables(results["micro"])) if t))
    results["notes"] = notes
    if notes:
        sections.append("\n".join(f"Note: {n}." for n in notes))
    text = "\n\n".join(sections)
    print(text)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(text + "\n")
    if args.plot and "end_to_end" in results:
        plot(results["end_to_end"], os.path.join(args.out, "results.png"))


if __name__ == "__main__":
    main()
