"""Prints a compiled vmap (tfm/abi/Vmap.h's compact form) as text."""
import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"TFMVMAP1", data[:8]
vocab, always_count, rule_count = struct.unpack_from("<III", data, 8)
print("vocabulary", vocab)
at = 20
always = struct.unpack_from("<%di" % always_count, data, at)
at += 4 * always_count
print("always", *always)
for _ in range(rule_count):
    n, k = struct.unpack_from("<II", data, at)
    ids = struct.unpack_from("<%di" % (n + k), data, at + 8)
    at += 8 + 4 * (n + k)
    print("rule", *ids[:n], "->", *ids[n:])
h = 0xCBF29CE484222325
for byte in data[:at]:
    h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
ok = at + 8 == len(data) and struct.unpack_from("<Q", data, at)[0] == h
print("checksum", "ok" if ok else "bad")
