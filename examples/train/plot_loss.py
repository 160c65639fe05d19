#!/usr/bin/env python3
"""Draws the bundled model's loss curve from its training log.

  plot_loss.py [--log examples/train/train.log] [--history examples/train/history.json]
               [--out examples/en-de/loss.png]

The training loss is the NLL per target token of the 50 steps before each
'step N' line of the log (train.py's output, runs appended one after
another; a resumed or --init-from run takes over from its step), without
label smoothing, as the development loss; the development loss is the
history's (step, seconds, NLL). Run with /usr/bin/python3 (Debian's
python3-matplotlib).
"""
import argparse
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def read_log(path):
    """[(step, training nll)], a run that takes over at step N replacing
    what earlier ones logged after N."""
    train = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.search(r" step (\d+) epoch \d+ .* nll ([0-9.]+) ", line)
            if m:
                train[int(m.group(1))] = float(m.group(2))
            m = re.search(r"(?:resumed at|initialized from \S+ at) step (\d+)", line)
            if m:
                start = int(m.group(1))
                train = {s: v for s, v in train.items() if s <= start}
    return sorted(train.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", default=os.path.join(HERE, "train.log"))
    ap.add_argument("--history", default=os.path.join(HERE, "history.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "en-de", "loss.png"))
    a = ap.parse_args()
    train = read_log(a.log)
    with open(a.history) as f:
        dev = [(step, nll) for step, _, nll in json.load(f)]
    if not train or not dev:
        raise SystemExit(f"{a.log}, {a.history}: no losses")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*zip(*train), label="training (NLL per target token, 50 steps)", lw=1)
    ax.plot(*zip(*dev), label="development (NLL per target token)", lw=2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    best = min(dev, key=lambda d: d[1])
    ax.set_title(f"examples/en-de: best development loss {best[1]:.3f} at step {best[0]}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, dpi=90)
    print(f"{a.out}: {len(train)} training and {len(dev)} development points")


if __name__ == "__main__":
    main()
