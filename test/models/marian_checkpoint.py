#!/usr/bin/env python3
"""Writes a test checkpoint in Marian's native release format, and makes
the Hugging Face checkpoint the same model as Hugging Face's converter
would make it from that release.

  marian_checkpoint.py HF_DIR MARIAN_DIR [--yml-beside] [--name NAME]

HF_DIR: a model with shared, tied embeddings, computed positions and the
padding token last (make_test_model.py --positions sinusoidal), post-norm
or pre-norm (--pre-norm). MARIAN_DIR gets NAME (default model.npz): numpy's
savez of Marian's tensors (Wemb without the padding row,
decoder_ff_logit_out_b, encoder_lN_* and decoder_lN_* with matrices
[in, out] and vectors [1, n]; a pre-norm model's layer norms as
*_ln_scale_pre etc. and its final norms as encoder_top_ln_* and
decoder_top_ln_*) and the YAML config as the int8 entry special:model.yml
(or, with --yml-beside, decoder.yml beside it); with a tokenizer,
source.spm, target.spm and a vocab.yml. HF_DIR is rewritten as Hugging
Face's converter's output of that release (of a post-norm one; the
converter refuses pre-norm models): a zero embedding row and logits bias
for the padding token, positions up to d_model, forced EOS 0, the padding
token a bad word. Its positions stay Hugging Face's, which are not those
the release computes in Marian (or in tfmc and the reference).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

LAYER_NAMES = {
    "self_W{}": "self_attn.{}_proj", "context_W{}": "encoder_attn.{}_proj",
}
LN_NAMES = {"self_Wo_ln": "self_attn_layer_norm", "context_Wo_ln": "encoder_attn_layer_norm",
            "ffn_ffn_ln": "final_layer_norm"}


def marian_layer(t, side, i, has_context, pre_norm):
    """Marian's tensors of one layer from the MarianMT ones."""
    p = f"model.{side}.layers.{i}."
    out = {}
    for kind in ("self", "context") if has_context else ("self",):
        hf = "self_attn" if kind == "self" else "encoder_attn"
        for proj in "qkvo":
            name = f"{hf}.{'out' if proj == 'o' else proj}_proj"
            out[f"{kind}_W{proj}"] = t[p + name + ".weight"].T
            out[f"{kind}_b{proj}"] = t[p + name + ".bias"][None, :]
    for n in (1, 2):
        out[f"ffn_W{n}"] = t[p + f"fc{n}.weight"].T
        out[f"ffn_b{n}"] = t[p + f"fc{n}.bias"][None, :]
    for marian, hf in LN_NAMES.items():
        if marian.startswith("context") and not has_context:
            continue
        suffix = "_pre" if pre_norm else ""
        out[marian + "_scale" + suffix] = t[p + hf + ".weight"][None, :]
        out[marian + "_bias" + suffix] = t[p + hf + ".bias"][None, :]
    return {f"{side}_l{i + 1}_{k}": np.ascontiguousarray(v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hf")
    ap.add_argument("marian")
    ap.add_argument("--yml-beside", action="store_true")
    ap.add_argument("--name", default="model.npz")
    a = ap.parse_args()
    config_path = os.path.join(a.hf, "config.json")
    c = json.load(open(config_path))
    weights_path = os.path.join(a.hf, "model.safetensors")
    t = safetensors_io.read(weights_path)
    assert c["pad_token_id"] == c["vocab_size"] - 1, "the padding token must be last"
    assert "model.encoder.embed_positions.weight" not in t, "positions must be computed"
    vocab = c["vocab_size"] - 1
    arrays = {"Wemb": t["model.shared.weight"][:vocab],
              "decoder_ff_logit_out_b": t["final_logits_bias"][:, :vocab]}
    pre_norm = c.get("normalize_before", False)
    for i in range(c["encoder_layers"]):
        arrays.update(marian_layer(t, "encoder", i, False, pre_norm))
    for i in range(c["decoder_layers"]):
        arrays.update(marian_layer(t, "decoder", i, True, pre_norm))
    if pre_norm:
        for side in ("encoder", "decoder"):
            arrays[f"{side}_top_ln_scale"] = t[f"model.{side}.layer_norm.weight"][None, :]
            arrays[f"{side}_top_ln_bias"] = t[f"model.{side}.layer_norm.bias"][None, :]
    activation = {"relu": "relu", "swish": "swish", "silu": "swish", "gelu": "gelu"}
    yml = "\n".join([
        "type: transformer",
        f"dim-emb: {c['d_model']}",
        f"enc-depth: {c['encoder_layers']}",
        f"dec-depth: {c['decoder_layers']}",
        f"transformer-heads: {c['encoder_attention_heads']}",
        f"transformer-dim-ffn: {c['encoder_ffn_dim']}",
        f"transformer-ffn-activation: {activation[c['activation_function']]}",
        "transformer-preprocess: n" if pre_norm else 'transformer-preprocess: ""',
        "transformer-postprocess: da" if pre_norm else "transformer-postprocess: dan",
        "transformer-postprocess-top: n" if pre_norm else 'transformer-postprocess-top: ""',
        "transformer-postprocess-emb: d",
        "transformer-train-position-embeddings: false",
        "tied-embeddings-all: true",
        "dim-vocabs:",
        f"  - {vocab}",
        f"  - {vocab}",
        "beam-size: 4",
        "",
    ])
    os.makedirs(a.marian, exist_ok=True)
    if a.yml_beside:
        open(os.path.join(a.marian, "decoder.yml"), "w").write(yml)
    else:
        arrays["special:model.yml"] = np.frombuffer(yml.encode() + b"\0", dtype=np.int8)
    np.savez(os.path.join(a.marian, a.name), **arrays)
    # The tokenizer as Marian ships it: the .spm files and a vocab.yml of
    # piece: id without <pad> (JSON strings are YAML double-quoted scalars).
    vocab_json = os.path.join(a.hf, "vocab.json")
    if os.path.exists(vocab_json):
        pieces = json.load(open(vocab_json))
        with open(os.path.join(a.marian, "opus.spm-spm.vocab.yml"), "w") as f:
            for piece, i in sorted(pieces.items(), key=lambda p: p[1]):
                if piece != "<pad>":
                    f.write(f"{json.dumps(piece, ensure_ascii=False)}: {i}\n")
        for spm in ("source.spm", "target.spm"):
            shutil.copy(os.path.join(a.hf, spm), a.marian)

    # The converter's output of that release.
    t["model.shared.weight"][vocab] = 0
    t["final_logits_bias"][:, vocab] = 0
    safetensors_io.write(weights_path, t)
    c.update(max_position_embeddings=c["d_model"], forced_eos_token_id=0,
             bad_words_ids=[[vocab]])
    json.dump(c, open(config_path, "w"), indent=2)


if __name__ == "__main__":
    main()
