#!/usr/bin/env python3
"""Checks that a command streams: it answers the first lines of its input
before the input ends.

  stream_check.py INPUT N TIMEOUT -- COMMAND...

Writes the first N lines of INPUT to COMMAND's stdin and keeps it open;
waits up to TIMEOUT seconds for a first line of output; then writes the rest
and closes stdin. Prints how many lines came out early and in all, and exits
1 if none came early or COMMAND failed.
"""
import os
import select
import subprocess
import sys
import time


def main():
    path, n, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    command = sys.argv[sys.argv.index("--") + 1:]
    lines = open(path, "rb").read().splitlines(keepends=True)
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write(b"".join(lines[:n]))
    proc.stdin.flush()
    early = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in early and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            early += chunk
    early_lines = early.count(b"\n")
    proc.stdin.write(b"".join(lines[n:]))
    proc.stdin.close()
    rest = proc.stdout.read()
    status = proc.wait()
    all_lines = (early + rest).count(b"\n")
    print(f"before the end of input: {early_lines} lines; "
          f"in all: {all_lines} lines; status {status}")
    sys.exit(0 if early_lines > 0 and status == 0 else 1)


if __name__ == "__main__":
    main()
