"""Prints the bytes a weights file's linears take in panels (the regions
whose names end "panels)") as a fraction of another file's:
  panel_bytes.py FP32_WEIGHTS OTHER_WEIGHTS  ->  "panels: 0.15 of fp32's"

The region table is read by flip_weight_bits.regions."""
import sys

from flip_weight_bits import regions


def panel_bytes(path):
    blob = open(path, "rb").read()
    return sum(size for _, size, name in regions(blob) if name.endswith("panels)"))


if __name__ == "__main__":
    fp32, other = (panel_bytes(p) for p in sys.argv[1:3])
    print(f"panels: {other / fp32:.2f} of fp32's")
