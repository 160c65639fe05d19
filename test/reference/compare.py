#!/usr/bin/env python3
"""Compares a translator's output with the reference's.

  compare.py translations EXPECTED ACTUAL [--score-rtol R]
      Same lines; tokens equal; n-best scores ("I ||| TOKENS ||| SCORE")
      within R relative (default 1e-4).
  compare.py logits EXPECTED ACTUAL [--rtol R] [--mean-rtol M]
      Two little-endian f32 files of the same size; max |a - e| must be
      at most R times max |e| (default 1e-4), and with M the mean |a - e|
      at most M times max |e|. (bf16 logits: one rounding of an activation
      that falls the other way changes the layers after it, so a few
      logits differ by much more than most; the mean tells bf16 apart from
      fp32.)

Prints what it found and exits 1 on a mismatch, naming the line.
"""
import argparse
import sys

import numpy as np


def translations(expected, actual, rtol):
    e = open(expected).read().splitlines()
    a = open(actual).read().splitlines()
    if len(e) != len(a):
        sys.exit(f"line count differs: expected {len(e)}, found {len(a)}")
    worst = 0.0
    for n, (x, y) in enumerate(zip(e, a), 1):
        xs, ys = x.split(" ||| "), y.split(" ||| ")
        if len(xs) != len(ys) or (len(xs) == 1 and x != y) or (len(xs) == 3 and xs[:2] != ys[:2]):
            sys.exit(f"line {n} differs:\n  expected: {x}\n  found:    {y}")
        if len(xs) == 3:
            se, sa = float(xs[2]), float(ys[2])
            rel = abs(se - sa) / max(abs(se), 1e-6)
            worst = max(worst, rel)
            if rel > rtol:
                sys.exit(f"line {n}: score {sa} differs from {se} by {rel:.2e} relative")
    print(f"{len(e)} lines equal; worst score difference {worst:.2e} relative")


def logits(expected, actual, rtol, mean_rtol):
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["translations", "logits"])
    ap.add_argument("expected")
    ap.add_argument("actual")
    ap.add_argument("--rtol", "--score-rtol", type=float, default=1e-4)
    ap.add_argument("--mean-rtol", type=float)
    args = ap.parse_args()
    if args.mode == "translations":
        translations(args.expected, args.actual, args.rtol)
    else:
        logits(args.expected, args.actual, args.rtol, args.mean_rtol)


if __name__ == "__main__":
    main()
