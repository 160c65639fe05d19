#!/usr/bin/env python3
"""Compares a translator's output with the reference's.

  compare.py translations EXPECTED ACTUAL [--score-rtol R] [--max-differing D]
      Same lines; tokens equal; scores (n-best "I ||| TOKENS ||| SCORE",
      "SCORE<TAB>TOKENS", and the tokens' log p after a TAB or " ||| ")
      within R (default 1e-4) relative to their magnitude or 1 if less. With D, up to D sentences (of any
      number of n-best lines each) may differ; they are named.
  compare.py scores EXPECTED ACTUAL [--rtol R]
      translator --score's lines, "SCORE[<TAB>TOKEN SCORES]": each score
      within R as above.
  compare.py logits EXPECTED ACTUAL [--rtol R] [--mean-rtol M]
                    [--rows N --min-close C --close-rtol E]
      Two little-endian f32 files of the same size; max |a - e| must be
      at most R times max |e| (default 1e-4), and with M the mean |a - e|
      at most M times max |e|. With N, the files hold N rows (sentences),
      of which at least C must be within E times max |e|. (bf16 and int8
      logits: one rounding of an activation that falls the other way
      changes the layers after it, so a few logits differ by much more
      than most; the mean tells bf16 apart from fp32. In int8, that rounding
      is of a quantized input, after an f32 sum of another order than
      PyTorch's crossed a tie: the sentences it spares are exact to f32's
      rounding, which the rows check.)

Prints what it found and exits 1 on a mismatch, naming the line.
"""
import argparse
import sys

import numpy as np


def fields(line):
    """A line's fields: "I ||| TOKENS ||| SCORE [||| TOKEN SCORES]" (n-best),
    "SCORE<TAB>TOKENS[<TAB>TOKEN SCORES]" (--with-scores, --token-scores)
    or the tokens alone; the tokens' field, and the fields that are scores,
    as (index, score or list of scores)."""
    if " ||| " in line:
        parts = line.split(" ||| ")
        scores = [(2, float(parts[2]))] if len(parts) > 2 else []
        if len(parts) > 3:
            scores.append((3, [float(x) for x in parts[3].split()]))
        return parts, 1, scores
    if "\t" in line:
        parts = line.split("\t")
        scores = [(0, float(parts[0]))]
        if len(parts) > 2:
            scores.append((2, [float(x) for x in parts[2].split()]))
        return parts, 1, scores
    return [line], 0, []


def score_difference(expected, actual):
    """The difference of two scores relative to the expected one's magnitude
    but at least 1 (a trained model's log p may be near 0, where float32's
    rounding is far above 1e-4 relative); of two lists of token scores, the
    worst."""
    if not isinstance(expected, list):
        expected, actual = [expected], [actual]
    if len(expected) != len(actual):
        return float("inf")
    return max([abs(e - a) / max(abs(e), 1.0) for e, a in zip(expected, actual)], default=0.0)


def translations(expected, actual, rtol, max_differing=0):
    e = open(expected).read().splitlines()
    a = open(actual).read().splitlines()
    if len(e) != len(a):
        sys.exit(f"line count differs: expected {len(e)}, found {len(a)}")
    worst = 0.0
    differing = []  # sentences: the line's index, or an n-best line's "I"
    for n, (x, y) in enumerate(zip(e, a), 1):
        (xs, text, xscores), (ys, _, yscores) = fields(x), fields(y)
        sentence = xs[0] if " ||| " in x else str(n)
        if sentence in differing:
            continue
        nbest_index_differs = " ||| " in x and xs[0] != ys[0]
        if len(xs) != len(ys) or xs[text] != ys[text] or nbest_index_differs:
            if len(differing) >= max_differing:
                sys.exit(f"line {n} differs:\n  expected: {x}\n  found:    {y}")
            differing.append(sentence)
            continue
        for (field, se), (_, sa) in zip(xscores, yscores):
            rel = score_difference(se, sa)
            worst = max(worst, rel)
            if rel > rtol:
                sys.exit(f"line {n}: score field {field + 1} {sa} differs from {se} "
                         f"by {rel:.2e} relative")
    if differing:
        print(f"sentence(s) {', '.join(differing)} differ (at most {max_differing} may)")
    rest = "; the other lines equal" if differing else " equal"
    print(f"{len(e)} lines{rest}; worst score difference {worst:.2e} relative")


def scores(expected, actual, rtol):
    """translator --score's lines: "SCORE[<TAB>TOKEN SCORES]"."""
    e = open(expected).read().splitlines()
    a = open(actual).read().splitlines()
    if len(e) != len(a):
        sys.exit(f"line count differs: expected {len(e)}, found {len(a)}")
    worst = 0.0
    for n, (x, y) in enumerate(zip(e, a), 1):
        xs, ys = x.split("\t"), y.split("\t")
        if len(xs) != len(ys):
            sys.exit(f"line {n} differs:\n  expected: {x}\n  found:    {y}")
        for field, (se, sa) in enumerate(zip(xs, ys), 1):
            rel = score_difference([float(v) for v in se.split()], [float(v) for v in sa.split()])
            worst = max(worst, rel)
            if rel > rtol:
                sys.exit(f"line {n}: field {field} {sa} differs from {se} by {rel:.2e} relative")
    print(f"{len(e)} lines of scores; worst difference {worst:.2e} relative")


def logits(expected, actual, rtol, mean_rtol, rows=None, min_close=None, close_rtol=None):
    e = np.fromfile(expected, dtype="<f4")
    a = np.fromfile(actual, dtype="<f4")
    if e.size != a.size or e.size == 0:
        sys.exit(f"sizes differ: expected {e.size} floats, found {a.size}")
    scale = np.abs(e).max()
    rel = np.abs(a - e).max() / scale
    mean = np.abs(a - e).mean() / scale
    print(f"{e.size} logits; max difference {rel:.2e}, mean {mean:.2e} of the largest magnitude")
    if not rel <= rtol:
        sys.exit(f"logits differ by {rel:.2e} > {rtol:.0e}")
    if mean_rtol is not None and not mean <= mean_rtol:
        sys.exit(f"logits differ by {mean:.2e} > {mean_rtol:.0e} on average")
    if rows:
        if e.size % rows:
            sys.exit(f"{e.size} logits are not {rows} rows")
        row_rel = np.abs(a - e).reshape(rows, -1).max(axis=1) / scale
        close = int((row_rel <= close_rtol).sum())
        print(f"{close} of {rows} rows within {close_rtol:.0e}; "
              f"the others differ by up to {row_rel.max():.2e}")
        if close < min_close:
            sys.exit(f"only {close} rows within {close_rtol:.0e}, expected {min_close}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["translations", "scores", "logits"])
    ap.add_argument("expected")
    ap.add_argument("actual")
    ap.add_argument("--rtol", "--score-rtol", type=float, default=1e-4)
    ap.add_argument("--mean-rtol", type=float)
    ap.add_argument("--max-differing", type=int, default=0)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--min-close", type=int)
    ap.add_argument("--close-rtol", type=float, default=1e-6)
    args = ap.parse_args()
    if args.rows and args.min_close is None:
        ap.error("--rows needs --min-close")
    if args.mode == "translations":
        translations(args.expected, args.actual, args.rtol, args.max_differing)
    elif args.mode == "scores":
        scores(args.expected, args.actual, args.rtol)
    else:
        logits(args.expected, args.actual, args.rtol, args.mean_rtol,
               args.rows, args.min_close, args.close_rtol)


if __name__ == "__main__":
    main()
