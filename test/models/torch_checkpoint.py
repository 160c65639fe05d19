#!/usr/bin/env python3
"""Rewrites a test checkpoint's model.safetensors as pytorch_model.bin, the
way Hugging Face's save_pretrained(safe_serialization=False) writes it:
torch.save of the state_dict (an OrderedDict of tensors, each in its stored
dtype), then removes model.safetensors.

  torch_checkpoint.py MODEL_DIR [--views] [--parameters] [--shards N]
                      [--transposed NAME] [--foreign-global]

--views: every tensor a view into one storage (non-zero storage offsets),
  as a model whose parameters share a flat buffer saves them.
--parameters: nn.Parameter objects instead of tensors, as a dict of
  named_parameters() saves them.
--transposed NAME: that 2-D tensor saved as a transposed view of its
  transpose (the same values, not contiguous), which tfmc must refuse.
--shards N: N files pytorch_model-0000k-of-0000N.bin and
  pytorch_model.bin.index.json instead of one file.
--foreign-global: adds an entry that pickles a reference to os.system, the
  kind of pickle tfmc must refuse.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import argparse
import collections
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--views", action="store_true")
    ap.add_argument("--parameters", action="store_true")
    ap.add_argument("--transposed")
    ap.add_argument("--shards", type=int, default=0)
    ap.add_argument("--foreign-global", action="store_true")
    a = ap.parse_args()
    single = os.path.join(a.model, "model.safetensors")
    header, _ = safetensors_io.read_raw(single)
    arrays = safetensors_io.read(single)
    state = collections.OrderedDict()
    for name in sorted(arrays, key=lambda k: header[k]["data_offsets"][0]):
        dtype = TORCH_DTYPES[header[name]["dtype"]]
        state[name] = torch.from_numpy(arrays[name]).to(dtype)
    if a.views:
        dtype = next(iter(state.values())).dtype
        flat = torch.cat([t.flatten().to(dtype) for t in state.values()])
        offset = 0
        for name, t in state.items():
            n = t.numel()
            state[name] = flat[offset:offset + n].view(t.shape)
            offset += n
    if a.parameters:
        for name, t in state.items():
            state[name] = torch.nn.Parameter(t, requires_grad=False)
    if a.transposed:
        state[a.transposed] = state[a.transposed].T.contiguous().T
    if a.foreign_global:
        state["evil"] = os.system
    os.remove(single)
    if not a.shards:
        torch.save(state, os.path.join(a.model, "pytorch_model.bin"))
        return
    names = list(state)
    weight_map = {}
    for k in range(a.shards):
        file = f"pytorch_model-{k + 1:05d}-of-{a.shards:05d}.bin"
        part = collections.OrderedDict((n, state[n]) for n in names[k::a.shards])
        torch.save(part, os.path.join(a.model, file))
        weight_map.update({n: file for n in part})
    with open(os.path.join(a.model, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)


if __name__ == "__main__":
    main()
