#!/usr/bin/env python3
"""Compares a translator's output with the reference's.

  compare.py translations EXPECTED ACTUAL [--score-rtol R] [--max-differing D]
      Same lines; tokens equal; n-best scores ("I ||| TOKENS ||| SCORE")
      within R relative (default 1e-4). With D, up to D sentences (of any
      number of n-best lines each) may differ; they are named.
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


def translations(expected, actual, rtol, max_differing=0):
    e = open(expected).read().splitlines()
    a = open(actual).read().splitlines()
    if len(e) != len(a):
        sys.exit(f"line count differs: expected {len(e)}, found {len(a)}")
    worst = 0.0
    differing = []  # sentences: the line's index, or an n-best line's "I"
    for n, (x, y) in enumerate(zip(e, a), 1):
        xs, ys = x.split(" ||| "), y.split(" ||| ")
        sentence = xs[0] if len(xs) == 3 else str(n)
        if sentence in differing:
            continue
        if len(xs) != len(ys) or (len(xs) == 1 and x != y) or (len(xs) == 3 and xs[:2] != ys[:2]):
            if len(differing) >= max_differing:
                sys.exit(f"line {n} differs:\n  expected: {x}\n  found:    {y}")
            differing.append(sentence)
            continue
        if len(xs) == 3:
            se, sa = float(xs[2]), float(ys[2])
            rel = abs(se - sa) / max(abs(se), 1e-6)
            worst = max(worst, rel)
            if rel > rtol:
                sys.exit(f"line {n}: score {sa} differs from {se} by {rel:.2e} relative")
    if differing:
        print(f"sentence(s) {', '.join(differing)} differ (at most {max_differing} may)")
    rest = "; the other lines equal" if differing else " equal"
    print(f"{len(e)} lines{rest}; worst score difference {worst:.2e} relative")


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
    ap.add_argument("mode", choices=["translations", "logits"])
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
    else:
        logits(args.expected, args.actual, args.rtol, args.mean_rtol,
               args.rows, args.min_close, args.close_rtol)


if __name__ == "__main__":
    main()
