"""Checks that --continuous kept its batch full: a sentence decodes
min(len + 1, limit) rows (its tokens and EOS, or the length limit), and
while sentences wait to join, every step runs --batch-size sentences'
rows; only the last ones' tail runs fewer. So with B rows a step, the
steps are at most ceil(rows / B) plus the longest sentence's rows. Batches
that run to their end before the next begins take more.

usage: continuous_steps.py OUTPUT.ids TIMING.txt LIMIT BATCH"""
import math
import re
import sys

output, timing, limit, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
costs = [min(len(line.split()) + 1, limit) for line in open(output)]
m = re.search(r"in (\d+) steps of (\d+) rows in all", open(timing).read())
if not m:
    sys.exit(f"{timing}: no 'in N steps of M rows in all'")
steps, rows = int(m.group(1)), int(m.group(2))
if rows != sum(costs):
    sys.exit(f"{rows} rows decoded; the outputs' lengths say {sum(costs)}")
bound = math.ceil(rows / batch) + max(costs)
if steps > bound:
    sys.exit(f"{steps} steps for {rows} rows at {batch} a step: more than "
             f"{bound}, so sentences did not join the running batch")
print(f"{len(costs)} sentences, {rows} rows in {steps} steps "
      f"(at most {bound})")
