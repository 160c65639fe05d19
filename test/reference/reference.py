#!/usr/bin/env python3
"""The reference implementation: what a tfmc translator must output.

  reference.py MODEL_DIR [INPUT] [--beam-size K] [--n-best N] [--max-length N]
               [--max-length-ratio R] [--min-length N] [--length-penalty A]
               [--suppress-eos] [--batch-size N] [--threads N] [--timing]
               [--dump-first-logits FILE]
               [--input-format text|ids] [--output-format text|ids]
               [--encode-only] [--precision fp32|bf16|int8|int4]
               [--int4-group N] [--[no-]int4-zero-point] [--int4-scales rtn|mse]
               [--int4-output int4|int8|fp32] [--int8-inputs zero-point|symmetric]
               [--int8-output int8|fp32] [--int8-rounding even|away]
               [--target-prefix TOKENS | --target-prefix-file FILE]

The model of a Hugging Face checkpoint of the family config.json's
`model_type` names (marian, the default; bart; mbart; m2m_100, which NLLB
shares; t5 and mt5, which MADLAD-400 shares), written directly in PyTorch
from "Attention is all you need" and the families' published definitions
(families.py), independently of the compiler, with greedy and beam search defined exactly as the runtime's (see
runtime/src/Translator.cpp). Reads token-id lines like the translator and
writes the same output format, in padded batches; with a SentencePiece
tokenizer in MODEL_DIR it reads and writes text (text_io.py). Run it with
/usr/bin/python3 (Debian's python3-torch, python3-numpy and python3-yaml).

Generation follows config.json and generation_config.json (which
overrides it) as Hugging Face's generate does: decoder start, EOS,
padding, the forced first token (forced_bos_token_id), the forced EOS at
the length limit and the bad words. A target prefix (--target-prefix for
every line, or a line of --target-prefix-file per input line; ids with
ids output, else vocabulary pieces) replaces the forced first token; see
translate() for what forcing means.

A MODEL_DIR without Hugging Face's weight files but with one Marian .npz
release is that model as Marian computes it (load_marian): its own
sinusoids and layer-norm epsilon, post-norm or pre-norm.
"""
import argparse
import ctypes
import json
import math
import os
import re
import sys
import time

import numpy as np
import torch

import families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import safetensors_io  # noqa: E402
import text_io  # noqa: E402

torch.set_grad_enabled(False)


def load_weights(model_dir):
    """{name: float32 tensor} of a checkpoint directory, in Hugging Face's
    order of preference: safetensors (one file or shards), then torch.save's
    pytorch_model.bin (one file or shards)."""
    if any(os.path.exists(os.path.join(model_dir, f))
           for f in ("model.safetensors", "model.safetensors.index.json")):
        return {k: torch.from_numpy(v) for k, v in safetensors_io.read_checkpoint(model_dir).items()}
    files = ["pytorch_model.bin"]
    index = os.path.join(model_dir, "pytorch_model.bin.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    weights = {}
    for name in files:
        state = torch.load(os.path.join(model_dir, name), map_location="cpu")
        weights.update({k: v.detach().float() for k, v in state.items()})
    return weights


HF_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json",
                   "pytorch_model.bin", "pytorch_model.bin.index.json")


def marian_npz(model_dir):
    """The Marian .npz release in model_dir, or None: only without Hugging
    Face's weight files, and only one."""
    names = os.listdir(model_dir)
    if any(f in names for f in HF_WEIGHT_FILES):
        return None
    npz = sorted(f for f in names if f.endswith(".npz"))
    if len(npz) > 1:
        sys.exit(f"{model_dir}: more than one .npz")
    return os.path.join(model_dir, npz[0]) if npz else None


def load_marian(path):
    """(config, weights) of a Marian release, in the MarianMT names and
    layout that Model reads, from Marian's own definitions (src/models/
    transformer.h): the YAML config in the entry special:model.yml, else
    NAME.npz.yml or decoder.yml beside it; matrices x . W stored [in, out];
    the decoder starts from a zero embedding, here a padding token after the
    vocabulary (also banned from the output); </s> is 0. Layer norms after
    each sub-layer (`<prefix>_ln_scale`, transformer-postprocess dan), or
    before it (`<prefix>_ln_scale_pre`, transformer-preprocess n) and after
    each stack (`encoder_top_ln_scale`, transformer-postprocess-top n), all
    with epsilon 1e-6; sinusoids of frequencies 10000^(-i/(d/2 - 1))."""
    import yaml
    arrays = dict(np.load(path))
    if "special:model.yml" in arrays:
        text = arrays.pop("special:model.yml").tobytes().split(b"\0")[0].decode()
    else:
        beside = [path + ".yml", os.path.join(os.path.dirname(path), "decoder.yml")]
        text = open(next(p for p in beside if os.path.exists(p))).read()
    y = yaml.safe_load(text)
    # Marian's defaults; dropout ('d') does nothing in translation.
    ops = {k: (y.get(k, default) or "").replace("d", "") for k, default in (
        ("transformer-preprocess", ""), ("transformer-postprocess", "dan"),
        ("transformer-postprocess-top", ""))}
    pre_norm = ops["transformer-preprocess"] == "n"
    assert (ops["transformer-postprocess"], ops["transformer-postprocess-top"]) == \
        (("a", "n") if pre_norm else ("an", "")), ops
    shared = "Wemb" in arrays
    vocab = arrays["Wemb" if shared else "decoder_Wemb"].shape[0]
    c = {"d_model": y["dim-emb"], "encoder_layers": y["enc-depth"],
         "decoder_layers": y["dec-depth"],
         "encoder_attention_heads": y["transformer-heads"],
         "decoder_attention_heads": y["transformer-heads"],
         "activation_function": y.get("transformer-ffn-activation", "swish"),
         "normalize_before": pre_norm, "scale_embedding": True,
         "share_encoder_decoder_embeddings": shared,
         "vocab_size": vocab + 1, "pad_token_id": vocab,
         "decoder_start_token_id": vocab, "eos_token_id": 0,
         "forced_eos_token_id": 0, "bad_words_ids": [[vocab]],
         # tfmc's limit, as Hugging Face's converter sets it.
         "max_position_embeddings": y["dim-emb"],
         "position_encoding": "sinusoidal_concat_half_minus_one",
         "layer_norm_eps": 1e-6}
    hf_layer = {"self": "self_attn", "context": "encoder_attn"}
    hf_norm = {"self": "self_attn_layer_norm", "context": "encoder_attn_layer_norm",
               "ffn": "final_layer_norm"}
    norm_prefix = {"self": "Wo", "context": "Wo", "ffn": "ffn"}
    suffix = "_pre" if pre_norm else ""
    w = {}
    for name, a in arrays.items():
        a = torch.from_numpy(a.astype(np.float32))
        top = re.fullmatch(r"(encoder|decoder)_top_ln_(scale|bias)", name)
        layer = re.fullmatch(r"(encoder|decoder)_l(\d+)_(self|context|ffn)_(.+)", name)
        if name in ("Wemb", "encoder_Wemb", "decoder_Wemb"):
            hf = "model.shared" if name == "Wemb" else f"model.{name[:7]}.embed_tokens"
            w[hf + ".weight"] = torch.cat([a, torch.zeros(1, a.shape[1])])
        elif name == "decoder_ff_logit_out_b":
            w["final_logits_bias"] = torch.cat([a, torch.zeros(1, 1)], dim=1)
        elif top and pre_norm:
            side, kind = top.groups()
            w[f"model.{side}.layer_norm." + ("weight" if kind == "scale" else "bias")] = a[0]
        elif layer:
            side, n, sub, rest = layer.groups()
            p = f"model.{side}.layers.{int(n) - 1}."
            norm = re.fullmatch(norm_prefix[sub] + "_ln_(scale|bias)" + suffix, rest)
            linear = re.fullmatch(r"([Wb])([12])" if sub == "ffn" else r"([Wb])([qkvo])", rest)
            if norm:
                w[p + hf_norm[sub] + (".weight" if norm.group(1) == "scale" else ".bias")] = a[0]
                continue
            if not linear:
                sys.exit(f"{path}: unknown tensor {name}")
            kind, which = linear.groups()
            if sub == "ffn":
                p += "fc" + which
            else:
                p += hf_layer[sub] + "." + ("out" if which == "o" else which) + "_proj"
            if kind == "W":  # x . W, [in, out] -> [out, in]
                w[p + ".weight"] = a.T.contiguous()
            else:
                w[p + ".bias"] = a[0]
        else:
            sys.exit(f"{path}: unknown tensor {name}")
    return c, w


def to_bf16(t):
    """t rounded to the nearest bfloat16 (ties to even), as float32."""
    return t.to(torch.bfloat16).to(torch.float32)


def round_half_away(t):
    """t rounded to the nearest integer, ties away from zero (C's round());
    torch.round, which the compiler's arithmetic uses, ties to even."""
    return torch.sign(t) * torch.floor(t.abs() + 0.5)


def quantize_rows(t, rounding=torch.round):
    """(q, scale): each row of t as integers in [-127, 127] and its scale,
    q = round(t * (127 / max|row|)) ties to even, scale = max|row| / 127
    (float32 arithmetic); an all-zero row has scale 1 and stays zero.
    (`rounding`: another tie rule, for reference.py --int8-rounding.)"""
    amax = t.abs().amax(dim=-1, keepdim=True)
    amax = torch.where(amax > 0, amax, torch.full_like(amax, 127.0))
    return rounding(t * (127.0 / amax)), amax / 127.0


INT4_GROUP = 64  # k per int4 scale (tfm/abi/Panels.h, kInt4Group)


# --int4-scales mse: the clip ratios tried per group, 1 (round to nearest
# over the whole range) first so that it wins ties.
INT4_CLIP_RATIOS = [1.0 - 0.5 * i / 19 for i in range(20)]


def int4_levels(g, ratio=1.0, zero_point=False):
    """(q, scale) of weight groups g [..., group] over their range shrunk by
    `ratio` (1: the whole range), rounding ties to even, g ~ q * scale:
    symmetric:  a = ratio * max|g|, scale = a / 7,
                q = clamp(round(g * (7 / a)), -7, 7)            (15 levels)
    zero point: lo = ratio * min(g, 0), hi = ratio * max(g, 0),
                r = hi - lo, inverse = (1 / r) * 15, zq = round(-lo * inverse),
                q = clamp(round(g * inverse) + zq, 0, 15) - zq   (16 levels)
                scale = bf16(r / 15)
    With a zero point the stored nibble is q + zq in [0, 15] (AWQ's and
    GPTQ's asymmetric groups; the range extended to 0 keeps 0, and so the
    padding, exact), and the scale a bfloat16 (rounded to nearest even),
    so that it and zq share a 32-bit word (tfm/abi/Panels.h: what tfmc
    compiles). An all-zero group has scale 1 and stays zero."""
    if zero_point:
        lo = torch.clamp(g.amin(dim=-1, keepdim=True), max=0.0) * ratio
        hi = torch.clamp(g.amax(dim=-1, keepdim=True), min=0.0) * ratio
        r = hi - lo
        r = torch.where(r > 0, r, torch.full_like(r, 15.0))
        inverse = torch.reciprocal(r) * 15.0
        zq = torch.round(-lo * inverse)
        scale = (r / 15.0).bfloat16().float()
        return torch.clamp(torch.round(g * inverse) + zq, 0.0, 15.0) - zq, scale
    amax = g.abs().amax(dim=-1, keepdim=True) * ratio
    amax = torch.where(amax > 0, amax, torch.full_like(amax, 7.0))
    return torch.clamp(torch.round(g * (7.0 / amax)), -7.0, 7.0), amax / 7.0


def quantize_groups(t, group=INT4_GROUP, zero_point=True, clip_search=False):
    """(q, scale, correction) of a weight t [N, K] in int4: each row's k
    in groups of `group` (the last one short if K is not a multiple), each
    group as integers with a scale (int4_levels; float32 arithmetic):
    with `zero_point` (what tfmc compiles) in [-15, 15] less the group's
    zero point, else symmetric in [-7, 7]. correction[n] =
    sum_g scale[n, g] * sum_k q[n, g, k], summed over g in order in float32:
    the kernel subtracts z * correction for the inputs' zero point.

    Variants: `clip_search`,
    per group the ratio of INT4_CLIP_RATIOS whose levels have the least
    squared error sum_k (q * scale - t)^2 (round to nearest with clipping,
    as GPTQ's and AWQ's searches, on the weights alone)."""
    n, k = t.shape
    groups = (k + group - 1) // group
    padded = torch.zeros(n, groups * group, dtype=t.dtype)
    padded[:, :k] = t
    g = padded.reshape(n, groups, group)
    q, scale = int4_levels(g, 1.0, zero_point)
    if clip_search:
        best = ((q * scale - g) ** 2).sum(dim=-1, keepdim=True)
        for ratio in INT4_CLIP_RATIOS[1:]:
            q_r, scale_r = int4_levels(g, ratio, zero_point)
            error = ((q_r * scale_r - g) ** 2).sum(dim=-1, keepdim=True)
            better = error < best
            q, scale = torch.where(better, q_r, q), torch.where(better, scale_r, scale)
            best = torch.minimum(error, best)
    scale = scale.squeeze(-1)
    sums = q.sum(dim=-1)
    correction = torch.zeros(n, dtype=torch.float32)
    for j in range(groups):
        correction = correction + scale[:, j] * sums[:, j]
    return q.reshape(n, groups * group)[:, :k], scale, correction


def quantize_activations(t, rounding=torch.round):
    """(u, z, scale): each row of t as unsigned integers u in [0, 255] with
    a zero point z, row ~ (u - z) * scale, over the row's range extended to
    0: lo = min(row, 0), hi = max(row, 0), r = hi - lo (255 for an all-zero
    row), inverse = (1 / r) * 255, scale = r / 255, z = round(-lo * inverse),
    u = clamp(round(row * inverse) + z, 0, 255), rounding ties to even in
    float32 arithmetic. All 256 levels cover the row's range (half of them
    would be unused by a symmetric scale on a one-signed row, as after a
    ReLU); u is the unsigned operand of VNNI's u8 x s8 dot product.
    (`rounding`: another tie rule, for reference.py --int8-rounding.)"""
    lo = torch.clamp(t.amin(dim=-1, keepdim=True), max=0.0)
    hi = torch.clamp(t.amax(dim=-1, keepdim=True), min=0.0)
    r = hi - lo
    r = torch.where(r > 0, r, torch.full_like(r, 255.0))
    inverse = torch.reciprocal(r) * 255.0
    z = rounding(-lo * inverse)
    u = torch.clamp(rounding(t * inverse) + z, 0.0, 255.0)
    return u, z, r / 255.0


class Model:
    # Variants of the int4 and int8 arithmetic (reference.py --int4-* and
    # --int8-*, measured by bench/quantization.py); the defaults are what
    # tfmc compiles.
    int4_group = INT4_GROUP      # k per scale
    int4_zero_point = True       # asymmetric groups (int4_levels), else symmetric
    int4_scales = "rtn"          # rtn: over the whole range; mse: clip search
    int4_output = "int4"         # the output projection's precision: int4, int8, fp32
    int8_inputs = "zero-point"   # zero-point (quantize_activations) or symmetric
    int8_output = "int8"         # the output projection's precision: int8, fp32
    int8_rounding = "even"       # ties of the int8 weights and inputs: even or away

    def __init__(self, model_dir, precision="fp32", variants=None):
        for name, value in (variants or {}).items():
            assert hasattr(Model, name), name
            setattr(self, name, value)
        npz = marian_npz(model_dir)
        if npz:
            c, self.w = load_marian(npz)
        else:
            with open(os.path.join(model_dir, "config.json")) as f:
                c = json.load(f)
            self.w = load_weights(model_dir)
        # generation_config.json overrides config.json's generation keys.
        generation = os.path.join(model_dir, "generation_config.json")
        if not npz and os.path.exists(generation):
            with open(generation) as f:
                g = json.load(f)
            for key in ("eos_token_id", "pad_token_id", "decoder_start_token_id",
                        "forced_bos_token_id", "forced_eos_token_id", "bad_words_ids",
                        "repetition_penalty", "no_repeat_ngram_size"):
                if g.get(key) is not None:
                    c[key] = g[key]
        try:
            self.family = families.FAMILIES["marian"] if npz else families.family_of(c)
        except ValueError as e:
            sys.exit(f"{model_dir}: {e}")
        if self.family.name == "t5":
            c = families.t5_config(c)
        self.c = c
        # --precision bf16: every linear (and the output projection) takes
        # weights and inputs rounded to bf16, products summed in f32;
        # embeddings, layer norm, attention and the residual stream stay f32.
        self.bf16 = precision == "bf16"
        self.rounded = {}  # weight name -> it in bf16
        # --precision int8: the weights symmetric per output channel
        # (quantize_rows), each linear's input per row when it is used,
        # unsigned with a zero point (quantize_activations); the integer
        # products summed exactly (as VNNI's int32 sums of u8 x s8, the zero
        # point corrected by the weights' column sums) and scaled back,
        # (sum * s_x) * s_w[n], before the bias. The rest stays f32, as with
        # bf16.
        self.int8 = precision == "int8"
        # --precision int4: the weights in groups along K (quantize_groups),
        # the inputs as int8's; each group's integer sum exact, then scaled
        # and added to the row's float32 sum group by group, in order:
        # acc = acc + sum_g * s_w[n, g]; at the end (acc - z * c[n]) * s_x.
        self.int4 = precision == "int4"
        self.quantized = {}  # weight name -> (integers, scales[, corrections])
        if self.family.name == "t5":
            self.init_t5(model_dir)
            return
        self.d = c["d_model"]
        self.eps = c.get("layer_norm_eps", 1e-5)
        if self.family.pre_norm is None:
            self.pre_norm = c.get("normalize_before", False)
        else:
            self.pre_norm = self.family.pre_norm
        # Pre-norm stacks end with a norm (Marian's pre-norm, mBART, M2M-100).
        self.final_norm = self.pre_norm
        self.embedding_norm = self.family.embedding_norm
        scale = c.get("scale_embedding", self.family.scale_embedding)
        self.embed_scale = math.sqrt(self.d) if scale else 1.0
        if self.family.name == "marian":
            shared = c.get("share_encoder_decoder_embeddings", True)
            self.src_embed = self.w["model.shared.weight" if shared else "model.encoder.embed_tokens.weight"]
            self.tgt_embed = self.w["model.shared.weight" if shared else "model.decoder.embed_tokens.weight"]
        else:
            # One vocabulary: model.shared, of which Hugging Face saves the
            # encoder's and decoder's embed_tokens as tied copies (any may be
            # the one left when the others are dropped as aliases).
            name = next((n for n in ("model.shared.weight", "model.encoder.embed_tokens.weight",
                                     "model.decoder.embed_tokens.weight") if n in self.w), None)
            if name is None:
                sys.exit(f"{model_dir}: no model.shared.weight")
            self.src_embed = self.tgt_embed = self.w[name]
        self.lm_head = self.tgt_embed if c.get("tie_word_embeddings", True) else self.w["lm_head.weight"]
        self.logits_bias = self.w.get("final_logits_bias")
        act = c["activation_function"]
        # Hugging Face's ACT2FN: "gelu" is the exact (erf) GELU.
        self.act = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
                    "swish": torch.nn.functional.silu, "silu": torch.nn.functional.silu}[act]
        self.positions = {}
        for side in ("encoder", "decoder"):
            name = f"model.{side}.embed_positions.weight"
            if self.family.positions == "fairseq":
                # Rows up to the last position, max_position_embeddings + 1.
                self.positions[side] = families.fairseq_sinusoids(
                    c["max_position_embeddings"] + families.LEARNED_OFFSET, self.d,
                    c["pad_token_id"])
            elif self.family.positions == "learned":
                self.positions[side] = self.w[name]
            else:
                self.positions[side] = self.w[name] if name in self.w else self.sinusoids(
                    c["max_position_embeddings"], self.d,
                    c.get("position_encoding", "sinusoidal_concat"))

    @staticmethod
    def sinusoids(n_pos, dim, kind):
        # PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))
        # (the paper: sinusoidal_interleaved); Hugging Face's MarianMT puts all
        # sines first, then all cosines (sinusoidal_concat); Marian's own
        # sinusoids (node_initializers.cpp) are those halves with the
        # frequencies 10000^(-i/(d/2 - 1)) (sinusoidal_concat_half_minus_one).
        assert kind in ("sinusoidal_interleaved", "sinusoidal_concat",
                        "sinusoidal_concat_half_minus_one"), kind
        pos = np.arange(n_pos, dtype=np.float64)[:, None]
        i = np.arange(dim // 2, dtype=np.float64)[None, :]
        if kind == "sinusoidal_concat_half_minus_one":
            angle = pos / np.power(10000.0, i / (dim // 2 - 1))
        else:
            angle = pos / np.power(10000.0, 2 * i / dim)
        out = np.zeros((n_pos, dim), dtype=np.float32)
        if kind == "sinusoidal_interleaved":
            out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
        else:
            out[:, :dim // 2], out[:, dim // 2:] = np.sin(angle), np.cos(angle)
        return torch.from_numpy(out)

    def product(self, x, w, name):
        """x · wᵀ in the model's precision (the output projection's,
        "lm_head", may be another variant's); `name` keys w's bf16 or
        quantized copy."""
        precision = "int4" if self.int4 else "int8" if self.int8 else \
            "bf16" if self.bf16 else "fp32"
        if name == "lm_head":
            precision = {"int4": self.int4_output, "int8": self.int8_output}.get(
                precision, precision)
        if precision == "int4":
            return self.int4_product(x, w, name)
        if precision == "int8":
            return self.int8_product(x, w, name)
        if precision == "fp32":
            return x @ w.T
        if name not in self.rounded:
            self.rounded[name] = to_bf16(w)
        return to_bf16(x) @ self.rounded[name].T

    def int8_product(self, x, w, name):
        rounding = round_half_away if self.int8_rounding == "away" else torch.round
        if name not in self.quantized:
            self.quantized[name] = quantize_rows(w, rounding)
        qw, sw = self.quantized[name]
        if self.int8_inputs == "symmetric":
            # CTranslate2's inputs: q = round(x * (127 / max|row|)) in
            # [-127, 127], scale max|row| / 127; no zero point.
            qx, sx = quantize_rows(x, rounding)
        else:
            u, z, sx = quantize_activations(x, rounding)
            qx = u - z
        # |sum| <= 255 * 127 * K: exact in float64 for any K here.
        sums = (qx.double() @ qw.double().T).float()
        return sums * sx * sw.T

    def int4_product(self, x, w, name):
        group = self.int4_group
        if name not in self.quantized:
            self.quantized[name] = quantize_groups(w, group, self.int4_zero_point,
                                                   self.int4_scales == "mse")
        qw, sw, correction = self.quantized[name]
        u, z, sx = quantize_activations(x)
        shape = u.shape
        u = u.reshape(-1, shape[-1]).double()
        z = z.reshape(-1, 1)
        sx = sx.reshape(-1, 1)
        acc = torch.zeros(u.shape[0], qw.shape[0], dtype=torch.float32)
        for j in range(sw.shape[1]):
            ks = slice(j * group, (j + 1) * group)
            # |sum| <= 255 * 15 * group: exact in float64.
            sums = (u[:, ks] @ qw[:, ks].double().T).float()
            acc = acc + sums * sw[:, j]
        y = (acc - z * correction) * sx
        return y.reshape(*shape[:-1], qw.shape[0])

    def linear(self, x, name):
        return self.product(x, self.w[name + ".weight"], name) + self.w[name + ".bias"]

    def embed(self, side, ids, past):
        """The embedding of ids [B, S] whose first token is at position
        `past` (0 in the encoder, the step in the decoder): [B, S, D]."""
        table = self.src_embed if side == "encoder" else self.tgt_embed
        n = ids.shape[1]
        kind = self.family.positions
        if kind == "fairseq":
            rows = families.fairseq_positions(ids, self.c["pad_token_id"], past)
            positions = self.positions[side][rows]
        else:
            first = past + (families.LEARNED_OFFSET if kind == "learned" else 0)
            positions = self.positions[side][first: first + n]
        x = table[ids] * self.embed_scale + positions
        if self.embedding_norm:
            x = self.layer_norm(x, f"model.{side}.layernorm_embedding")
        return x

    def layer_norm(self, x, name):
        return torch.nn.functional.layer_norm(
            x, (self.d,), self.w[name + ".weight"], self.w[name + ".bias"], eps=self.eps)

    def heads(self, x, n):
        b, s, _ = x.shape
        return x.view(b, s, n, self.d // n).transpose(1, 2)

    def attention(self, q, k, v, n, key_mask=None, causal=False):
        """softmax(Q Kᵀ / sqrt(d_k) + M) V over heads; q, k, v: [B, H, S, Dh]."""
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d // n)
        if key_mask is not None:  # [B, Sk], True where hidden
            scores = scores.masked_fill(key_mask[:, None, None, :], float("-inf"))
        if causal:
            sq, sk = scores.shape[-2:]
            hidden = torch.ones(sq, sk, dtype=torch.bool).triu(1 + sk - sq)
            scores = scores.masked_fill(hidden, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        b, _, s, _ = out.shape
        return out.transpose(1, 2).reshape(b, s, self.d)

    def sublayer(self, x, norm, fn):
        """Post-norm: LN(x + f(x)); pre-norm: x + f(LN(x))."""
        if self.pre_norm:
            return x + fn(self.layer_norm(x, norm))
        return self.layer_norm(x + fn(x), norm)

    def ffn(self, x, p):
        return self.linear(self.act(self.linear(x, p + ".fc1")), p + ".fc2")

    def encode(self, ids, key_mask):
        """ids: [B, S], key_mask: [B, S] True at padding -> encoder output
        [B, S, D] and per decoder layer the cross-attention keys and values."""
        if self.family.name == "t5":
            return self.encode_t5(ids, key_mask)
        c, n = self.c, self.c["encoder_attention_heads"]
        x = self.embed("encoder", ids, 0)
        for i in range(c["encoder_layers"]):
            p = f"model.encoder.layers.{i}"

            def self_attn(h):
                a = self.attention(self.heads(self.linear(h, p + ".self_attn.q_proj"), n),
                                   self.heads(self.linear(h, p + ".self_attn.k_proj"), n),
                                   self.heads(self.linear(h, p + ".self_attn.v_proj"), n), n,
                                   key_mask=key_mask)
                return self.linear(a, p + ".self_attn.out_proj")
            x = self.sublayer(x, p + ".self_attn_layer_norm", self_attn)
            x = self.sublayer(x, p + ".final_layer_norm", lambda h: self.ffn(h, p))
        if self.final_norm:
            x = self.layer_norm(x, "model.encoder.layer_norm")
        nd = c["decoder_attention_heads"]
        cross = []
        for i in range(c["decoder_layers"]):
            p = f"model.decoder.layers.{i}.encoder_attn"
            cross.append((self.heads(self.linear(x, p + ".k_proj"), nd),
                          self.heads(self.linear(x, p + ".v_proj"), nd)))
        return x, cross

    def decode_step(self, tokens, step, cross, cache, key_mask):
        """tokens: [R, 1] at position `step`; cache: per layer [K, V] of the
        previous steps ([R, H, step, Dh]), extended in place; key_mask: [R, S]
        True at source padding. -> logits [R, V]."""
        if self.family.name == "t5":
            return self.decode_step_t5(tokens, step, cross, cache, key_mask)
        c, n = self.c, self.c["decoder_attention_heads"]
        x = self.embed("decoder", tokens, step)
        for i in range(c["decoder_layers"]):
            p = f"model.decoder.layers.{i}"

            def self_attn(h):
                k = self.heads(self.linear(h, p + ".self_attn.k_proj"), n)
                v = self.heads(self.linear(h, p + ".self_attn.v_proj"), n)
                cache[i][0] = k if cache[i][0] is None else torch.cat([cache[i][0], k], 2)
                cache[i][1] = v if cache[i][1] is None else torch.cat([cache[i][1], v], 2)
                a = self.attention(self.heads(self.linear(h, p + ".self_attn.q_proj"), n),
                                   cache[i][0], cache[i][1], n, causal=True)
                return self.linear(a, p + ".self_attn.out_proj")

            def cross_attn(h):
                a = self.attention(self.heads(self.linear(h, p + ".encoder_attn.q_proj"), n),
                                   cross[i][0], cross[i][1], n, key_mask=key_mask)
                return self.linear(a, p + ".encoder_attn.out_proj")
            x = self.sublayer(x, p + ".self_attn_layer_norm", self_attn)
            x = self.sublayer(x, p + ".encoder_attn_layer_norm", cross_attn)
            x = self.sublayer(x, p + ".final_layer_norm", lambda h: self.ffn(h, p))
        if self.final_norm:
            x = self.layer_norm(x, "model.decoder.layer_norm")
        logits = self.product(x[:, -1], self.lm_head, "lm_head")
        if self.logits_bias is not None:
            logits = logits + self.logits_bias[0]
        return logits

    # T5 / mT5 / MADLAD-400 (model_type t5, mt5), from modeling_t5.py's
    # definitions: T5ForConditionalGeneration over T5Stack, T5Block,
    # T5LayerSelfAttention, T5LayerCrossAttention, T5LayerFF, T5Attention,
    # T5LayerNorm. The tensors are named as it saves them (shared.weight,
    # encoder.block.I.layer.J...., lm_head.weight when untied).

    def init_t5(self, model_dir):
        c = self.c
        self.d = c["d_model"]
        self.eps = c["layer_norm_epsilon"]
        self.heads_t5 = c["num_heads"]
        self.d_kv = c["d_kv"]
        try:
            self.gated, self.act = families.t5_feed_forward(c["feed_forward_proj"])
        except ValueError as e:
            sys.exit(f"{model_dir}: {e}")
        # One vocabulary: shared, of which the encoder's and decoder's
        # embed_tokens are tied copies that save_pretrained may keep or drop
        # (any one of the three may be the one left).
        name = next((n for n in ("shared.weight", "encoder.embed_tokens.weight",
                                 "decoder.embed_tokens.weight") if n in self.w), None)
        if name is None:
            sys.exit(f"{model_dir}: no shared.weight")
        self.src_embed = self.tgt_embed = self.w[name]
        # Tied (T5, T5 v1.0): the output is the embedding, its input
        # rescaled by d_model^-0.5 (Mesh TensorFlow's); untied (T5 v1.1,
        # mT5, MADLAD): lm_head.weight, no rescale.
        self.tied = bool(c["tie_word_embeddings"])
        if not self.tied and "lm_head.weight" not in self.w:
            sys.exit(f"{model_dir}: tie_word_embeddings is false but there is no lm_head.weight")
        self.lm_head = self.tgt_embed if self.tied else self.w["lm_head.weight"]
        self.logits_bias = None
        # The relative position tables: only the first block's self-attention
        # has one ([buckets, heads]); every block of its stack uses it.
        table = "block.0.layer.0.SelfAttention.relative_attention_bias.weight"
        self.bias_tables = {side: self.w[f"{side}.{table}"] for side in ("encoder", "decoder")}

    def rms_norm(self, x, name):
        """T5LayerNorm: x / sqrt(mean(x^2) + eps) * weight; no mean taken
        away, no bias; the statistics in float32."""
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.w[name + ".weight"] * (x * torch.rsqrt(variance + self.eps))

    def linear_t5(self, x, name):
        return self.product(x, self.w[name + ".weight"], name)

    def heads_of(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads_t5, self.d_kv).transpose(1, 2)

    def position_bias(self, side, queries, keys, first_query):
        """[1, H, queries, keys]: table[bucket(key - query), h] for queries
        at positions first_query.. and keys at 0..; bidirectional buckets in
        the encoder, causal in the decoder."""
        c = self.c
        q = torch.arange(first_query, first_query + queries, dtype=torch.long)[:, None]
        k = torch.arange(keys, dtype=torch.long)[None, :]
        buckets = families.t5_bucket(k - q, side == "encoder", c["relative_attention_num_buckets"],
                                     c["relative_attention_max_distance"])
        return self.bias_tables[side][buckets].permute(2, 0, 1)[None]

    def attention_t5(self, q, k, v, bias):
        """softmax(Q Kᵀ + bias) V over heads, not scaled; bias holds the
        position bias and the masks (-inf where hidden)."""
        scores = q @ k.transpose(-1, -2) + bias
        out = torch.softmax(scores, dim=-1) @ v
        b, _, s, _ = out.shape
        return out.transpose(1, 2).reshape(b, s, self.heads_t5 * self.d_kv)

    def ffn_t5(self, x, p):
        if self.gated:
            h = self.act(self.linear_t5(x, p + ".wi_0")) * self.linear_t5(x, p + ".wi_1")
        else:
            h = self.act(self.linear_t5(x, p + ".wi"))
        return self.linear_t5(h, p + ".wo")

    def encode_t5(self, ids, key_mask):
        c = self.c
        b, s = ids.shape
        x = self.src_embed[ids]
        hidden = torch.zeros(b, 1, 1, s).masked_fill(key_mask[:, None, None, :], float("-inf"))
        bias = self.position_bias("encoder", s, s, 0) + hidden
        for i in range(c["encoder_layers"]):
            p = f"encoder.block.{i}.layer"
            h = self.rms_norm(x, p + ".0.layer_norm")
            a = self.attention_t5(self.heads_of(self.linear_t5(h, p + ".0.SelfAttention.q")),
                                  self.heads_of(self.linear_t5(h, p + ".0.SelfAttention.k")),
                                  self.heads_of(self.linear_t5(h, p + ".0.SelfAttention.v")), bias)
            x = x + self.linear_t5(a, p + ".0.SelfAttention.o")
            x = x + self.ffn_t5(self.rms_norm(x, p + ".1.layer_norm"), p + ".1.DenseReluDense")
        x = self.rms_norm(x, "encoder.final_layer_norm")
        cross = []
        for i in range(c["decoder_layers"]):
            p = f"decoder.block.{i}.layer.1.EncDecAttention"
            cross.append((self.heads_of(self.linear_t5(x, p + ".k")),
                          self.heads_of(self.linear_t5(x, p + ".v"))))
        return x, cross

    def decode_step_t5(self, tokens, step, cross, cache, key_mask):
        c = self.c
        x = self.tgt_embed[tokens]
        # The one query at position `step` sees the keys 0..step: no causal
        # mask is needed beyond the cache's length.
        self_bias = self.position_bias("decoder", 1, step + 1, step)
        cross_bias = torch.zeros(key_mask.shape[0], 1, 1, key_mask.shape[1]).masked_fill(
            key_mask[:, None, None, :], float("-inf"))
        for i in range(c["decoder_layers"]):
            p = f"decoder.block.{i}.layer"
            h = self.rms_norm(x, p + ".0.layer_norm")
            k = self.heads_of(self.linear_t5(h, p + ".0.SelfAttention.k"))
            v = self.heads_of(self.linear_t5(h, p + ".0.SelfAttention.v"))
            cache[i][0] = k if cache[i][0] is None else torch.cat([cache[i][0], k], 2)
            cache[i][1] = v if cache[i][1] is None else torch.cat([cache[i][1], v], 2)
            a = self.attention_t5(self.heads_of(self.linear_t5(h, p + ".0.SelfAttention.q")),
                                  cache[i][0], cache[i][1], self_bias)
            x = x + self.linear_t5(a, p + ".0.SelfAttention.o")
            h = self.rms_norm(x, p + ".1.layer_norm")
            a = self.attention_t5(self.heads_of(self.linear_t5(h, p + ".1.EncDecAttention.q")),
                                  cross[i][0], cross[i][1], cross_bias)
            x = x + self.linear_t5(a, p + ".1.EncDecAttention.o")
            x = x + self.ffn_t5(self.rms_norm(x, p + ".2.layer_norm"), p + ".2.DenseReluDense")
        x = self.rms_norm(x, "decoder.final_layer_norm")[:, -1]
        if self.tied:
            x = x * (self.d ** -0.5)
        return self.product(x, self.lm_head, "lm_head")


def penalize(x, inputs, penalty):
    """Hugging Face's RepetitionPenaltyLogitsProcessor on the rows of x:
    each token of the row's input multiplied by `penalty` where negative,
    divided where positive."""
    penalty = np.float32(penalty)
    for r, row_input in enumerate(inputs):
        for t in sorted(set(row_input)):
            v = x[r, t].item()
            x[r, t] = float(np.float32(v) * penalty if v < 0 else np.float32(v) / penalty)


def repeated_ngram_bans(row_input, n):
    """Hugging Face's NoRepeatNGramLogitsProcessor: the tokens that would
    complete an n-gram already in the row's input (none for n = 0 or while
    the input is shorter than n - 1)."""
    if n <= 0 or len(row_input) + 1 < n:
        return []
    ngrams = {}
    for i in range(len(row_input) - n + 1):
        ngrams.setdefault(tuple(row_input[i:i + n - 1]), []).append(row_input[i + n - 1])
    return ngrams.get(tuple(row_input[len(row_input) - n + 1:]), [])


MASK64 = (1 << 64) - 1


def splitmix64_mix(z):
    """SplitMix64's finalizer (Steele, Lea and Flood, 2014)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class SplitMix64:
    """Sampling's generator: the state grows by the golden-ratio increment
    and each draw is the state through the finalizer; uniform() is the top
    53 bits / 2^53. stream(seed, index, sample) seeds one sentence's sample
    from the seed, its index in the input and the sample's number."""

    def __init__(self, state):
        self.state = state & MASK64

    @staticmethod
    def stream(seed, index, sample):
        m = splitmix64_mix
        return SplitMix64(m((m((m(seed) + index) & MASK64) + sample) & MASK64))

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        return splitmix64_mix(self.state)

    def uniform(self):
        return (self.next() >> 11) / float(1 << 53)


def sampling_distribution(logits, banned, topk, topp, temperature):
    """The tokens sampling may draw from a row (float32 logits, banned a
    boolean mask) and their probabilities, in vocabulary order: the logits
    divided by the temperature, the topk largest (0: all; ties to the lower
    id), then the fewest most probable whose softmax reaches topp (at least
    one), renormalized."""
    x = logits.astype(np.float64) / np.float64(np.float32(temperature))
    ids = np.nonzero(~banned)[0]
    ranked = ids[np.lexsort((ids, -x[ids]))]  # by x descending, then id
    if topk > 0:
        ranked = ranked[:topk]
    e = np.exp(x[ranked] - x[ranked].max())
    p = e / e.sum()
    if topp < 1:
        n, total = 0, 0.0
        while n < len(p) and total < np.float64(np.float32(topp)):
            total += p[n]
            n += 1
        n = max(n, 1)
        ranked, p = ranked[:n], p[:n] / total
    order = np.argsort(ranked, kind="stable")
    return ranked[order], p[order]


def draw(tokens, probs, u):
    """The first token whose cumulative probability exceeds u."""
    cum = 0.0
    for t, q in zip(tokens, probs):
        cum += q
        if cum > u:
            return int(t)
    return int(tokens[-1])


def top_candidates(cand, count):
    """Indices of the `count` best entries of `cand`, higher score first and
    ties to the lower index; -inf entries never."""
    live = cand != float("-inf")
    if int(live.sum()) == 0:
        return []
    # Everything at or above the count-th best value, then an exact order.
    threshold = torch.topk(cand[live], min(count, int(live.sum()))).values[-1]
    chosen = torch.nonzero(live & (cand >= threshold)).flatten()
    order = chosen[torch.sort(-cand[chosen], stable=True).indices]
    return order[:count].tolist()


def forced_prefixes(model, user_prefixes):
    """Each sentence's forced start of the output: its user prefix if it has
    one, else the checkpoint's forced_bos_token_id (Hugging Face's
    ForcedBOSTokenLogitsProcessor) if set (>= 0), else nothing."""
    bos = model.c.get("forced_bos_token_id")
    default = [bos] if bos is not None and bos >= 0 else []
    return [list(p) if p else list(default) for p in user_prefixes]


def check_prefix(model, tokens, where):
    """Exits naming `where` (a sentence or option) and the token unless
    `tokens` can be forced: ids of the target vocabulary, no EOS or padding,
    shorter than the positions (one is left for a generated token)."""
    c = model.c
    vocab = model.lm_head.shape[0]
    for t in tokens:
        if not 0 <= t < vocab:
            sys.exit(f"{where}: token {t} is outside the target vocabulary of {vocab} tokens")
        if t == c["eos_token_id"]:
            sys.exit(f"{where}: token {t} is the end of sentence (eos_token_id), "
                     "which a target prefix cannot hold")
        if t == c["pad_token_id"]:
            sys.exit(f"{where}: token {t} is the padding (pad_token_id), "
                     "which a target prefix cannot hold")
    if len(tokens) >= c["max_position_embeddings"]:
        sys.exit(f"{where}: the target prefix of {len(tokens)} tokens leaves no position "
                 f"of the model's {c['max_position_embeddings']} to generate in")


def read_vmap(path, vocab):
    """A vocabulary map (docs/Shortlist.md) in ids: the always-included
    tokens and {source n-gram: target tokens}. Lines 'SOURCE<TAB>TARGETS',
    pieces split on spaces; an empty source lists the always-included; a
    target piece the vocabulary lacks is skipped, and so is a rule whose
    source n-gram has one; a repeated n-gram replaces the earlier line."""
    always, rules = set(), {}
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            line = line[:-1] if line.endswith("\r") else line
            if not line:
                continue
            source, targets = line.split("\t")
            key = [vocab.get(p) for p in source.split(" ") if p]
            ids = {vocab[p] for p in targets.split(" ") if p in vocab}
            if None in key:
                continue
            if key:
                rules[tuple(key)] = ids
            else:
                always = ids
    return always, rules


def shortlist(model, vmap, sources, prefixes):
    """The target tokens a batch may produce: those of every n-gram (n up
    to the longest rule's) at every position of its sources, the
    always-included ones, EOS, padding, the decoder's start, the forced
    first and last tokens and the forced prefixes' tokens."""
    always, rules = vmap
    c = model.c
    allowed = set(always) | {c["eos_token_id"], c["pad_token_id"],
                             c["decoder_start_token_id"]}
    for key in ("forced_bos_token_id", "forced_eos_token_id"):
        if c.get(key) is not None:
            allowed.add(c[key])
    for prefix in prefixes:
        allowed |= set(prefix)
    longest = max((len(k) for k in rules), default=0)
    for src in sources:
        for i in range(len(src)):
            for n in range(1, min(longest, len(src) - i) + 1):
                allowed |= rules.get(tuple(src[i:i + n]), set())
    return sorted(allowed)


def translate(model, sources, opts, user_prefixes=None, indexes=None):
    """Beam search (greedy for beam 1) over a padded batch of sentences, as
    runtime/src/Translator.cpp defines it. Returns per sentence the hypotheses
    sorted best first, (tokens, normalized score, each token's log p then
    EOS's if it ended with one), and the first step's logits.

    user_prefixes: per sentence the tokens its output must start with (or
    an empty list). A sentence's forced prefix is that, or the checkpoint's
    forced first token (forced_prefixes); while a hypothesis is shorter
    than it, its one extension is the next prefix token with log p = 0
    (every other token -inf, whatever the bans, the minimum length and the
    bad words), so a beam search stays with one live beam through the
    prefix. The forced tokens are part of the hypothesis: printed, counted
    in the length penalty's length and the context of the bad words. The
    sentence's length limit is at least the prefix's length + 1, within
    the positions."""
    c = model.c
    eos, pad, start = c["eos_token_id"], c["pad_token_id"], c["decoder_start_token_id"]
    # Hugging Face's generation semantics of the checkpoint: the forced EOS
    # at the length limit, and the bad words (EOS alone is never one).
    forced_eos = c.get("forced_eos_token_id")
    bad_words = [w for w in (c.get("bad_words_ids") or []) if w != [eos]]
    vocab = model.lm_head.shape[0]
    sampling = getattr(opts, "sampling", False)
    # Sampling: a row per sample, each its own hypothesis and stream.
    k, B = (opts.n_best if sampling else opts.beam_size), len(sources)
    R = B * k
    penalty = np.float32(opts.length_penalty)
    forced = forced_prefixes(model, user_prefixes or [[] for _ in sources])
    max_len = []
    for src, f in zip(sources, forced):
        limit = opts.max_length
        if opts.max_length_ratio > 0 and not opts.suppress_eos:
            limit = min(limit, int(np.float32(opts.max_length_ratio) * len(src)) + 5)
        limit = max(1, min(limit, c["max_position_embeddings"]))
        max_len.append(min(max(limit, len(f) + 1), c["max_position_embeddings"]))

    S = max(len(src) for src in sources)
    ids = torch.full((B, S), pad, dtype=torch.long)
    for b, src in enumerate(sources):
        ids[b, : len(src)] = torch.tensor(src)
    lengths = torch.tensor([len(src) for src in sources])
    key_mask = torch.arange(S)[None, :] >= lengths[:, None]
    _, cross = model.encode(ids, key_mask)
    cross = [(kk.repeat_interleave(k, 0), vv.repeat_interleave(k, 0)) for kk, vv in cross]
    row_mask = key_mask.repeat_interleave(k, 0)
    cache = [[None, None] for _ in range(c["decoder_layers"])]

    prefixes = [[] for _ in range(R)]
    token_lps = [[] for _ in range(R)]  # each token's log p, row by row
    scores = torch.full((R,), float("-inf"))
    scores[::k] = 0.0  # only the first beam of each sentence is live at the start
    if sampling:
        scores[:] = 0.0
        indexes = indexes if indexes is not None else list(range(B))
        streams = [SplitMix64.stream(opts.seed, indexes[r // k], r % k) for r in range(R)]
    finished = [[] for _ in range(B)]
    done = [False] * B
    tokens = torch.full((R, 1), start, dtype=torch.long)
    first_logits = None
    # A shortlist: every other token's logit is -inf, so that the
    # log-softmax and the search run over the batch's shortlist.
    outside = None
    if getattr(opts, "vmap_rules", None) is not None:
        outside = torch.ones(vocab, dtype=torch.bool)
        outside[shortlist(model, opts.vmap_rules, sources, forced)] = False
    for step in range(max(max_len)):
        logits = model.decode_step(tokens, step, cross, cache, row_mask)
        if outside is not None:
            logits[:, outside] = float("-inf")
        if step == 0:
            first_logits = logits[::k].clone()
        # Hugging Face's repetition penalty over each row's input (start
        # token, then its tokens): on the logits in greedy search, on the
        # log-probabilities of the tokens that can be chosen in beam search.
        if opts.repetition_penalty != 1 and (k == 1 or sampling):
            penalize(logits, [[start] + p for p in prefixes], opts.repetition_penalty)
        logp = torch.log_softmax(logits, dim=-1)
        model_logp = logp.clone()  # sampling's scores: unfiltered, untempered
        # Padding, EOS before the minimum length, a bad word's last token
        # when its other tokens end the input, repeated n-grams.
        banned = torch.zeros_like(logp, dtype=torch.bool)
        banned[:, pad] = True
        if opts.suppress_eos or step + 1 <= opts.min_length:
            banned[:, eos] = True
        for r in range(R):
            row_input = [start] + prefixes[r]
            for word in bad_words:
                if len(word) - 1 <= len(row_input) and \
                        row_input[len(row_input) - len(word) + 1:] == word[:-1]:
                    banned[r, word[-1]] = True
            for t in repeated_ngram_bans(row_input, opts.no_repeat_ngram_size):
                banned[r, t] = True
        if opts.repetition_penalty != 1 and k > 1:
            penalize(logp, [[start] + p for p in prefixes], opts.repetition_penalty)
        logp[banned] = float("-inf")
        for r in range(R):
            if forced_eos is not None and not opts.suppress_eos and step + 1 >= max_len[r // k]:
                logp[r] = float("-inf")  # only the forced EOS, with log p = 0
                logp[r, forced_eos] = 0.0
            f = forced[r // k]
            if len(prefixes[r]) < len(f):  # the next prefix token, with log p = 0
                logp[r] = float("-inf")
                logp[r, f[len(prefixes[r])]] = 0.0
        parents = list(range(R))
        next_prefixes, next_scores = list(prefixes), scores.clone()
        next_lps = list(token_lps)
        for b in range(B):
            if done[b]:
                continue
            if sampling:
                live = False
                for r in range(b * k, (b + 1) * k):
                    if scores[r] == float("-inf"):
                        continue
                    f = forced[b]
                    forced_tok = f[len(prefixes[r])] if len(prefixes[r]) < len(f) else \
                        forced_eos if forced_eos is not None and not opts.suppress_eos \
                        and step + 1 >= max_len[b] else None
                    if forced_tok is not None:  # a forced token takes no draw
                        tok, lp = forced_tok, 0.0
                    else:
                        toks, probs = sampling_distribution(
                            logits[r].numpy(), banned[r].numpy(), opts.sampling_topk,
                            opts.sampling_topp, opts.sampling_temperature)
                        tok = draw(toks, probs, streams[r].uniform())
                        lp = model_logp[r, tok].item()
                    score = (scores[r] + np.float32(lp)).item()
                    lps = token_lps[r] + [lp]
                    if tok == eos:
                        length = np.float32(len(prefixes[r]) + 1)
                        finished[b].append((prefixes[r], np.float32(score) / np.float32(length ** penalty), lps))
                        next_scores[r] = float("-inf")
                        continue
                    live = True
                    next_prefixes[r], next_scores[r], next_lps[r] = prefixes[r] + [tok], score, lps
                if not live:
                    done[b] = True
                elif step + 1 >= max_len[b]:
                    for r in range(b * k, (b + 1) * k):
                        if next_scores[r] != float("-inf"):
                            length = np.float32(len(next_prefixes[r]))
                            finished[b].append((next_prefixes[r],
                                                np.float32(next_scores[r].item()) / np.float32(length ** penalty),
                                                next_lps[r]))
                    done[b] = True
                continue
            rows = slice(b * k, (b + 1) * k)
            cand = (scores[rows, None] + logp[rows]).flatten()
            nxt = 0
            for rank, flat in enumerate(top_candidates(cand, 2 * k)):
                if nxt == k:
                    break
                j, tok = divmod(flat, vocab)
                score, parent = cand[flat].item(), b * k + j
                lp = logp[parent, tok].item()
                if tok == eos:
                    if rank < k:  # an EOS ranked beyond the beam width does not count
                        length = np.float32(len(prefixes[parent]) + 1)
                        finished[b].append((prefixes[parent],
                                            np.float32(score) / np.float32(length ** penalty),
                                            token_lps[parent] + [lp]))
                    continue
                r = b * k + nxt
                nxt += 1
                parents[r] = parent
                next_prefixes[r] = prefixes[parent] + [tok]
                next_scores[r] = score
                next_lps[r] = token_lps[parent] + [lp]
            for r in range(b * k + nxt, (b + 1) * k):
                next_scores[r] = float("-inf")
            if len(finished[b]) >= k:
                done[b] = True
            elif step + 1 >= max_len[b]:  # out of length: the live beams end here
                for r in range(b * k, (b + 1) * k):
                    if next_scores[r] != float("-inf"):
                        length = np.float32(len(next_prefixes[r]))
                        finished[b].append((next_prefixes[r],
                                            np.float32(next_scores[r].item()) / np.float32(length ** penalty),
                                            next_lps[r]))
                done[b] = True
        prefixes, scores, token_lps = next_prefixes, next_scores, next_lps
        if all(done):
            break
        index = torch.tensor(parents)
        for layer in cache:
            layer[0], layer[1] = layer[0][index], layer[1][index]
        tokens = torch.tensor([[p[-1] if p else start] for p in prefixes])
    results = []
    for hyps in finished:
        hyps.sort(key=lambda h: -h[1])  # stable: among equal scores, the earlier finished first
        results.append(hyps[: opts.n_best])
    return results, first_logits


def score_targets(model, sources, targets, user_prefixes, length_penalty):
    """The log p of each target (then EOS) given its source, as
    tfm_score_batch computes it: the target's tokens forced through the
    decoder's steps over a padded batch, each scored by the log-softmax of
    its step's logits; the leading target tokens that translating would
    force (forced_prefixes) score 0. Returns per sentence (score, token
    scores), the score being the sum / (length + 1)^length_penalty."""
    c = model.c
    eos, pad, start = c["eos_token_id"], c["pad_token_id"], c["decoder_start_token_id"]
    B, S = len(sources), max(len(src) for src in sources)
    ids = torch.full((B, S), pad, dtype=torch.long)
    for b, src in enumerate(sources):
        ids[b, : len(src)] = torch.tensor(src)
    key_mask = torch.arange(S)[None, :] >= torch.tensor([len(src) for src in sources])[:, None]
    _, cross = model.encode(ids, key_mask)
    cache = [[None, None] for _ in range(c["decoder_layers"])]
    forced = forced_prefixes(model, user_prefixes)
    zero = []  # per sentence: its first target tokens that are forced
    for f, t in zip(forced, targets):
        n = 0
        while n < min(len(f), len(t)) and f[n] == t[n]:
            n += 1
        zero.append(n)
    steps = [t + [eos] for t in targets]
    token_lps = [[] for _ in range(B)]
    tokens = torch.full((B, 1), start, dtype=torch.long)
    for step in range(max(len(t) for t in steps)):
        logp = torch.log_softmax(model.decode_step(tokens, step, cross, cache, key_mask), dim=-1)
        for b in range(B):
            if step < len(steps[b]):
                lp = 0.0 if step < zero[b] else logp[b, steps[b][step]].item()
                token_lps[b].append(lp)
        tokens = torch.tensor([[t[step] if step < len(t) else pad] for t in steps])
    results = []
    for lps in token_lps:
        total = np.float32(0.0)
        for lp in lps:  # float32 sums in order, as the runtime's
            total = np.float32(total + np.float32(lp))
        length = np.float32(len(lps))
        results.append((total / np.float32(length ** np.float32(length_penalty)), lps))
    return results


def read_targets(opts, lines):
    """--score's (source line, target line) pairs: the lines of INPUT and of
    --targets, or INPUT's SOURCE<TAB>TARGET lines."""
    if opts.targets:
        with open(opts.targets, "rb") as f:
            targets = text_io.read_lines(f.read())
        if len(targets) != len(lines):
            sys.exit(f"{opts.targets}: {len(targets)} lines for {len(lines)} source lines")
        return lines, targets
    pairs = [line.split(b"\t", 1) for line in lines]
    for n, pair in enumerate(pairs, 1):
        if len(pair) != 2:
            sys.exit(f"line {n}: no TAB between source and target")
    return [p[0] for p in pairs], [p[1] for p in pairs]


def set_threads(n):
    """Torch's matmuls run in the BLAS library (Debian's torch: OpenBLAS);
    its threads and torch's own pool on top of each other oversubscribe the
    cores (3x slower beam search here). So: n BLAS threads, one torch thread,
    when the BLAS is OpenBLAS; else n torch threads."""
    try:
        ctypes.CDLL("libblas.so.3").openblas_set_num_threads(n)
        torch.set_num_threads(1)
    except (OSError, AttributeError):
        torch.set_num_threads(n)


def read_prefixes(model, opts, count, vocab=None):
    """Per input line, the token ids of its --target-prefix(-file), checked:
    space-separated ids, or with `vocab` (text output) vocabulary pieces."""
    def parse(text, where):
        if vocab is not None:
            unknown = [t for t in text.split() if t not in vocab]
            if unknown:
                sys.exit(f"{where}: {unknown[0]!r} is not a piece of the vocabulary")
            tokens = [vocab[t] for t in text.split()]
        else:
            try:
                tokens = [int(t) for t in text.split()]
            except ValueError:
                sys.exit(f"{where}: {text.strip()!r} is not a line of token ids")
        check_prefix(model, tokens, where)
        return tokens
    if opts.target_prefix is not None:
        return [parse(opts.target_prefix, "--target-prefix")] * count
    if not opts.target_prefix_file:
        return [[] for _ in range(count)]
    with open(opts.target_prefix_file, "rb") as f:
        lines = text_io.read_lines(f.read())
    if len(lines) != count:
        sys.exit(f"{opts.target_prefix_file}: {len(lines)} lines for {count} input lines")
    return [parse(line.decode("utf-8", errors="replace"), f"{opts.target_prefix_file} line {n}")
            for n, line in enumerate(lines, 1)]


def output_line(index, text, score, token_lps, opts):
    """The translator's line for one hypothesis: its text (after its score
    and a TAB with --with-scores), or an n-best line; --token-scores adds
    the tokens' log p."""
    lps = " ".join(f"{x:g}" for x in token_lps)
    if opts.n_best > 1:
        line = f"{index} ||| {text} ||| {score:g}"
        return line + f" ||| {lps}" if opts.token_scores else line
    if opts.with_scores or opts.token_scores:
        text = f"{score:g}\t{text}"
    return text + f"\t{lps}" if opts.token_scores else text


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("input", nargs="?")
    ap.add_argument("-b", "--beam-size", type=int, default=1)
    ap.add_argument("-n", "--n-best", type=int, default=1)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--max-length-ratio", type=float, default=3.0)
    ap.add_argument("--min-length", type=int, default=0)
    ap.add_argument("--length-penalty", type=float, default=1.0)
    ap.add_argument("--suppress-eos", action="store_true")
    # Default: the checkpoint's (generation_config.json), else off.
    ap.add_argument("--repetition-penalty", type=float)
    ap.add_argument("--no-repeat-ngram-size", type=int)
    ap.add_argument("--sampling-topk", type=int)
    ap.add_argument("--sampling-topp", type=float)
    ap.add_argument("--sampling-temperature", type=float)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--dump-first-logits")
    ap.add_argument("--vmap", metavar="FILE",
                    help="a vocabulary shortlist: each batch's search over "
                         "the target tokens its sources map to")
    ap.add_argument("--batch-size", type=int, default=1,
                    help="sentences decoded together (padded); results do not change")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", choices=["fp32", "bf16", "int8", "int4"], default="fp32",
                    help="the linears' arithmetic, as tfmc compile --precision")
    # Variants of the quantization, to measure what each choice costs
    # (Model's class attributes; docs/Design/Precisions.md); the defaults
    # are the compiler's arithmetic.
    ap.add_argument("--int4-group", type=int, default=Model.int4_group,
                    help="int4: k per weight scale (default %(default)s)")
    ap.add_argument("--int4-zero-point", action=argparse.BooleanOptionalAction,
                    default=Model.int4_zero_point,
                    help="int4: asymmetric weight groups, [0, 15] with a zero point "
                    "and a bf16 scale (default), or symmetric ones in [-7, 7]")
    ap.add_argument("--int4-scales", choices=["rtn", "mse"], default=Model.int4_scales,
                    help="int4: a group's scale over its whole range (rtn), or its "
                         "clip ratio of least squared error (mse)")
    ap.add_argument("--int4-output", choices=["int4", "int8", "fp32"], default=Model.int4_output,
                    help="int4: the output projection's precision")
    ap.add_argument("--int8-inputs", choices=["zero-point", "symmetric"],
                    default=Model.int8_inputs,
                    help="int8: inputs unsigned with a zero point per row, or symmetric "
                         "per row (127 / max|row|, as CTranslate2's)")
    ap.add_argument("--int8-output", choices=["int8", "fp32"], default=Model.int8_output,
                    help="int8: the output projection's precision")
    ap.add_argument("--int8-rounding", choices=["even", "away"], default=Model.int8_rounding,
                    help="int8: ties of the weights and inputs to even or away from zero")
    ap.add_argument("--timing", action="store_true",
                    help="report load and translation seconds on stderr")
    ap.add_argument("--input-format", choices=["text", "ids"],
                    help="default: text if MODEL_DIR has a tokenizer, else ids")
    ap.add_argument("--output-format", choices=["text", "ids"],
                    help="default: text if MODEL_DIR has a tokenizer, else ids")
    ap.add_argument("--encode-only", action="store_true",
                    help="print each line's source ids (EOS last, truncated) and stop")
    ap.add_argument("--with-scores", action="store_true",
                    help="print each translation after its score and a TAB")
    ap.add_argument("--token-scores", action="store_true",
                    help="add each token's log p (EOS's last): after a TAB, or "
                         "after ' ||| ' on n-best lines")
    ap.add_argument("--score", action="store_true",
                    help="print the score of given translations (see score_targets()): INPUT "
                         "holds SOURCE<TAB>TARGET lines, or sources with --targets")
    ap.add_argument("--targets", metavar="FILE",
                    help="--score: the targets, a line per INPUT line")
    ap.add_argument("--target-prefix", metavar="TOKENS",
                    help="tokens every output starts with (forced, log p = 0): ids with "
                         "--output-format ids, else vocabulary pieces")
    ap.add_argument("--target-prefix-file", metavar="FILE",
                    help="a target prefix per input line, that line's output start "
                         "(a blank line: none)")
    opts = ap.parse_args()
    # Any sampling option samples (as the translator): the others default.
    sampling_args = (opts.sampling_topk, opts.sampling_topp, opts.sampling_temperature, opts.seed)
    opts.sampling = any(a is not None for a in sampling_args)
    for name, default in (("sampling_topk", 0), ("sampling_topp", 1.0),
                          ("sampling_temperature", 1.0), ("seed", 0)):
        if getattr(opts, name) is None:
            setattr(opts, name, default)
    if opts.target_prefix is not None and opts.target_prefix_file:
        ap.error("--target-prefix and --target-prefix-file exclude each other")
    default_format = "text" if text_io.has_tokenizer(opts.model) else "ids"
    input_format = opts.input_format or default_format
    output_format = opts.output_format or default_format
    set_threads(opts.threads)
    started = time.perf_counter()
    model = Model(opts.model, opts.precision, {
        name: getattr(opts, name) for name in (
            "int4_group", "int4_zero_point", "int4_scales", "int4_output",
            "int8_inputs", "int8_output", "int8_rounding")})
    c = model.c
    if opts.repetition_penalty is None:
        opts.repetition_penalty = float(c.get("repetition_penalty") or 1.0)
    if opts.no_repeat_ngram_size is None:
        opts.no_repeat_ngram_size = int(c.get("no_repeat_ngram_size") or 0)
    opts.vmap_rules = None
    if opts.vmap:
        with open(os.path.join(opts.model, "vocab.json"), encoding="utf-8") as f:
            opts.vmap_rules = read_vmap(opts.vmap, json.load(f))
    tokenizer = None
    if "text" in (input_format, output_format):
        tokenizer = text_io.Tokenizer(opts.model, c["eos_token_id"], c["pad_token_id"])
    loaded = time.perf_counter()
    data = open(opts.input, "rb").read() if opts.input else sys.stdin.buffer.read()
    lines = text_io.read_lines(data)
    user_prefixes = read_prefixes(model, opts, len(lines),
                                  tokenizer.vocab if output_format == "text" else None)
    check_prefix(model, forced_prefixes(model, [[]])[0], "forced_bos_token_id")

    def source_ids(line):
        if input_format == "text":
            ids = tokenizer.encode(line)
        else:
            ids = [int(t) for t in line.split()]
        return text_io.truncate(ids, c["max_position_embeddings"], c["eos_token_id"])

    def show(tokens):
        return tokenizer.decode(tokens) if output_format == "text" else " ".join(map(str, tokens))

    sys.stdout.reconfigure(encoding="utf-8", newline="\n")
    if opts.encode_only:
        for line in lines:
            print(" ".join(map(str, source_ids(line))))
        return
    if opts.score:
        sources, targets = read_targets(opts, lines)

        def target_ids(line):
            if output_format == "text":
                return tokenizer.encode_target(line)
            ids = [int(t) for t in line.split()]
            return ids[:-1] if ids and ids[-1] == c["eos_token_id"] else ids
        for begin in range(0, len(lines), opts.batch_size):
            batch = [(source_ids(sources[i]), target_ids(targets[i]), user_prefixes[i])
                     for i in range(begin, min(begin + opts.batch_size, len(lines)))]
            nonempty = [x for x in batch if x[0]]
            scored = iter(score_targets(model, [x[0] for x in nonempty], [x[1] for x in nonempty],
                                [x[2] for x in nonempty], opts.length_penalty) if nonempty else [])
            for src, _, _ in batch:
                total, lps = next(scored) if src else (0.0, [])
                lps_text = " ".join(f"{x:g}" for x in lps)
                print(f"{total:g}\t{lps_text}" if opts.token_scores else f"{total:g}")
        return
    logits_out = open(opts.dump_first_logits, "wb") if opts.dump_first_logits else None
    for begin in range(0, len(lines), opts.batch_size):
        batch = [(i, source_ids(lines[i]))
                 for i in range(begin, min(begin + opts.batch_size, len(lines)))]
        nonempty = [(i, src) for i, src in batch if src]
        hyps, first = translate(model, [src for _, src in nonempty], opts,
                                [user_prefixes[i] for i, _ in nonempty],
                                [i for i, _ in nonempty]) if nonempty else ([], None)
        found = {i: n for n, (i, _) in enumerate(nonempty)}
        for index, src in batch:
            blank = [([], 0.0, [])]  # a blank line's hypothesis
            for tokens, score, lps in hyps[found[index]] if index in found else blank:
                print(output_line(index, show(tokens) if tokens else "", score, lps, opts))
            if logits_out:
                logits_out.write(first[found[index]].numpy().astype("<f4").tobytes())
    if opts.timing:
        print(f"reference: load {loaded - started:.4f} s, translate "
              f"{time.perf_counter() - loaded:.4f} s, {len(lines)} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
