"""Writes copies of a tfm weights file with one bit flipped in its tensor
data: PREFIX.first.tfmw (the first byte of the first tensor),
PREFIX.middle.tfmw (the middle byte of the tensor in the middle of the
table) and PREFIX.last.tfmw (the last byte of the last tensor).

The layout (tfm/abi/ModelInfo.h): a 4096-byte header whose fourth
little-endian u64 is the data's size and fifth the table's, the data, then
the table: per tensor u64 offset, size, checksum, name length, the name
padded to 8 bytes."""
import struct
import sys

HEADER = 4096


def regions(blob):
    """The tensor regions of the weights file `blob`: (offset, size, name)
    in data order."""
    data_size, table_size = struct.unpack_from("<QQ", blob, 24)
    at, end = HEADER + data_size, HEADER + data_size + table_size
    found = []
    while at < end:
        offset, size, _, name_length = struct.unpack_from("<QQQQ", blob, at)
        name = blob[at + 32:at + 32 + name_length].decode()
        at += 32 + (name_length + 7) // 8 * 8
        found.append((offset, size, name))
    return sorted(found)


def main():
    path, prefix = sys.argv[1], sys.argv[2]
    blob = open(path, "rb").read()
    tensors = regions(blob)
    first, middle, last = tensors[0], tensors[len(tensors) // 2], tensors[-1]
    for name, at in (("first", first[0]),
                     ("middle", middle[0] + middle[1] // 2),
                     ("last", last[0] + last[1] - 1)):
        copy = bytearray(blob)
        copy[HEADER + at] ^= 0x04
        with open(f"{prefix}.{name}.tfmw", "wb") as f:
            f.write(copy)


if __name__ == "__main__":
    main()
