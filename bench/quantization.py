#!/usr/bin/env python3
"""What each quantization choice costs in accuracy, measured with the
reference (test/reference/reference.py and its --int4-* / --int8-*
variants; docs/Design/Precisions.md has the arithmetic and the results).

  /usr/bin/python3 bench/quantization.py [--sentences N] [--work DIR]
      [--variants NAME,NAME,...] [--skip-en-de] [--skip-families]

Prints two markdown tables:

- en-de: the bundled model (examples/en-de), the first N sentences of
  test.en (1000: the whole held-out set), greedy and beam 4: the share of
  translations identical to the fp32 reference's, corpus BLEU against
  test.de (test/reference/metrics.py, as `%metrics` in the tests), and the
  first step's logits' error against fp32's (root mean square of the
  difference over that of fp32's logits, all sentences together).
- families: the known-answer models of test/models/families (README.md
  there): how many of the 24 known answers each variant keeps, greedy and
  beam 4 (bart and t5 from source.ids, mbart and m2m_100 with prefix.ids as
  the target prefixes), and the first step's logit error as above.

Each run of the reference is one process (--threads 1, --batch-size 32),
its output cached in --work (chunks of 250 sentences), so that a larger
--sentences reuses what ran before. Run it at nice 19 beside other work:
all the variants on the whole set and the family models took about 40
minutes on one core beside a build (an int4 variant 2.5 minutes, greedy
and beam 4).
"""
import argparse
import hashlib
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "test", "reference", "reference.py")
sys.path.insert(0, os.path.dirname(REFERENCE))
import metrics  # noqa: E402

EN_DE = os.path.join(ROOT, "examples", "en-de")
FAMILIES = os.path.join(ROOT, "test", "models", "families")
CHUNK = 250

# (name, reference.py arguments); the first is the baseline, the first of
# each precision is the compiler's arithmetic.
VARIANTS = [
    ("fp32", ["--precision", "fp32"]),
    ("int8", ["--precision", "int8"]),
    ("int8-symmetric", ["--precision", "int8", "--int8-inputs", "symmetric"]),
    ("int8-out-fp32", ["--precision", "int8", "--int8-output", "fp32"]),
    ("int8-symmetric-out-fp32", ["--precision", "int8", "--int8-inputs", "symmetric",
                                 "--int8-output", "fp32"]),
    ("int8-ties-away", ["--precision", "int8", "--int8-rounding", "away"]),
    ("int4", ["--precision", "int4"]),
    ("int4-symmetric", ["--precision", "int4", "--no-int4-zero-point"]),
    ("int4-g32", ["--precision", "int4", "--int4-group", "32"]),
    ("int4-mse", ["--precision", "int4", "--int4-scales", "mse"]),
    ("int4-symmetric-mse", ["--precision", "int4", "--no-int4-zero-point",
                            "--int4-scales", "mse"]),
    ("int4-g32-mse", ["--precision", "int4", "--int4-group", "32", "--int4-scales", "mse"]),
    ("int4-out-int8", ["--precision", "int4", "--int4-output", "int8"]),
    ("int4-out-fp32", ["--precision", "int4", "--int4-output", "fp32"]),
    ("int4-symmetric-out-int8", ["--precision", "int4", "--no-int4-zero-point",
                                 "--int4-output", "int8"]),
]

# model: its extra reference.py arguments (the target prefixes expected.ids answers)
FAMILY_RUNS = {
    "bart": [],
    "mbart": ["--target-prefix-file", os.path.join(FAMILIES, "mbart", "prefix.ids")],
    "m2m_100": ["--target-prefix-file", os.path.join(FAMILIES, "m2m_100", "prefix.ids")],
    "t5": [],
}


def cache_name(name, args):
    """A variant's name in the cache: with a digest of its arguments and of
    the reference's code, so that a changed reference or variant runs
    again instead of reusing what an older one printed."""
    digest = hashlib.sha1(" ".join(args).encode())
    with open(REFERENCE, "rb") as f:
        digest.update(f.read())
    return f"{name}-{digest.hexdigest()[:10]}"


def run_reference(model, source, out, args, beam, logits=None):
    """Runs the reference once unless `out` exists; returns its lines."""
    if not os.path.exists(out):
        command = [sys.executable, REFERENCE, model, source, "-b", str(beam), "--threads", "1",
                   "--batch-size", "32"] + args
        if logits:
            command += ["--dump-first-logits", logits]
        text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        with open(out + ".tmp", "w") as f:
            f.write(text)
        os.replace(out + ".tmp", out)
    with open(out) as f:
        return f.read().split("\n")[:-1]


def logit_error(logits, baseline):
    """RMS of the difference over RMS of the baseline's logits."""
    a, b = (np.fromfile(p, dtype="<f4").astype(np.float64) for p in (logits, baseline))
    return float(np.sqrt(np.mean((a - b) ** 2) / np.mean(b ** 2)))


def en_de(variants, sentences, work):
    """{(variant, beam): (lines, logits file)} over the first `sentences`."""
    with open(os.path.join(EN_DE, "test.en")) as f:
        source = f.read().split("\n")[:sentences]
    results = {}
    for name, args in variants:
        for beam in (1, 4):
            lines, logits = [], []
            for start in range(0, sentences, CHUNK):
                end = min(start + CHUNK, sentences)
                chunk = os.path.join(work, f"en-{start}-{end}.txt")
                if not os.path.exists(chunk):
                    with open(chunk, "w") as f:
                        f.write("\n".join(source[start:end]) + "\n")
                stem = os.path.join(work, f"en-de-{cache_name(name, args)}-b{beam}-{start}-{end}")
                lines += run_reference(EN_DE, chunk, stem + ".de", args, beam,
                                       stem + ".logits" if beam == 1 else None)
                logits.append(stem + ".logits")
            results[name, beam] = lines, logits
            print(f"en-de {name} beam {beam} done", file=sys.stderr)
    return results


def en_de_table(variants, results, sentences):
    with open(os.path.join(EN_DE, "test.de")) as f:
        refs = f.read().split("\n")[:sentences]
    rows = [f"en-de, {sentences} sentences: identical to fp32's, BLEU; first-step logit error",
            "", "| variant | greedy identical | greedy BLEU | beam 4 identical | beam 4 BLEU "
            "| logit error |", "|---|---|---|---|---|---|"]
    base = variants[0][0]
    for name, _ in variants:
        cells = [name]
        for beam in (1, 4):
            lines, _ = results[name, beam]
            baseline, _ = results[base, beam]
            same = sum(a == b for a, b in zip(lines, baseline)) / len(lines)
            cells += [f"{100 * same:.1f}%", f"{metrics.corpus_bleu(lines, refs).score:.2f}"]
        errors = [logit_error(a, b) for a, b in zip(results[name, 1][1], results[base, 1][1])]
        cells.append(f"{np.mean(errors):.2e}")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def families_table(variants, work):
    models = sorted(FAMILY_RUNS)
    rows = ["Known-answer family models: answers kept of 24, greedy / beam 4; "
            "first-step logit error", "",
            "| variant | " + " | ".join(models) + " | logit error (" + ", ".join(models) + ") |",
            "|---" * (len(models) + 2) + "|"]
    for name, args in variants:
        cells, errors = [name], []
        for model in models:
            directory = os.path.join(FAMILIES, model)
            with open(os.path.join(directory, "expected.ids")) as f:
                expected = f.read().split("\n")[:-1]
            kept, cached = [], os.path.join(work, f"{model}-{cache_name(name, args)}")
            for beam in (1, 4):
                stem = f"{cached}-b{beam}"
                lines = run_reference(directory, os.path.join(directory, "source.ids"),
                                      stem + ".ids", FAMILY_RUNS[model] + args, beam,
                                      stem + ".logits")
                kept.append(sum(a == b for a, b in zip(lines, expected)))
            cells.append(f"{kept[0]} / {kept[1]}")
            base = os.path.join(work, f"{model}-{cache_name(*variants[0])}-b1.logits")
            errors.append(f"{logit_error(cached + '-b1.logits', base):.1e}")
        cells.append(", ".join(errors))
        rows.append("| " + " | ".join(cells) + " |")
        print(f"families {name} done", file=sys.stderr)
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--work", default="/tmp/tfm-quantization",
                    help="the reference's outputs, reused by later runs")
    ap.add_argument("--variants", help="comma-separated names (fp32 is always run); default all")
    ap.add_argument("--skip-en-de", action="store_true")
    ap.add_argument("--skip-families", action="store_true")
    opts = ap.parse_args()
    variants = VARIANTS
    if opts.variants:
        chosen = set(opts.variants.split(","))
        unknown = chosen - {name for name, _ in VARIANTS}
        if unknown:
            ap.error(f"unknown variants: {', '.join(sorted(unknown))}")
        variants = [v for v in VARIANTS if v[0] == "fp32" or v[0] in chosen]
    os.makedirs(opts.work, exist_ok=True)
    print("Variants (reference.py arguments):\n")
    for name, args in variants:
        print(f"- {name}: `{' '.join(args)}`")
    if not opts.skip_families:
        print("\n" + families_table(variants, opts.work))
    if not opts.skip_en_de:
        results = en_de(variants, opts.sentences, opts.work)
        print("\n" + en_de_table(variants, results, opts.sentences))


if __name__ == "__main__":
    main()
