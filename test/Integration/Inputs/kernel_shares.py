"""Checks a profiled translator's --timing: the kernels of each phase sum to
at most the phase's seconds and to more than a tenth of them."""
import re
import sys

text = open(sys.argv[1]).read()
totals = dict(re.findall(r"(encode|decode) ([0-9.]+) s", text.split("\n")[1]))
for phase in ("decode", "encode"):
    kernels = sum(float(s) for s in re.findall(
        r"translator: %s kernel \S+: \d+ calls, ([0-9.]+) s" % phase, text))
    total = float(totals[phase])
    if not 0.1 * total < kernels <= total:
        sys.exit("%s: kernels %.4f s against the phase's %.4f s" % (phase, kernels, total))
    print("%s: kernels within the phase's time" % phase)
