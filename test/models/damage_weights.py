#!/usr/bin/env python3
"""Damages a tfmc weights file where every decoder step reads it.

  damage_weights.py WEIGHTS OUT

Writes WEIGHTS to OUT with the first linear's panels (the first region that
the region table names "... (in panels)") filled with 0xFF bytes: NaNs,
which any translation must meet. The layout (tfm/abi/ModelInfo.h): a
4096-byte header whose fields at byte 24 are the data's and the table's
sizes, the data, then per region u64 offset, size, checksum and name
length, and the name padded to a multiple of 8.
"""
import struct
import sys

HEADER = 4096


def regions(b):
    data, table = struct.unpack_from("<QQ", b, 24)
    at, end = HEADER + data, HEADER + data + table
    while at < end:
        offset, size, _, length = struct.unpack_from("<QQQQ", b, at)
        yield offset, size, bytes(b[at + 32:at + 32 + length]).decode()
        at += 32 + (length + 7) // 8 * 8


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    b = bytearray(open(sys.argv[1], "rb").read())
    panels = [(o, s) for o, s, name in regions(b) if name.endswith("(in panels)")]
    if not panels:
        sys.exit(f"{sys.argv[1]}: no region holds panels")
    offset, size = panels[0]
    b[HEADER + offset:HEADER + offset + size] = b"\xff" * size
    open(sys.argv[2], "wb").write(b)


if __name__ == "__main__":
    main()
