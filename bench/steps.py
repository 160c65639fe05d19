"""Where a batch-32 decoder step's time goes, against the compute bound.

Per precision, a translator compiled with `--profile-kernels` runs each
batch-32 case once with `--timing`, which lists every kernel's calls and
seconds in the decoder steps. The kernels are grouped into the parts of a
step by their names (tfm_kernel_<n>_<op kind>_<place>): the layers' linears,
the output projection, attention, layer norms, the other kernels; what the
step's time holds beyond its kernels is the calls between them and the
search's side of the step.

The compute bound of a step: its linears' multiply-adds (2 x the decoder's
matrix elements a row, decoder_step_weights, x the rows of the step) at the
best rate of our own linear kernel on warm compute-bound shapes of the
model (tfm-bench, the same run). Attention, norms and the rest add under 1%
of a step's FLOPs at 32 tokens: the bound leaves them out, so every
millisecond they take is a share the step loses to it."""

import json
import os
import re
import subprocess

PARTS = ["layer linears", "output projection", "attention", "layer norms",
         "other kernels", "outside kernels"]


def part_of(kernel):
    """The part of a step a kernel's name puts it in."""
    kind = re.sub(r"^tfm_kernel_\d+_?", "", kernel)
    if kind.startswith("linear_lm_head"):
        return "output projection"
    if kind.startswith(("linear", "fused_linear")):
        return "layer linears"
    if kind.startswith("attention"):
        return "attention"
    if kind.startswith("layer_norm"):
        return "layer norms"
    return "other kernels"


def read_timing(text):
    """(decode seconds, steps, rows decoded, {part: seconds}) from a profiled
    translator's --timing."""
    totals = re.search(r"decode ([0-9.]+) s in (\d+) steps of (\d+) rows", text)
    if not totals:
        raise ValueError("no decode line in the translator's --timing")
    decode, steps, rows = float(totals.group(1)), int(totals.group(2)), int(totals.group(3))
    parts = dict.fromkeys(PARTS, 0.0)
    for name, seconds in re.findall(
            r"translator: decode kernel (\S+): \d+ calls, ([0-9.]+) s", text):
        parts[part_of(name)] += float(seconds)
    parts["outside kernels"] = max(0.0, decode - sum(parts.values()))
    return decode, steps, rows, parts


def best_linear_rates(build, config, precisions, threads, env):
    """GFLOP/s of our linear kernel per precision: the best of the model's
    feed-forward shapes at 128 and 32 rows, warm (tfm-bench)."""
    d, ffn = config["d_model"], config.get("decoder_ffn_dim") or config.get("d_ff")
    shapes = [(128, d, ffn), (128, ffn, d), (32, d, ffn)]
    measured = [p for p in precisions if p in ("bf16", "int8")]
    cmd = [os.path.join(build, "bin", "tfm-bench"), f"--num-threads={threads}", "--no-onednn",
           "--linear=" + ",".join(f"{m}x{k}x{n}" for m, k, n in shapes)]
    if measured:
        cmd.append("--precisions=" + ",".join(["fp32"] + measured))
    out = json.loads(subprocess.run(cmd, check=True, env=env, capture_output=True,
                                    text=True).stdout)
    rates = {}
    for bench in out["benchmarks"]:
        for engine, figures in bench["engines"].items():
            # tfmc-llvm, tfmc-llvm-int8, ...: warm weights, not -streamed.
            if figures.get("role") != "tfmc" or engine.endswith("-streamed"):
                continue
            suffix = engine.rsplit("-", 1)[1]
            precision = suffix if suffix in ("bf16", "int8") else "fp32"
            rates[precision] = max(rates.get(precision, 0.0), figures["rate"])
    return rates


def measure(args, h, model, source, env, notes):
    """The batch-32 cases' parts per precision (bench.py's end_to_end calls
    this after its cases; `h` is bench.py, for its helpers)."""
    cases = [(c, beam, batch) for c, beam, batch in args.cases if batch > 1]
    if not cases:
        return None
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    matrices = h.decoder_step_weights(config)[0]
    rates = best_linear_rates(args.build, config, args.precisions, args.threads, env)
    backend = "auto" if "auto" in args.backends else args.backends.split(",")[0]
    tfmc = os.path.join(args.build, "bin", "tfmc")
    results = {"backend": backend, "best_linear_gflops": rates, "cases": []}
    for precision in args.precisions:
        if backend == "onednn" and precision == "int4":
            continue
        out_dir = os.path.join(args.out, f"profiled-{precision}-{args.size}")
        subprocess.run([tfmc, "compile", model, "-o", out_dir, f"--backend={backend}",
                        f"--precision={precision}", "--profile-kernels"],
                       check=True, stdout=subprocess.DEVNULL)
        translator = os.path.join(out_dir, "translator")
        for case, beam, batch in cases:
            cmd = [translator, source, "-b", str(beam), "--batch-size", str(batch),
                   "--suppress-eos", "--max-length", str(h.TOKENS), "--threads",
                   str(args.threads), "--timing"]
            done = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
            decode, steps, rows, parts = read_timing(done.stderr)
            flops = 2.0 * matrices * rows
            rate = rates.get(precision)
            results["cases"].append({
                "case": case, "precision": precision, "steps": steps, "rows": rows,
                "decode_s": decode, "parts_s": parts,
                "linear_flops": flops,
                "of_compute_bound": flops / rate / 1e9 / decode if rate else None})
        if precision not in rates:
            notes.append(f"step parts: no tfm-bench rate for {precision}; its share of the "
                         "compute bound is not given")
    return results


def table(parts):
    """Markdown: each batch-32 case's step, part by part, against the bound."""
    if not parts or not parts["cases"]:
        return ""
    rates = ", ".join(f"{p} {r:.0f}" for p, r in parts["best_linear_gflops"].items())
    head = ("| case | precision | ms a step | " + " | ".join(PARTS)
            + " | linears' GFLOP/s | of the compute bound |")
    rows = [head, "|" + "---|" * (len(PARTS) + 5)]
    for c in parts["cases"]:
        p = c["parts_s"]
        linears = p["layer linears"] + p["output projection"]
        cells = [c["case"], c["precision"], f"{c['decode_s'] / c['steps'] * 1e3:.2f}"]
        cells += [f"{p[name] / c['decode_s']:.0%}" for name in PARTS]
        cells.append(f"{c['linear_flops'] / linears / 1e9:.0f}" if linears else "-")
        share = c["of_compute_bound"]
        cells.append("-" if share is None else f"{share:.0%}")
        rows.append("| " + " | ".join(cells) + " |")
    return (f"\n\n**A batch-32 decoder step, part by part** (translators compiled with "
            f"`--profile-kernels`, backend {parts['backend']}, one run each; shares of the "
            f"decode time; the compute bound: the linears' FLOPs at our linear kernel's best "
            f"warm rate measured in this run, GFLOP/s: {rates})\n\n" + "\n".join(rows))
