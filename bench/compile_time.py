"""Compile time and the compiler's peak memory: each family at a size, and
one family at growing depth, for one or more tfmc binaries side by side
(before / after a change).

  compile_time.py --out DIR [--tfmc LABEL=PATH ...] [--size base]
                  [--families marian,bart,mbart,m2m_100,t5]
                  [--depth-family m2m_100 --depth-size small
                   --layers 6,12,24,48] [--precision int8]
                  [--timeout SECONDS] [--skip LABEL:MODEL ...]

Models (cached in DIR/models, seeded random weights, one source sentence):
  marian      bench/make_model.py --size SIZE
  bart, mbart, m2m_100, t5
              test/models/make_family_model.py FAMILY --size SIZE (t5 with
              --feed-forward-proj gated-gelu --untied, as families.py)
  depth       make_family_model.py DEPTH_FAMILY --size DEPTH_SIZE --layers L
              (L encoder and L decoder layers of one width)
Each compile is `tfmc compile MODEL -o OUT --precision P`, run alone, timed
by /usr/bin/time (wall seconds, peak RSS); a compile past --timeout is
stopped and reported as such. Writes DIR/results.md (the table
docs/Benchmarks.md shows) and DIR/results.json.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = "/usr/bin/python3"
FAMILY_MAKER = os.path.join(ROOT, "test", "models", "make_family_model.py")
FAMILY_OPTIONS = {"t5": ["--feed-forward-proj", "gated-gelu", "--untied"]}


def maker_command(family, size, layers, out):
    if family == "marian":
        command = [PYTHON, os.path.join(HERE, "make_model.py"), out,
                   "--size", size, "--sentences", "1"]
    else:
        command = [PYTHON, FAMILY_MAKER, family, out, "--size", size,
                   "--sentences", "1"] + FAMILY_OPTIONS.get(family, [])
    if layers:
        command += ["--layers", str(layers)]
    return command


def make_model(path, command):
    """Makes the model unless an earlier run did (its config.json)."""
    if not os.path.exists(os.path.join(path, "config.json")):
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return path


def timed_compile(tfmc, model, out, precision, timeout):
    """(seconds, peak RSS in MB, note) of one compile."""
    command = ["/usr/bin/time", "-f", "%e %M", tfmc, "compile", model,
               "-o", out, "--precision", precision]
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"stopped after {timeout} s"
    if done.returncode != 0:
        return None, None, "failed: " + done.stderr.strip().splitlines()[-2][:200]
    seconds, kilobytes = done.stderr.strip().splitlines()[-1].split()
    assert abs(float(seconds) - (time.monotonic() - start)) < 5
    return float(seconds), int(kilobytes) / 1024, ""


def checkpoint_mb(model):
    total = 0
    for name in os.listdir(model):
        if name.endswith((".safetensors", ".bin", ".npz")):
            total += os.path.getsize(os.path.join(model, name))
    return total / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tfmc", action="append", default=[],
                    help="LABEL=PATH of a tfmc to time (default: this "
                         "build's, labelled 'tfmc')")
    ap.add_argument("--size", default="base")
    ap.add_argument("--families", default="marian,bart,mbart,m2m_100,t5")
    ap.add_argument("--depth-family", default="m2m_100")
    ap.add_argument("--depth-size", default="small")
    ap.add_argument("--layers", default="6,12,24,48")
    ap.add_argument("--precision", default="int8")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--skip", action="append", default=[],
                    help="LABEL:MODEL not to compile (too slow to wait for)")
    args = ap.parse_args()

    compilers = [t.split("=", 1) for t in args.tfmc] or [
        ["tfmc", os.path.join(ROOT, "build", "bin", "tfmc")]]
    models_dir = os.path.join(args.out, "models")
    os.makedirs(models_dir, exist_ok=True)
    models = []
    for family in filter(None, args.families.split(",")):
        name = f"{family}-{args.size}"
        path = os.path.join(models_dir, name)
        models.append((name, path, maker_command(family, args.size, 0, path)))
    for layers in filter(None, args.layers.split(",")):
        name = f"{args.depth_family}-{args.depth_size}-{layers}+{layers}"
        path = os.path.join(models_dir, name)
        models.append((name, path, maker_command(
            args.depth_family, args.depth_size, int(layers), path)))

    rows = []
    for name, path, command in models:
        make_model(path, command)
        row = {"model": name, "checkpoint_mb": round(checkpoint_mb(path), 1),
               "compiles": {}}
        for label, tfmc in compilers:
            if f"{label}:{name}" in args.skip:
                row["compiles"][label] = {"note": "skipped"}
                continue
            out = os.path.join(args.out, "out", f"{label}-{name}")
            seconds, rss, note = timed_compile(tfmc, path, out, args.precision,
                                               args.timeout)
            row["compiles"][label] = {"seconds": seconds, "peak_rss_mb": rss,
                                      "note": note}
            print(f"compile_time: {label} {name}: {seconds} s, {rss} MB {note}",
                  flush=True)
        rows.append(row)

    labels = [label for label, _ in compilers]
    lines = [f"Compile time ({args.precision}, `tfmc compile`, wall s / peak "
             "RSS MB)", "",
             "| model | checkpoint (MB) | " +
             " | ".join(f"{label} s | {label} MB" for label in labels) + " |",
             "|---|---|" + "---|---|" * len(labels)]
    for row in rows:
        cells = []
        for label in labels:
            c = row["compiles"][label]
            if c.get("seconds") is None:
                cells += [c.get("note", ""), ""]
            else:
                cells += [f"{c['seconds']:.1f}", f"{c['peak_rss_mb']:.0f}"]
        lines.append(f"| {row['model']} | {row['checkpoint_mb']:.0f} | " +
                     " | ".join(cells) + " |")
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"precision": args.precision, "compilers": dict(compilers),
                   "rows": rows}, f, indent=1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
