#!/usr/bin/env python3
"""Draws the bundled model's loss curve from its training log.

  plot_loss.py [--log examples/train/train.log] [--history examples/train/history.json]
               [--out examples/en-de/loss.png]

The training loss is the NLL per target token of the 50 steps before each
'step N' line of the log (train.py's output, runs appended one after
another; a resumed or --init-from run takes over from its step), without
label smoothing, as the development loss; the development loss is the
history's (step, seconds, NLL). A dotted line marks the step of the
committed model (--model's metadata). Run with /usr/bin/python3 (Debian's
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


def model_step(path):
    """The training step in a safetensors file's metadata (train.py's
    export), or None."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    step = header.get("__metadata__", {}).get("step")
    return int(step) if step is not None else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", default=os.path.join(HERE, "train.log"))
    ap.add_argument("--history", default=os.path.join(HERE, "history.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "en-de", "loss.png"))
    ap.add_argument("--model", default=os.path.join(HERE, "..", "en-de", "model.safetensors"))
    a = ap.parse_args()
    train = read_log(a.log)
    with open(a.history) as f:
        dev = [(step, nll) for step, _, nll in json.load(f)]
    if not train or not dev:
        raise SystemExit(f"{a.log}, {a.history}: no losses")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # The whole run, and its last 6000 steps at a scale where the slope shows.
    fig, (ax, tail) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(3, 2))
    last = train[-1][0] - 6000
    for axis, keep in ((ax, lambda s: True), (tail, lambda s: s >= last)):
        axis.plot(*zip(*[t for t in train if keep(t[0])]),
                  label="training (NLL per target token, 50 steps)", lw=1)
        axis.plot(*zip(*[d for d in dev if keep(d[0])]),
                  label="development (NLL per target token)", lw=2)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    ax.set_ylabel("loss (nats per token)")
    tail.set_title(f"from step {max(last, 0)}")
    best = min(dev, key=lambda d: d[1])
    title = f"best development loss {best[1]:.3f} at step {best[0]}"
    committed = model_step(a.model) if os.path.exists(a.model) else None
    if committed is not None:
        for axis in (ax, tail):
            axis.axvline(committed, color="gray", ls=":", lw=1,
                         label=f"the committed model (step {committed})")
        if committed != best[0]:
            title += f"; committed: step {committed}"
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, dpi=90)
    print(f"{a.out}: {len(train)} training and {len(dev)} development points")


if __name__ == "__main__":
    main()
