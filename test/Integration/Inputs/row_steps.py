"""Checks the translator's --timing count of decoded rows against its
greedy output: a finished sentence leaves the batch, so sentence i costs
min(len_i + 1, limit) rows (its tokens, then EOS; or the length limit)
and the steps' rows sum to exactly that.

usage: row_steps.py OUTPUT.ids TIMING.txt LIMIT"""
import re
import sys

output, timing, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
lengths = [len(line.split()) for line in open(output)]
expected = sum(min(n + 1, limit) for n in lengths)
m = re.search(r"in (\d+) steps of (\d+) rows in all", open(timing).read())
if not m:
    sys.exit(f"{timing}: no 'in N steps of M rows in all'")
steps, rows = int(m.group(1)), int(m.group(2))
if rows != expected:
    sys.exit(f"{rows} rows decoded in {steps} steps; the outputs' lengths "
             f"say {expected} (finished sentences must leave the batch)")
print(f"{len(lengths)} sentences, {steps} steps, {rows} rows decoded")
