#!/usr/bin/env python3
"""Splits a checkpoint's model.safetensors into shards, as Hugging Face's
save_pretrained(max_shard_size=...) writes them.

  shard_checkpoint.py MODEL_DIR N

Writes model-0000k-of-0000N.safetensors (the tensors in file order, cut
into N runs of about equal bytes, each in its stored dtype) and
model.safetensors.index.json ({"metadata": {"total_size": bytes},
"weight_map": {tensor: shard}}), then removes model.safetensors.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def main():
    model_dir, n = sys.argv[1], int(sys.argv[2])
    single = os.path.join(model_dir, "model.safetensors")
    header, data = safetensors_io.read_raw(single)
    header.pop("__metadata__", None)
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    total = len(data)
    shards = [[] for _ in range(n)]
    for name in names:
        begin = header[name]["data_offsets"][0]
        shards[min(n - 1, begin * n // max(total, 1))].append(name)
    weight_map = {}
    for k, shard in enumerate(shards, 1):
        file = f"model-{k:05d}-of-{n:05d}.safetensors"
        part, blobs, offset = {}, [], 0
        for name in shard:
            begin, end = header[name]["data_offsets"]
            part[name] = dict(header[name], data_offsets=[offset, offset + end - begin])
            blobs.append(data[begin:end])
            offset += end - begin
            weight_map[name] = file
        part["__metadata__"] = {"format": "pt"}
        safetensors_io.write_raw(os.path.join(model_dir, file), part, b"".join(blobs))
    with open(os.path.join(model_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    os.remove(single)


if __name__ == "__main__":
    main()
