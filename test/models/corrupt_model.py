#!/usr/bin/env python3
"""Damages a test checkpoint in one precise way, for the bad-input tests.

  corrupt_model.py MODEL_DIR MODE [ARG]

Modes on model.safetensors:
  header-too-long        header length prefix larger than the file
  header-not-json        header bytes replaced by non-JSON text
  offsets-outside NAME   NAME's data_offsets moved past the end of the file
  overlap NAME           NAME's data_offsets moved onto the tensor before it
  dtype NAME DTYPE       NAME's dtype changed (byte size kept where possible)
  drop NAME              NAME removed from the header
  rename NAME NEW        NAME called NEW (its data kept)
  reshape NAME DIMS      NAME's shape changed to DIMS (e.g. 32x64), bytes kept
  value NAME I X         NAME's element I set to X (e.g. nan, inf; F32)
  zero-row NAME I        NAME's row I (of a matrix) set to zeros (F32)
  truncate               the file cut in half
Modes on config.json:
  config-set KEY JSON    KEY set to the JSON value
  config-drop KEY        KEY removed
  config-garbage         config.json replaced by invalid JSON
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def main():
    model, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    weights = os.path.join(model, "model.safetensors")
    config = os.path.join(model, "config.json")

    if mode.startswith("config-"):
        if mode == "config-garbage":
            with open(config, "w") as f:
                f.write('{"d_model": 64,, }')
            return
        with open(config) as f:
            cfg = json.load(f)
        if mode == "config-set":
            cfg[args[0]] = json.loads(args[1])
        elif mode == "config-drop":
            del cfg[args[0]]
        else:
            sys.exit(f"unknown mode {mode}")
        with open(config, "w") as f:
            json.dump(cfg, f, indent=2)
        return

    with open(weights, "rb") as f:
        blob = f.read()
    if mode == "header-too-long":
        with open(weights, "wb") as f:
            f.write(struct.pack("<Q", len(blob) + 100) + blob[8:])
        return
    if mode == "header-not-json":
        (n,) = struct.unpack("<Q", blob[:8])
        garbage = (b"this is not json " * (n // 17 + 1))[:n]
        with open(weights, "wb") as f:
            f.write(blob[:8] + garbage + blob[8 + n:])
        return
    if mode == "truncate":
        with open(weights, "wb") as f:
            f.write(blob[:len(blob) // 2])
        return

    header, data = safetensors_io.read_raw(weights)
    name = args[0]
    entry = header[name]
    begin, end = entry["data_offsets"]
    if mode == "offsets-outside":
        entry["data_offsets"] = [len(data) + 64, len(data) + 64 + (end - begin)]
    elif mode == "overlap":
        before = max((e["data_offsets"] for k, e in header.items()
                      if k != "__metadata__" and e["data_offsets"][0] < begin),
                     key=lambda o: o[0])
        start = before[0] + 4
        entry["data_offsets"] = [start, start + (end - begin)]
    elif mode == "dtype":
        entry["dtype"] = args[1]
    elif mode == "drop":
        del header[name]
    elif mode == "rename":
        header[args[1]] = header.pop(name)
    elif mode == "reshape":
        entry["shape"] = [int(d) for d in args[1].split("x")]
    elif mode == "value":
        if entry["dtype"] != "F32":
            sys.exit(f"value: {name} is {entry['dtype']}, not F32")
        at = begin + 4 * int(args[1])
        data = data[:at] + struct.pack("<f", float(args[2])) + data[at + 4:]
    elif mode == "zero-row":
        if entry["dtype"] != "F32" or len(entry["shape"]) != 2:
            sys.exit(f"zero-row: {name} is not an F32 matrix")
        width = 4 * entry["shape"][1]
        at = begin + width * int(args[1])
        data = data[:at] + bytes(width) + data[at + width:]
    else:
        sys.exit(f"unknown mode {mode}")
    safetensors_io.write_raw(weights, header, data)


if __name__ == "__main__":
    main()
