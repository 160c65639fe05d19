#!/usr/bin/env python3
"""Checks that a command's memory does not grow with its input.

  flat_memory.py SMALL LARGE TOLERANCE -- COMMAND...

Runs COMMAND with SMALL, then LARGE, as its stdin (stdout counted, not
kept), twice each, measures each run's peak resident set (the child's
ru_maxrss) and prints the smaller of each pair: a test run beside others
may add a few MiB to one run (allocator arenas, thread stacks), never
take away what the input makes the command hold. Exits 1 if a run fails, prints other than one line per input
line, or if LARGE's peak exceeds SMALL's by more than TOLERANCE (0.1: 10%).
"""
import os
import subprocess
import sys


def peak_rss_kib(command, path):
    """(peak RSS in KiB, output lines) of command reading path."""
    with open(path, "rb") as stdin:
        proc = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE)
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: proc.stdout.read(1 << 16), b""))
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} < {path} failed with status {status}")
    return usage.ru_maxrss, lines


def main():
    small, large, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
    command = sys.argv[sys.argv.index("--") + 1:]
    results = {}
    for path in (small, large):
        (rss, lines), (again, _) = (peak_rss_kib(command, path) for _ in range(2))
        rss = min(rss, again)
        with open(path, "rb") as f:
            expected = f.read().count(b"\n")
        if lines != expected:
            sys.exit(f"{path}: {expected} lines in, {lines} out")
        results[path] = rss
        print(f"{os.path.basename(path)}: {expected} lines, peak RSS {rss / 1024:.1f} MiB")
    growth = results[large] / results[small] - 1
    print(f"growth: {100 * growth:+.1f}% (at most {100 * tolerance:.0f}%)")
    if growth > tolerance:
        sys.exit(1)


if __name__ == "__main__":
    main()
