"""Reading and writing the safetensors format with numpy alone.

Layout: 8-byte little-endian header length N, N bytes of JSON
{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
then the data section that the offsets index.
"""
import json
import os
import struct

import numpy as np

# numpy has no bfloat16: BF16 tensors are stored as the top 16 bits of F32.
DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def to_bf16_bits(a):
    """Round-to-nearest-even float32 -> bfloat16 bit patterns."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def encode(array, dtype):
    """Bytes of a float32 array stored as dtype (F32, F16 or BF16)."""
    if dtype == "BF16":
        return to_bf16_bits(array).tobytes()
    return np.ascontiguousarray(array, dtype=DTYPES[dtype]).tobytes()


def write(path, tensors, dtype="F32", metadata=None):
    """tensors: {name: float32 array}; every tensor is stored as dtype."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        blob = encode(array, dtype)
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = metadata or {"format": "pt"}
    write_raw(path, header, b"".join(blobs))


def write_raw(path, header, data):
    """Writes a header dict (taken as is) and a data section."""
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)


def read_raw(path):
    """(header dict, data bytes) of a well-formed file."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def read(path):
    """{name: float32 array} of a well-formed file."""
    header, data = read_raw(path)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":
            raw = from_bf16_bits(raw)
        out[name] = raw.astype(np.float32).reshape(info["shape"])
    return out


def read_checkpoint(model_dir):
    """{name: float32 array} of a checkpoint directory: model.safetensors,
    or the shards that model.safetensors.index.json maps the tensors to."""
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(single):
        return read(single)
    with open(os.path.join(model_dir, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    out = {}
    for shard in sorted(set(weight_map.values())):
        tensors = read(os.path.join(model_dir, shard))
        out.update({k: v for k, v in tensors.items() if weight_map.get(k) == shard})
    return out
