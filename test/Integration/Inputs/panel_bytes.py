"""Prints the bytes a weights file's linears take in panels (the regions
whose names end "panels)") as a fraction of another file's:
  panel_bytes.py FP32_WEIGHTS OTHER_WEIGHTS  ->  "panels: 0.15 of fp32's"

The layout (tfm/abi/ModelInfo.h): a 4096-byte header whose fourth
little-endian u64 is the data's size and fifth the table's, the data, then
the table: per tensor u64 offset, size, checksum, name length, the name
padded to 8 bytes."""
import struct
import sys

HEADER = 4096


def panel_bytes(path):
    blob = open(path, "rb").read()
    data_size, table_size = struct.unpack_from("<QQ", blob, 24)
    at, end = HEADER + data_size, HEADER + data_size + table_size
    total = 0
    while at < end:
        _, size, _, name_length = struct.unpack_from("<QQQQ", blob, at)
        name = blob[at + 32:at + 32 + name_length].decode()
        at += 32 + (name_length + 7) // 8 * 8
        if name.endswith("panels)"):
            total += size
    return total


if __name__ == "__main__":
    fp32, other = (panel_bytes(p) for p in sys.argv[1:3])
    print(f"panels: {other / fp32:.2f} of fp32's")
