#!/usr/bin/env python3
"""End-to-end benchmark: the tfmc translator against the project's PyTorch
reference, on the benchmark work of shared/bench (same model, same inputs,
exactly 32 target tokens per sentence with EOS suppressed, 2 threads).

  /usr/bin/python3 bench/bench.py [--size base|small|tiny] [--sentences 128]
                                  [--reference-sentences 16] [--runs 3]
                                  [--out bench-results]

Prints a Markdown table (target tokens/s, ratio to the reference, peak RSS,
load time) and writes it with the raw figures as JSON to --out. Figures are
medians of --runs runs; model load is measured by each engine
itself (--timing) and reported apart. Only ratios measured in the same run mean
anything: these machines are shared and noisy.
"""
import argparse
import json
import re
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
CASES = [("greedy-b1", 1, 1), ("greedy-b32", 1, 32), ("beam4-b1", 4, 1), ("beam4-b32", 4, 32)]


def run(cmd):
    """(load seconds, translate seconds, peak RSS MiB) of one run, as the
    engine reports its own timing (--timing) and the kernel its memory."""
    proc = subprocess.Popen(cmd + ["--timing"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    m = re.search(r"load ([0-9.]+) s, translate ([0-9.]+) s", err)
    return float(m.group(1)), float(m.group(2)), usage.ru_maxrss / 1024


def make_model(size, out):
    shared = os.path.join(ROOT, "..", "shared", "bench", "make_model.py")
    if os.path.exists(shared):
        subprocess.run([PY, shared, out, "--size", size], check=True, stdout=subprocess.DEVNULL)
    else:  # the project's generator writes the same shapes
        subprocess.run([PY, os.path.join(ROOT, "test", "models", "make_test_model.py"), out,
                        "--size", size, "--sentences", "128"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="base", choices=["tiny", "small", "base"])
    ap.add_argument("--sentences", type=int, default=128)
    ap.add_argument("--reference-sentences", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="bench-results")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    model = os.path.join(args.out, f"model-{args.size}")
    if not os.path.exists(os.path.join(model, "config.json")):
        make_model(args.size, model)
    source = os.path.join(model, "source.ids")
    lines = open(source).read().splitlines()
    inputs = {}
    for n in {args.sentences, args.reference_sentences}:
        path = os.path.join(args.out, f"source-{n}.ids")
        with open(path, "w") as f:
            f.write("\n".join(lines[:n]) + "\n")
        inputs[n] = path

    # Compile.
    out_dir = os.path.join(args.out, f"tfmc-{args.size}")
    shutil.rmtree(out_dir, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([os.path.join(args.build, "bin", "tfmc"), "compile", model, "-o", out_dir], check=True)
    compile_s = time.perf_counter() - start
    translator = os.path.join(out_dir, "translator")
    sizes = {"translator_bytes": os.path.getsize(translator),
             "weights_bytes": os.path.getsize(os.path.join(out_dir, "model.tfmw"))}

    common = ["--suppress-eos", "--max-length", "32"]
    engines = {
        "tfmc": (lambda beam, batch, src: [translator, src, "-b", str(beam), "--batch-size", str(batch),
                                           "--threads", "2"] + common, args.sentences),
        "reference": (lambda beam, batch, src: [PY, os.path.join(ROOT, "test", "reference", "reference.py"),
                                                model, src, "-b", str(beam), "--batch-size", str(batch),
                                                "--threads", "2"] + common,
                      args.reference_sentences),
    }
    results = {"size": args.size, "compile_seconds": compile_s, **sizes, "engines": {}}
    for name, (command, sentences) in engines.items():
        engine = {"sentences": sentences, "cases": {}}
        loads = []
        for case, beam, batch in CASES:
            runs = [run(command(beam, batch, inputs[sentences])) for _ in range(args.runs)]
            loads += [r[0] for r in runs]
            seconds = statistics.median(r[1] for r in runs)
            tokens = sentences * 32
            engine["cases"][case] = {"seconds": seconds, "tokens_per_second": tokens / seconds,
                                     "peak_rss_mib": max(r[2] for r in runs)}
            print(f"{name:9s} {case:10s} {tokens / seconds:9.1f} tokens/s", file=sys.stderr)
        engine["load_seconds"] = statistics.median(loads)
        results["engines"][name] = engine

    ref = results["engines"]["reference"]["cases"]
    rows = ["| case | tfmc tokens/s | reference tokens/s | ratio | peak RSS tfmc / reference (MiB) |",
            "|---|---|---|---|---|"]
    for case, _, _ in CASES:
        t = results["engines"]["tfmc"]["cases"][case]
        r = ref[case]
        rows.append(f"| {case} | {t['tokens_per_second']:.1f} | {r['tokens_per_second']:.1f} | "
                    f"{t['tokens_per_second'] / r['tokens_per_second']:.1f}x | "
                    f"{t['peak_rss_mib']:.0f} / {r['peak_rss_mib']:.0f} |")
    table = "\n".join(rows)
    summary = (f"{args.size} model: compile {compile_s:.1f} s; translator {sizes['translator_bytes'] / 1e6:.1f} MB "
               f"+ weights {sizes['weights_bytes'] / 1e6:.1f} MB; load: tfmc "
               f"{results['engines']['tfmc']['load_seconds']:.2f} s, reference "
               f"{results['engines']['reference']['load_seconds']:.2f} s; tfmc on {args.sentences} sentences, "
               f"reference on {args.reference_sentences}, 32 tokens each, 2 threads, median of {args.runs}")
    print(summary)
    print(table)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(summary + "\n\n" + table + "\n")


if __name__ == "__main__":
    main()
