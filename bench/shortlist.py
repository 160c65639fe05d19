"""The vocabulary shortlist in the benchmark harness (bench.py --shortlist):
the Marian model of --size compiled at each precision (backend auto) with a
vocabulary map, each case run with the shortlist and without (--no-vmap),
the two taking turns run by run, every sentence decoding exactly the
harness's 32 tokens (EOS suppressed), so that the same steps run either
way.

The map is made up (the benchmark model's weights and sentences are
random): the first ALWAYS ids always included and every source id mapped
to TARGETS ids drawn with a seeded generator, which gives about 1,000
target tokens a batch-1 sentence of the benchmark (the issue's shortlist
size; the median a batch is reported, from the translator's --timing).
Only the count of tokens matters for the speed: a batch's projection,
log-softmax and search run over them whichever they are.

Per precision and case: tokens/s with and without, their ratio, the
median output tokens a batch, and the output projection's share of a
decoder step with and without. The share comes from the step times: with
a step costing s_V over the V tokens and s_N over N, and the projection's
cost proportional to its rows (it streams them from memory),
  p_V = (s_V - s_N) / (1 - N / V)
is the whole vocabulary's projection, p_V / s_V its share of a step, and
p_V · N / V / s_N the shortlist's share of its own step.
"""
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time

ALWAYS = 200
TARGETS = 30


def write_vmap_bin(path, vocab, seed=1):
    """A made-up map in the compact form (tfm/abi/Vmap.h): "TFMVMAP1", the
    vocabulary size, the counts, the always-included ids, the rules
    ({n, k, source ids, target ids}, sorted by source), an FNV-1a checksum
    of every byte before it."""
    rng = random.Random(seed)
    always = list(range(min(ALWAYS, vocab)))
    body = b"TFMVMAP1" + struct.pack("<3I", vocab, len(always), vocab)
    body += struct.pack(f"<{len(always)}i", *always)
    for source in range(vocab):
        targets = sorted(rng.sample(range(vocab), min(TARGETS, vocab)))
        body += struct.pack(f"<2Ii{len(targets)}i", 1, len(targets), source, *targets)
    checksum = 0xcbf29ce484222325
    for byte in body:
        checksum = ((checksum ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    with open(path, "wb") as f:
        f.write(body + struct.pack("<Q", checksum))


def run(cmd, out_path, env, expected):
    """(translate seconds, decode seconds, steps, median output tokens) of
    one translator run, from its --timing; each translation must be
    `expected` tokens long."""
    with open(out_path, "w") as out:
        proc = subprocess.run(cmd + ["--timing"], stdout=out, stderr=subprocess.PIPE,
                              text=True, env=env)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed (status {proc.returncode}):\n{proc.stderr}")
    with open(out_path) as f:
        short = [n for n, line in enumerate(f, 1) if len(line.split()) != expected]
    if short:
        sys.exit(f"{' '.join(cmd)}: line {short[0]} is not {expected} tokens: not the "
                 f"harness's work")
    err = proc.stderr
    translate = re.search(r"translate ([0-9.]+) s", err)
    decode = re.search(r"decode ([0-9.]+) s in (\d+) steps", err)
    tokens = re.search(r"over a median (\d+) of (\d+) target tokens", err)
    if not (translate and decode and tokens):
        sys.exit(f"{' '.join(cmd)}: its --timing output lacks the times or the "
                 f"output tokens:\n{err}")
    return (float(translate.group(1)), float(decode.group(1)), int(decode.group(2)),
            int(tokens.group(1)))


def projection_shares(step_full, step_short, tokens, vocab):
    """The output projection's share of a step over the whole vocabulary
    and over the shortlist (see the module's description), or None when
    the step times do not allow it (the shortlist no faster or no
    shorter, or a projection longer than the step)."""
    if tokens >= vocab or step_short >= step_full:
        return None
    full = (step_full - step_short) / (1 - tokens / vocab)
    if full > step_full:  # noise: the times contradict the model
        return None
    return full / step_full, full * tokens / vocab / step_short


def end_to_end(args, notes, bench):
    os.makedirs(args.out, exist_ok=True)
    model = os.path.join(args.out, f"model-{args.size}")
    if not os.path.exists(os.path.join(model, "config.json")):
        bench.make_model(args.size, model, args.quick)
    lines = open(os.path.join(model, "source.ids")).read().splitlines()
    source = os.path.join(args.out, f"source-{args.sentences}.ids")
    with open(source, "w") as f:
        f.write("\n".join(lines[:args.sentences]) + "\n")
    tfmc = os.path.join(args.build, "bin", "tfmc")
    common = ["--suppress-eos", "--max-length", str(bench.TOKENS),
              "--threads", str(args.threads)]
    translators, vocab = {}, None
    for precision in args.precisions:
        out_dir = os.path.join(args.out, f"tfmc-shortlist-{precision}-{args.size}")
        shutil.rmtree(out_dir, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run([tfmc, "compile", model, "-o", out_dir, "--backend=auto",
                        f"--precision={precision}"], check=True)
        print(f"shortlist {precision}: compiled in {time.perf_counter() - start:.1f} s",
              file=sys.stderr)
        if vocab is None:
            info = subprocess.run([os.path.join(out_dir, "translator"), "--model-info"],
                                  check=True, capture_output=True, text=True).stdout
            vocab = int(re.search(r"vocabulary \d+ -> (\d+)", info).group(1))
        write_vmap_bin(os.path.join(out_dir, "vmap.bin"), vocab)
        translators[precision] = os.path.join(out_dir, "translator")

    env = bench.micro.environment(args.threads)
    results = {"size": args.size, "threads": args.threads, "runs": args.runs,
               "tokens_per_sentence": bench.TOKENS, "vocabulary": vocab,
               "map": {"always": ALWAYS, "targets_per_source_token": TARGETS},
               "precisions": {}}
    for precision, translator in translators.items():
        cases = {}
        for case, beam, batch in args.cases:
            timings = {"shortlist": [], "full": []}
            for _ in range(args.runs):
                for way, extra in (("shortlist", []), ("full", ["--no-vmap"])):
                    out_path = os.path.join(args.out, f"shortlist-{precision}-{case}-{way}.ids")
                    cmd = [translator, source, "-b", str(beam), "--batch-size", str(batch)]
                    timings[way].append(run(cmd + common + extra, out_path, env,
                                            bench.TOKENS))
            cases[case] = summarize(timings, args.sentences * bench.TOKENS, vocab)
            print(f"shortlist {precision} {case}: {cases[case]['speedup']:.2f}x "
                  f"({cases[case]['median_output_tokens']} of {vocab} tokens)", file=sys.stderr)
        results["precisions"][precision] = cases
    return results


def summarize(timings, tokens, vocab):
    """One case's figures from its runs: medians of each way's times."""
    def median_run(runs):
        seconds = statistics.median(r[0] for r in runs)
        return min(runs, key=lambda r: abs(r[0] - seconds))
    short, full = median_run(timings["shortlist"]), median_run(timings["full"])
    case = {"tokens_per_second": {"shortlist": tokens / short[0], "full": tokens / full[0]},
            "speedup": full[0] / short[0],
            "median_output_tokens": short[3],
            "step_ms": {"shortlist": 1e3 * short[1] / short[2],
                        "full": 1e3 * full[1] / full[2]}}
    shares = projection_shares(full[1] / full[2], short[1] / short[2], short[3], vocab)
    if shares:
        case["projection_share"] = {"full": shares[0], "shortlist": shares[1]}
    return case


def tables(results):
    rows = [f"Vocabulary shortlist: the Marian {results['size']} model, "
            f"{results['tokens_per_sentence']} tokens a sentence, {results['threads']} "
            f"threads, median of {results['runs']} runs taking turns; a made-up map of "
            f"{results['map']['always']} always-included tokens and "
            f"{results['map']['targets_per_source_token']} per source token.",
            "",
            "| precision | case | tokens/s shortlist | tokens/s full | speedup | "
            f"output tokens (of {results['vocabulary']}) | step ms shortlist / full | "
            "projection's share of a step, full / shortlist |",
            "|---|---|---|---|---|---|---|---|"]
    for precision, cases in results["precisions"].items():
        for case, r in cases.items():
            share = r.get("projection_share")
            share_text = (f"{100 * share['full']:.0f}% / {100 * share['shortlist']:.1f}%"
                          if share else "n/a")
            rows.append(f"| {precision} | {case} | {r['tokens_per_second']['shortlist']:.1f} | "
                        f"{r['tokens_per_second']['full']:.1f} | {r['speedup']:.2f}x | "
                        f"{r['median_output_tokens']} | {r['step_ms']['shortlist']:.3f} / "
                        f"{r['step_ms']['full']:.3f} | {share_text} |")
    return "\n".join(rows)
