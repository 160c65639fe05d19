#!/usr/bin/env python3
"""Micro-benchmarks of the model's hot shapes: runs tfm-bench (bench/micro/)
and turns its JSON into Markdown tables.

  /usr/bin/python3 bench/micro.py [--quick] [--backends llvm,onednn]
                                  [--build build] [--out bench-results]

Each shape is timed for every engine in the same process, one engine after
the other, and reported as a ratio against its peers:

  linear      tfmc's compiled tfm.linear (per backend) vs OpenBLAS
              cblas_sgemm and a oneDNN matmul primitive, M = 1, 4, 32, 1024
              rows x (K -> N) 512->2048, 2048->512, 512->512, 512->32000;
              with M <= 32 also "-streamed": ours cycling through copies of
              its weights larger than the caches, as a decoder step reads
              them (weights from DRAM)
  attention   fused tfm.attention vs the tfm-decompose'd graph: encoder
              self-attention at 32, 64, 256 and 512 tokens (batch 1, 8 heads
              of 64) and at 32 and 64 tokens for 32 sentences, a decoder
              step (one query) against K/V caches of 32 and 256, and of 32
              for 32 sentences
  layer norm  fused tfm.layer_norm (with residual) vs decomposed, 32 and
              1024 rows of 512

Every engine's output is first checked against the peer (max abs diff);
tfm-bench fails if one differs beyond 1e-4 of the largest value. The
machine's read bandwidth (2 threads summing a 1 GiB array) is measured
before and after the kernels; the roofline table sets the bandwidth-bound
kernels of a decoder step (streamed linears, attention over a cache, layer
norm) against it.
bench/bench.py runs this too, with the end-to-end cases.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# M = 1 and 4: a batch-1 decoder step in greedy and beam-4 search; 32 and
# 1024: batched decoding and the encoder.
LINEARS = [(m, k, n) for m in (1, 4, 32, 1024)
           for k, n in ((512, 2048), (2048, 512), (512, 512), (512, 32000))]
ATTENTION = ["encoder:32", "encoder:64", "encoder:256", "encoder:512", "encoder:32:32",
             "encoder:64:32", "decoder:32", "decoder:256", "decoder:32:32"]
LAYER_NORMS = [(32, 512), (1024, 512)]

# --quick: small shapes, short timings; for the test suite.
QUICK_LINEARS = [(1, 64, 256), (8, 256, 64)]
QUICK_ATTENTION = ["encoder:16", "decoder:16"]
QUICK_LAYER_NORMS = [(8, 64)]

KIND_TITLES = {"linear": "Linear layers: x[M, K] · W[N, K]ᵀ",
               "attention": "Attention, 8 heads of 64 (batch 1 unless named): fused vs unfused",
               "layer_norm": "Layer norm with residual: fused vs unfused"}


# Cores OpenBLAS falls back to when it does not know the CPU: kernels for
# SSE3 or older. OpenBLAS 0.3.21 (Debian 12) takes the machines these
# benchmarks run on (reported as "Intel(R) Xeon(R) Processor", AVX-512) for a
# Prescott, about 10x slower than its AVX-512 kernels.
FALLBACK_CORES = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
                  "Opteron", "Opteron_SSE3", "Barcelona", "Bobcat", "Nano", "Katmai",
                  "Coppermine", "Northwood", "Banias", "Athlon"}


def openblas_core():
    """(the core OpenBLAS detects, the one to run with): when it detects an
    old core on a CPU with AVX-512 or AVX2, SkylakeX or Haswell kernels, set
    through OPENBLAS_CORETYPE for every process the harness starts (the
    micro-benchmark peers, and PyTorch's BLAS in the reference). A
    user's OPENBLAS_CORETYPE is kept."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        detected = lib.openblas_get_corename().decode()
    except OSError:
        return None, None
    if "OPENBLAS_CORETYPE" in os.environ:
        return detected, os.environ["OPENBLAS_CORETYPE"]
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if detected in FALLBACK_CORES:
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
            return detected, "SkylakeX"
        if {"avx2", "fma"} <= flags:
            return detected, "Haswell"
    return detected, detected


def environment(threads):
    """The environment of every engine: the OpenBLAS core (openblas_core)
    and OMP_NUM_THREADS, which the OpenMP runtimes read at start-up."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    detected, core = openblas_core()
    if core and core != detected:
        env["OPENBLAS_CORETYPE"] = core
    return env


def tool_backends(tool):
    """The backends tfm-bench can compile snippets with."""
    out = subprocess.run([tool, "--list-backends"], check=True, capture_output=True, text=True)
    return out.stdout.split()


def run(build, backends, quick=False, threads=2, log=sys.stderr, precisions=("fp32",)):
    """Runs tfm-bench; returns its JSON plus the backends skipped, as a dict."""
    tool = os.path.join(build, "bin", "tfm-bench")
    known = tool_backends(tool)
    chosen = [b for b in backends if b in known]
    skipped = [b for b in backends if b not in known]
    for b in skipped:
        print(f"micro: tfm-bench has no backend '{b}' (it has: {', '.join(known)}); skipped",
              file=log)
    if not chosen:
        chosen = known[:1]
    linears = QUICK_LINEARS if quick else LINEARS
    attention = QUICK_ATTENTION if quick else ATTENTION
    norms = QUICK_LAYER_NORMS if quick else LAYER_NORMS
    cmd = [tool, "--backends=" + ",".join(chosen), f"--num-threads={threads}",
           "--linear=" + ",".join(f"{m}x{k}x{n}" for m, k, n in linears),
           "--attention=" + ",".join(attention),
           "--layer-norm=" + ",".join(f"{r}x{d}" for r, d in norms),
           "--precisions=" + ",".join(precisions)]
    if quick:
        cmd += ["--min-time=0.005", "--repetitions=3", "--settle=0.02"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=environment(threads), text=True)
    if proc.returncode:
        sys.exit(f"micro: {' '.join(cmd)} failed (status {proc.returncode})")
    results = json.loads(proc.stdout)
    results["backends"] = chosen
    results["skipped_backends"] = skipped
    detected, core = openblas_core()
    results["openblas_core"] = {"detected": detected, "used": core}
    return results


def _ratio(a, b):
    return f"{a / b:.2f}x"


def tables(results):
    """Markdown: one table per kind; each engine's rate, ours against the
    peers as a speed ratio (peer seconds / our seconds: > 1 means tfmc is
    faster), the largest difference from the checked peer, the fastest."""
    out = []
    for kind in ("linear", "attention", "layer_norm"):
        rows = [b for b in results["benchmarks"] if b["kind"] == kind]
        if not rows:
            continue
        engines = rows[0].get("engine_order") or list(rows[0]["engines"])
        # Streamed runs (only some shapes have them) go to the roofline.
        engines = [e for e in engines if not e.endswith("-streamed")]
        ours = [e for e in engines if rows[0]["engines"][e]["role"] == "tfmc"]
        peers = [e for e in engines if rows[0]["engines"][e]["role"] == "peer"]
        unit = rows[0]["unit"]
        # Fused ops against their decomposition on the same backend;
        # linears against every library.
        pairs = [(o, p) for o in ours for p in peers
                 if not p.startswith("unfused-") or p == "unfused-" + o[len("tfmc-"):]]
        header = (["shape"] + [f"{e} {unit}" for e in engines]
                  + [f"{o} vs {p}" for o, p in pairs]
                  + ["max abs diff (fp32)", "fastest"])
        lines = [f"**{KIND_TITLES[kind]}** ({unit}; ratios: peer time / tfmc time, "
                 "> 1 = tfmc faster)", "",
                 "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for b in rows:
            e = b["engines"]
            cells = [b["name"]] + [f"{e[n]['rate']:.3g}" for n in engines]
            cells += [_ratio(e[p]["seconds"], e[o]["seconds"]) for o, p in pairs]
            # fp32 engines only: bf16's and int8's differences are their
            # rounding.
            diffs = [c["max_abs_diff"] for c in b["checks"]
                     if "-bf16" not in c["engine"] and "-int8" not in c["engine"]]
            cells.append(f"{max(diffs):.1e}" if diffs else "-")
            cells.append(min(engines, key=lambda n: e[n]["seconds"]))
            lines.append("| " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def read_bandwidth(results):
    """The mean of the read bandwidths tfm-bench measured, GB/s (or None)."""
    bw = results.get("read_bandwidth_gbs") or []
    return sum(bw) / len(bw) if bw else None


def roofline(results):
    """Markdown: the memory-bound kernels of a batch-1 decoder step, the
    bytes each reads per call, its GB/s and that against the read
    bandwidth measured in the same run."""
    bw = read_bandwidth(results)
    if not bw:
        return ""
    rows = []
    for b in results["benchmarks"]:
        engines = b["engines"]
        kernels = []  # (engine, bytes per call, what)
        if b["kind"] == "linear":
            if b["shape"]["M"] > 8:  # 32 rows: compute-bound
                continue
            shape = b["shape"]
            for name in (e for e in b.get("engine_order", engines) if e.endswith("-streamed")):
                # Weights in the engine's precision (int8: and a scale and
                # a sum per output feature); x and y in f32.
                weight_bytes = 2 if "-bf16" in name else 1 if "-int8" in name else 4
                nbytes = (weight_bytes * shape["N"] * shape["K"]
                          + (8.0 * shape["N"] if "-int8" in name else 0)
                          + 4.0 * shape["M"] * (shape["K"] + shape["N"]))
                kernels.append((name, nbytes, f"{b['name']} ({name}, weights from DRAM)"))
        elif (b["kind"] == "attention" and b["shape"]["queries"] == 1
              and b["shape"].get("batch", 1) == 1):
            name = next(e for e in b.get("engine_order", engines) if engines[e]["role"] == "tfmc")
            kernels.append((name, b["bytes"], f"{b['name']} ({name}, cache in L2)"))
        elif b["kind"] == "layer_norm":
            name = next(e for e in b.get("engine_order", engines) if engines[e]["role"] == "tfmc")
            kernels.append((name, b["bytes"], f"{b['name']} ({name})"))
        for name, nbytes, what in kernels:
            gbs = nbytes / engines[name]["seconds"] * 1e-9
            rows.append(f"| {what} | {nbytes / 1e6:.3g} | {engines[name]['seconds'] * 1e6:.1f} | "
                        f"{gbs:.1f} | {gbs / bw:.0%} |")
    if not rows:
        return ""
    measured = ", ".join(f"{x:.1f}" for x in results["read_bandwidth_gbs"])
    return (f"**Roofline of a batch-1 decoder step** (read bandwidth, {results['threads']} "
            f"threads, measured in this run before and after the kernels: {measured} GB/s; "
            f"the table uses their mean, {bw:.1f})\n\n"
            "| kernel | MB read per call | us | GB/s | of read bandwidth |\n|---|---|---|---|---|\n"
            + "\n".join(rows))


def summary(results):
    skipped = results.get("skipped_backends") or []
    text = (f"Micro-benchmarks: {results['threads']} threads for every engine, median of "
            f"{results['repetitions']} repetitions of >= {results['min_time']} s; "
            f"CPU {results['cpu']}, oneDNN {results['onednn']}, "
            f"OpenBLAS {results['openblas'].strip()}; tfmc backends: "
            f"{', '.join(results['backends'])}")
    if skipped:
        text += f" (skipped, not in this build: {', '.join(skipped)})"
    text += "."
    core = results.get("openblas_core") or {}
    if core.get("used") and core["used"] != core["detected"]:
        text += (f" OpenBLAS ran its {core['used']} kernels (OPENBLAS_CORETYPE); it takes "
                 f"this CPU for a {core['detected']}.")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small shapes, short timings")
    ap.add_argument("--backends", default="llvm,onednn",
                    help="tfmc backends, comma-separated (unknown ones are skipped)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precisions", default="fp32", help="of our linears: fp32,bf16,int8")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="bench-results")
    args = ap.parse_args()
    results = run(args.build, args.backends.split(","), args.quick, args.threads,
                  precisions=args.precisions.split(","))
    text = "\n\n".join(t for t in (summary(results), roofline(results), tables(results)) if t)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "micro.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(args.out, "micro.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
