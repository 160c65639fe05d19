#!/usr/bin/env python3
"""Writes a deterministic random-weight checkpoint of a Hugging Face model
family in exactly that family's layout.

  make_family_model.py bart|mbart|m2m_100 OUT_DIR [--size micro|tiny|small|base]
                       [--seed S] [--dtype F32|F16|BF16] [--sentences N]
                       [--activation relu|gelu|swish|silu]
                       [--scale-embedding true|false|absent]
                       [--forced-bos-token-id ID] [--eos-bias B]
                       [--no-tied-copies] [--max-positions N] [--layers N]
                       [--ffn N] [--vocab N] [--shards N]
  make_family_model.py m2m_100 OUT_DIR --size nllb-1.3b|nllb-3.3b [the options]
  make_family_model.py t5|mt5 OUT_DIR [--size ...] [--seed S] [--dtype ...]
                       [--sentences N] [--eos-bias B] [--no-tied-copies]
                       [--layers N] [--ffn N] [--vocab N] [--shards N]
                       [--feed-forward-proj relu|gated-gelu|...]
                       [--untied | --tied] [--d-kv N] [--buckets N]
                       [--max-distance N] [--n-positions N]
                       [--decoder-layers N]

OUT_DIR gets config.json (the keys and values the family's config class
writes, with its token ids: <s> 0, <pad> 1, </s> 2, <unk> 3, the decoder
starting from </s>), generation_config.json (the generation keys, as
GenerationConfig.from_model_config writes them), model.safetensors (Hugging
Face's tensor names, with the tied copies save_pretrained keeps:
model.encoder.embed_tokens.weight and model.decoder.embed_tokens.weight equal
to model.shared.weight; no lm_head.weight) and source.ids (token ids, one
sentence a line, as the family's tokenizer frames them: BART <s> X </s>,
mBART-50 and M2M-100 a language token, X, </s>). Weights are random but
seeded: the same options always give the same bytes. Needs only numpy.

  family   config class defaults written      vocabulary layout (V = vocab_size)
  bart     gelu, post-norm, no scale,         specials 0-3, words, <mask> = V - 1
           forced_bos 0, forced_eos 2
  mbart    gelu, pre-norm, scale (mBART-50),  specials 0-3, words, 52 mBART-50
           forced_eos 2                       language codes, <mask> = V - 1
  m2m_100  relu, pre-norm, scale              specials 0-3, words (vocab.json),
                                              100 language tokens, 8 madeup words

--size base is BART-base's shape for bart and mbart (d_model 768, 12 heads,
FFN 3072, 6 + 6 layers, vocabulary 50265) and M2M-100-418M's for m2m_100
(1024, 16 heads, 4096, 12 + 12 layers, vocabulary 128112). m2m_100 has
NLLB-200's dense shapes too, with its config.json's values (ReLU, scaled
embeddings, 1024 positions, its dropouts, max_length 200, NllbTokenizer):
--size nllb-1.3b (NLLB-200-1.3B and -distilled-1.3B: d_model 1024, 16 heads,
FFN 8192, 24 + 24 layers, vocabulary 256206; 5.5 GB of F32) and nllb-3.3b
(2048, 16 heads, 8192, 24 + 24, 256206; 13.7 GB). Their ids are laid out as
M2M-100's (above), not NLLB's 202 languages; and like the safetensors files
the Hub has for them, they hold model.shared.weight once (no tied copies).
--layers, --ffn and --vocab change a size's layer counts (encoder and
decoder), FFN width and vocabulary: --size nllb-1.3b --layers 2 has the
widths of NLLB-1.3B in 2 + 2 layers.

The checkpoint is written a tensor at a time, each drawn, written and
dropped (the tied copies of model.shared.weight are written from its one
array), so that a multi-GB checkpoint is never held whole in memory.
--shards N writes it as Hugging Face saves large models:
model-0000k-of-0000N.safetensors, the tensors in order cut into N runs of
about equal bytes (each cut at the tensor boundary nearest to an N-th; no
run empty), and model.safetensors.index.json ({"metadata": {"total_size":
bytes}, "weight_map": {tensor: shard}}).

t5 and mt5 (T5Config / MT5Config, the same model; see t5_config_json) write
config.json, generation_config.json (decoder start = pad = 0, EOS 1),
model.safetensors in T5ForConditionalGeneration's names (shared.weight and
its tied copies encoder/decoder.embed_tokens.weight, encoder.block.I.layer.J
..., the relative position tables in block 0 only, lm_head.weight when
untied) and source.ids (MADLAD-400's framing: a target language token
<2xx>, the words, </s>). The vocabulary (T5Vocabulary): <pad> 0, </s> 1,
<unk> 2, words, language tokens <2xx>, the <extra_id_N> sentinels (N = 0
last), then rows of the embedding past the tokenizer's pieces (T5's 32128
rows for 32100 pieces). Defaults: t5 is the original T5 (ReLU, tied output,
rescaled by d_model^-0.5), mt5 and any --size base are T5 v1.1 / mT5
(gated-gelu, untied lm_head). --size base is T5 v1.1 base (d_model 768, 12
heads of d_kv 64, d_ff 2048, 12 + 12 layers, vocabulary 32128); the other
sizes have heads * d_kv = d_model unless --d-kv says otherwise. The
relative position buckets are 32 up to distance 128 unless --buckets /
--max-distance say otherwise; n_positions is written only if given. The
tied copies of shared.weight are written except for base (its one copy
is ~1 GB of F32 weights written in ~15 s).

--scale-embedding absent leaves the key out (the config class's default
applies: true for m2m_100, false otherwise). --forced-bos-token-id -1 writes
none; its default is the family's (bart 0, none for the others, whose
callers pass the target language). --eos-bias adds B to EOS's logit (via
final_logits_bias, or for m2m_100, which has none, via the decoder's last
norm's bias and EOS's embedding row) so sentences end at varied lengths.
"""
import argparse
import copy
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

FAMILIES = ("bart", "mbart", "m2m_100")
T5_FAMILIES = ("t5", "mt5")
ARCHITECTURES = {"bart": "BartForConditionalGeneration",
                 "mbart": "MBartForConditionalGeneration",
                 "m2m_100": "M2M100ForConditionalGeneration"}
TRANSFORMERS_VERSION = "4.46.3"

BOS, PAD, EOS, UNK = 0, 1, 2, 3

# fairseq's language lists, in the order the tokenizers number them.
MBART50_CODES = [
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN",
    "hi_IN", "it_IT", "ja_XX", "kk_KZ", "ko_KR", "lt_LT", "lv_LV", "my_MM", "ne_NP",
    "nl_XX", "ro_RO", "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN", "af_ZA", "az_AZ",
    "bn_IN", "fa_IR", "he_IL", "hr_HR", "id_ID", "ka_GE", "km_KH", "mk_MK", "ml_IN",
    "mn_MN", "mr_IN", "pl_PL", "ps_AF", "pt_XX", "sv_SE", "sw_KE", "ta_IN", "te_IN",
    "th_TH", "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI"]
M2M100_CODES = [
    "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs",
    "cy", "da", "de", "el", "en", "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd",
    "gl", "gu", "ha", "he", "hi", "hr", "ht", "hu", "hy", "id", "ig", "ilo", "is", "it",
    "ja", "jv", "ka", "kk", "km", "kn", "ko", "lb", "lg", "ln", "lo", "lt", "lv", "mg",
    "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl", "no", "ns", "oc", "or", "pa", "pl",
    "ps", "pt", "ro", "ru", "sd", "si", "sk", "sl", "so", "sq", "sr", "ss", "su", "sv",
    "sw", "ta", "th", "tl", "tn", "tr", "uk", "ur", "uz", "vi", "wo", "xh", "yi", "yo",
    "zh", "zu"]
M2M100_MADEUP_WORDS = 8

# d_model, heads, ffn, encoder layers, decoder layers, vocabulary, positions
SIZES = {
    "micro": (16, 2, 32, 1, 1, 160, 64),
    "tiny": (64, 4, 256, 2, 2, 1000, 256),
    "small": (256, 4, 1024, 3, 3, 8000, 512),
    "base": (768, 12, 3072, 6, 6, 50265, 1024),
}
M2M100_BASE = (1024, 16, 4096, 12, 12, 128112, 1024)
# NLLB-200's dense models (m2m_100): facebook/nllb-200-distilled-1.3B and
# nllb-200-1.3B, facebook/nllb-200-3.3B.
NLLB_SIZES = {
    "nllb-1.3b": (1024, 16, 8192, 24, 24, 256206, 1024),
    "nllb-3.3b": (2048, 16, 8192, 24, 24, 256206, 1024),
}
# What NLLB-200's config.json says besides config_json's m2m_100 keys.
NLLB_CONFIG = {"attention_dropout": 0.1, "max_length": 200,
               "tokenizer_class": "NllbTokenizer"}
DTYPE_SIZES = {"F32": 4, "F16": 2, "BF16": 2}


class Vocabulary:
    """Where a family's vocabulary of `size` ids puts its tokens: the
    specials 0-3, then the words (ids words_begin .. words_end - 1), then
    the language tokens (languages: code -> id), then the family's extras."""

    def __init__(self, family, size):
        self.family, self.size = family, size
        if family == "bart":
            codes, after = [], 1  # <mask>
        elif family == "mbart":
            codes, after = MBART50_CODES, 1  # <mask>
        else:
            codes, after = M2M100_CODES, M2M100_MADEUP_WORDS
        self.words_begin = 4
        self.words_end = size - len(codes) - after
        if self.words_end <= self.words_begin:
            raise ValueError(f"a {family} vocabulary of {size} ids has no room for words")
        self.languages = {code: self.words_end + i for i, code in enumerate(codes)}

    def language(self, code):
        """The id of a language code (de, en, fr: mBART-50's de_DE, en_XX, fr_XX)."""
        if self.family == "mbart":
            code = next(c for c in MBART50_CODES if c.split("_")[0] == code)
        return self.languages[code]

    def frame_source(self, words, language="en"):
        """A source as the family's tokenizer frames it."""
        if self.family == "bart":
            return [BOS] + list(words) + [EOS]
        return [self.language(language)] + list(words) + [EOS]

    def m2m100_vocab_json(self, pieces=None):
        """M2M-100's vocab.json: the specials and the words (the language
        tokens follow it, numbered by the tokenizer from len(vocab.json))."""
        assert self.family == "m2m_100"
        vocab = {"<s>": BOS, "<pad>": PAD, "</s>": EOS, "<unk>": UNK}
        for i in range(self.words_begin, self.words_end):
            vocab[pieces[i - self.words_begin] if pieces else f"\u2581w{i}"] = i
        return vocab


def config_json(family, d, heads, ffn, n_enc, n_dec, vocab, positions,
                activation=None, scale_embedding="family", forced_bos=None, dtype="F32"):
    """config.json as the family's config class writes it (save_pretrained,
    the keys of the published checkpoints). scale_embedding: "family" (the
    published checkpoints' value: mBART-50 and M2M-100 true, BART false),
    True, False, or "absent"."""
    act = activation or ("relu" if family == "m2m_100" else "gelu")
    c = {
        "activation_dropout": 0.0, "activation_function": act,
        "architectures": [ARCHITECTURES[family]], "attention_dropout": 0.0,
        "bos_token_id": BOS, "d_model": d,
        "decoder_attention_heads": heads, "decoder_ffn_dim": ffn,
        "decoder_layerdrop": 0.0, "decoder_layers": n_dec,
        "decoder_start_token_id": EOS, "dropout": 0.1,
        "encoder_attention_heads": heads, "encoder_ffn_dim": ffn,
        "encoder_layerdrop": 0.0, "encoder_layers": n_enc,
        "eos_token_id": EOS, "init_std": 0.02, "is_encoder_decoder": True,
        "max_position_embeddings": positions, "model_type": family,
        "num_hidden_layers": n_enc, "pad_token_id": PAD,
        "scale_embedding": family != "bart",
        "tie_word_embeddings": True,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
        "transformers_version": TRANSFORMERS_VERSION, "use_cache": True,
        "vocab_size": vocab,
    }
    if family in ("bart", "mbart"):
        c["forced_eos_token_id"] = EOS
        c["classifier_dropout"] = 0.0
        # Leftovers of the fairseq conversion that the published BART and
        # mBART configs still carry and the classes ignore.
        c.update({"add_bias_logits": False, "add_final_layer_norm": family == "mbart",
                  "normalize_before": family == "mbart", "normalize_embedding": True,
                  "static_position_embeddings": False})
    if family == "bart":
        c.update({"id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
                  "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
                  "extra_pos_embeddings": 2})
    if family == "m2m_100":
        c["gradient_checkpointing"] = False
    if scale_embedding == "absent":
        del c["scale_embedding"]
    elif scale_embedding != "family":
        c["scale_embedding"] = bool(scale_embedding)
    if forced_bos is None and family == "bart":
        forced_bos = BOS
    if forced_bos is not None and forced_bos >= 0:
        c["forced_bos_token_id"] = forced_bos
    return dict(sorted(c.items()))


def generation_json(config):
    """generation_config.json as GenerationConfig.from_model_config writes
    it: the config's generation keys."""
    g = {"_from_model_config": True}
    for key in ("bos_token_id", "decoder_start_token_id", "eos_token_id",
                "forced_bos_token_id", "forced_eos_token_id", "pad_token_id"):
        if key in config:
            g[key] = config[key]
    g["transformers_version"] = TRANSFORMERS_VERSION
    return g


def tensor_shapes(family, d, ffn, n_enc, n_dec, vocab, positions):
    """{name: shape} of the family's checkpoint, in Hugging Face's order,
    without the tied copies of model.shared.weight."""
    s = {"model.shared.weight": (vocab, d)}
    if family == "bart" or family == "mbart":
        s["final_logits_bias"] = (1, vocab)

    def norm(name):
        s[name + ".weight"], s[name + ".bias"] = (d,), (d,)

    def linear(name, out_f, in_f):
        s[name + ".weight"], s[name + ".bias"] = (out_f, in_f), (out_f,)

    for side, layers in (("encoder", n_enc), ("decoder", n_dec)):
        if family != "m2m_100":  # learned positions with fairseq's offset 2
            s[f"model.{side}.embed_positions.weight"] = (positions + 2, d)
        for i in range(layers):
            p = f"model.{side}.layers.{i}"
            attentions = ["self_attn"] + (["encoder_attn"] if side == "decoder" else [])
            for a in attentions:
                for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
                    linear(f"{p}.{a}.{proj}", d, d)
                norm(f"{p}.{a}_layer_norm")
            linear(p + ".fc1", ffn, d)
            linear(p + ".fc2", d, ffn)
            norm(p + ".final_layer_norm")
        if family != "m2m_100":
            norm(f"model.{side}.layernorm_embedding")
        if family != "bart":
            norm(f"model.{side}.layer_norm")
    return s


def tied_copies_of(items):
    """(name, value) pairs as save_pretrained writes them:
    model.shared.weight followed by its copies
    model.{encoder,decoder}.embed_tokens.weight (lm_head.weight, the third
    tie, dropped); T5's the same without "model."."""
    for name, a in items:
        yield name, a
        if name in ("model.shared.weight", "shared.weight"):
            prefix = name[:-len("shared.weight")]
            yield prefix + "encoder.embed_tokens.weight", a
            yield prefix + "decoder.embed_tokens.weight", a


def with_tied_copies(tensors):
    """The dict `tensors` (of arrays or shapes) with the tied copies."""
    return dict(tied_copies_of(tensors.items()))


def safetensors_header(shapes, dtype):
    """The length prefix and header of a safetensors file holding tensors
    of `shapes` ({name: shape}, in file order) in `dtype`, as
    safetensors_io.write makes them."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        n = int(np.prod(shape, dtype=np.int64)) * DTYPE_SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text


def write_array(f, a, dtype, chunk=1 << 24):
    """Writes array `a` in `dtype` to file `f`: F32 as it is, F16 and BF16
    converted `chunk` elements at a time (so no copy of `a` is made)."""
    flat = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    if dtype == "F32":
        f.write(flat.view(np.uint8))
        return
    for begin in range(0, flat.size, chunk):
        f.write(safetensors_io.encode(flat[begin:begin + chunk], dtype))


def shard_files(shapes, dtype, shards):
    """[(file, [names])]: model.safetensors holding every tensor, or the
    tensors in order cut into `shards` runs, each cut at the tensor
    boundary nearest to a shards-th of the bytes, every run holding at
    least one tensor (a tensor that is most of the checkpoint, as NLLB's
    embedding nearly is, leaves the other runs small)."""
    names = list(shapes)
    if shards == 1:
        return [("model.safetensors", names)]
    if shards > len(names):
        raise ValueError(f"{len(names)} tensors cannot fill {shards} shards")
    sizes = [int(np.prod(shapes[n], dtype=np.int64)) * DTYPE_SIZES[dtype] for n in names]
    begins = np.cumsum([0] + sizes[:-1])
    cuts = [0]
    for k in range(1, shards):
        nearest = int(np.argmin(np.abs(begins - k * sum(sizes) / shards)))
        cuts.append(min(max(nearest, cuts[-1] + 1), len(names) - (shards - k)))
    cuts.append(len(names))
    return [(f"model-{k:05d}-of-{shards:05d}.safetensors", names[cuts[k - 1]:cuts[k]])
            for k in range(1, shards + 1)]


def write_tensor_files(out, shapes, items, dtype="F32", shards=1):
    """Writes the tensors `items` ((name, array) pairs in the order of
    `shapes`, {name: shape}) into `out`: model.safetensors, or `shards`
    shards and model.safetensors.index.json. Each array is written as it
    comes; none is kept."""
    items = iter(items)
    weight_map = {}
    for file, names in shard_files(shapes, dtype, shards):
        with open(os.path.join(out, file), "wb") as f:
            f.write(safetensors_header({n: shapes[n] for n in names}, dtype))
            for expected in names:
                name, a = next(items)
                if name != expected or tuple(a.shape) != tuple(shapes[name]):
                    raise ValueError(f"tensor {name} {a.shape} comes where "
                                     f"{expected} {shapes[expected]} was declared")
                write_array(f, a, dtype)
                weight_map[name] = file
                del a
    stale = "model.safetensors.index.json" if shards == 1 else "model.safetensors"
    if os.path.exists(os.path.join(out, stale)):
        os.remove(os.path.join(out, stale))
    if shards > 1:
        total = sum(int(np.prod(s, dtype=np.int64)) * DTYPE_SIZES[dtype] for s in shapes.values())
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2, sort_keys=True)
            f.write("\n")


def write_checkpoint(out, config, tensors, dtype="F32", tied_copies=True, sources=None,
                     extra_files=None, shapes=None, shards=1):
    """Writes config.json, generation_config.json, model.safetensors (with
    the tied copies unless told not to; or `shards` shards and their
    index), source.ids (if given) and extra_files {name: text} into `out`.
    `tensors` is {name: array}, or with `shapes` ({name: shape}) an
    iterable of (name, array) in its order, drawn as they are written."""
    if shapes is None:
        shapes, tensors = {n: a.shape for n, a in tensors.items()}, tensors.items()
    if tied_copies:
        shapes, tensors = with_tied_copies(shapes), tied_copies_of(tensors)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump(generation_json(config), f, indent=2)
        f.write("\n")
    write_tensor_files(out, shapes, tensors, dtype, shards)
    if sources is not None:
        with open(os.path.join(out, "source.ids"), "w") as f:
            for s in sources:
                f.write(" ".join(map(str, s)) + "\n")
    for name, text in (extra_files or {}).items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(text)


def random_tensor(name, shape, rng):
    """The next tensor of random_tensors, drawn from `rng`."""
    a = rng.standard_normal(shape, dtype=np.float32)
    if name.endswith("norm.weight") or name.endswith("layernorm_embedding.weight"):
        a *= np.float32(0.05)
        a += np.float32(1.0)
    elif "norm" in name or name.endswith(".bias") or name == "final_logits_bias":
        a *= np.float32(0.05 if "norm" in name else 0.02)
    elif name in ("model.shared.weight",) or "embed_positions" in name:
        a *= np.float32(shape[1] ** -0.5)
    else:
        a *= np.float32((2.0 / (shape[0] + shape[1])) ** 0.5)
    if name == "model.shared.weight":
        a[PAD] = 0.0
    return a


def eos_direction(shapes, rng):
    """The unit vector u of random_tensors' EOS bias for m2m_100, which is
    drawn after all the tensors: from a copy of `rng` that draws them
    first (and drops them)."""
    ahead = copy.deepcopy(rng)
    for shape in shapes.values():
        ahead.standard_normal(shape, dtype=np.float32)
    u = ahead.standard_normal(shapes["model.shared.weight"][1]).astype(np.float32)
    return u / np.linalg.norm(u)


def random_tensors(family, shapes, rng, eos_bias=0.0):
    """Seeded random weights for `shapes`, yielded as (name, array) in its
    order, a tensor at a time: linears ~ N(0, 2 / (in + out)), biases N(0,
    0.02), norms 1 + N(0, 0.05) and N(0, 0.05), embeddings and learned
    positions N(0, 1 / d) (positions as large as the tokens', so a position
    off by one changes the outputs), the padding row zero.

    eos_bias: with final_logits_bias, EOS's entry gains B. Else (m2m_100)
    h . E_eos with h = gamma * n + beta: beta gains sqrt(d) u and E_eos
    gains (B / sqrt(d)) u for a unit vector u, so EOS's logit rises by B
    (+- B / sqrt(d)) and every other logit moves by a fixed N(0, 1)."""
    d = shapes["model.shared.weight"][1]
    u = None
    if eos_bias and "final_logits_bias" not in shapes:
        u = eos_direction(shapes, rng)
    for name, shape in shapes.items():
        a = random_tensor(name, shape, rng)
        if eos_bias and name == "final_logits_bias":
            a[0, EOS] += np.float32(eos_bias)
        elif u is not None and name == "model.decoder.layer_norm.bias":
            a += np.float32(d ** 0.5) * u
        elif u is not None and name == "model.shared.weight":
            a[EOS] += np.float32(eos_bias / d ** 0.5) * u
        yield name, a


def random_sources(vocab, count, seed, max_words=22, languages=("en", "de", "fr")):
    """`count` sources of 1..max_words random words, framed as the family's
    tokenizer frames them (mBART / M2M-100: a random one of en, de, fr
    first; T5: a random one of its languages' <2xx>)."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for _ in range(count):
        n = int(rng.integers(1, max_words + 1))
        words = rng.integers(vocab.words_begin, vocab.words_end, n).tolist()
        language = languages[int(rng.integers(0, len(languages)))]
        out.append(vocab.frame_source(words, language))
    return out


# --- T5 / mT5 / MADLAD-400 -------------------------------------------------

T5_PAD, T5_EOS, T5_UNK = 0, 1, 2
T5_ARCHITECTURES = {"t5": "T5ForConditionalGeneration", "mt5": "MT5ForConditionalGeneration"}
# MADLAD-400's target language tokens that the models here have (it has
# some 400, pieces of its SentencePiece vocabulary).
T5_LANGUAGES = ["de", "en", "fr", "es", "it"]

# d_model, heads, d_kv, d_ff, encoder layers, decoder layers, vocabulary
T5_SIZES = {
    "micro": (16, 2, 8, 32, 1, 1, 160),
    "tiny": (64, 4, 16, 256, 2, 2, 1000),
    "small": (256, 4, 64, 1024, 3, 3, 8000),
    "base": (768, 12, 64, 2048, 12, 12, 32128),  # T5 v1.1 base
}


class T5Vocabulary:
    """Where a T5 vocabulary of `size` rows puts its tokens: <pad> 0, </s> 1,
    <unk> 2, the words (ids words_begin .. words_end - 1), MADLAD's
    language tokens <2xx> (languages: code -> id), the sentinels
    <extra_id_N> (sentinels of them, <extra_id_0> the last), then `unused`
    rows no piece has (T5's 32128 - 32100)."""

    def __init__(self, size, sentinels=None, unused=None, languages=T5_LANGUAGES):
        self.size = size
        self.sentinels = min(100, size // 16) if sentinels is None else sentinels
        self.unused = (28 if size == 32128 else 8) if unused is None else unused
        self.words_begin = 3
        self.words_end = size - self.unused - self.sentinels - len(languages)
        if self.words_end <= self.words_begin:
            raise ValueError(f"a t5 vocabulary of {size} rows has no room for words")
        self.languages = {code: self.words_end + i for i, code in enumerate(languages)}
        self.pieces = size - self.unused  # ids the tokenizer can give

    def language(self, code):
        return self.languages[code]

    def frame_source(self, words, language="de"):
        """A source as MADLAD-400 is given it: <2xx> words </s>."""
        return [self.language(language)] + list(words) + [T5_EOS]


def t5_config_json(model_type, d, heads, d_kv, d_ff, n_enc, n_dec, vocab,
                   feed_forward_proj="relu", tied=True, buckets=32, max_distance=128,
                   n_positions=None, dtype="F32"):
    """config.json as T5Config / MT5Config's save_pretrained writes it (the
    keys of the published t5, mt5 and MADLAD-400 checkpoints; tied T5's
    leaves tie_word_embeddings at its default, true, unwritten)."""
    gated = feed_forward_proj.startswith("gated-")
    act = feed_forward_proj.split("-")[-1]
    c = {
        "architectures": [T5_ARCHITECTURES[model_type]], "classifier_dropout": 0.0,
        "d_ff": d_ff, "d_kv": d_kv, "d_model": d,
        "decoder_start_token_id": T5_PAD,
        "dense_act_fn": "gelu_new" if feed_forward_proj == "gated-gelu" else act,
        "dropout_rate": 0.1, "eos_token_id": T5_EOS,
        "feed_forward_proj": feed_forward_proj, "initializer_factor": 1.0,
        "is_encoder_decoder": True, "is_gated_act": gated, "layer_norm_epsilon": 1e-06,
        "model_type": model_type, "num_decoder_layers": n_dec, "num_heads": heads,
        "num_layers": n_enc, "pad_token_id": T5_PAD,
        "relative_attention_max_distance": max_distance,
        "relative_attention_num_buckets": buckets,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
        "transformers_version": TRANSFORMERS_VERSION, "use_cache": True,
        "vocab_size": vocab,
    }
    if model_type == "mt5":
        c["tokenizer_class"] = "T5Tokenizer"
    if not tied or model_type == "mt5":  # MT5Config's default is false
        c["tie_word_embeddings"] = bool(tied)
    if n_positions:
        c["n_positions"] = n_positions
    return dict(sorted(c.items()))


def t5_tensor_shapes(d, heads, d_kv, d_ff, n_enc, n_dec, vocab, gated, tied, buckets):
    """{name: shape} of a T5ForConditionalGeneration checkpoint, in its
    order, without the tied copies of shared.weight."""
    inner = heads * d_kv
    s = {"shared.weight": (vocab, d)}

    def attention(p, first):
        s[p + ".q.weight"], s[p + ".k.weight"] = (inner, d), (inner, d)
        s[p + ".v.weight"], s[p + ".o.weight"] = (inner, d), (d, inner)
        if first:
            s[p + ".relative_attention_bias.weight"] = (buckets, heads)

    def ffn(p):
        if gated:
            s[p + ".wi_0.weight"], s[p + ".wi_1.weight"] = (d_ff, d), (d_ff, d)
        else:
            s[p + ".wi.weight"] = (d_ff, d)
        s[p + ".wo.weight"] = (d, d_ff)

    for side, layers in (("encoder", n_enc), ("decoder", n_dec)):
        for i in range(layers):
            p = f"{side}.block.{i}.layer"
            attention(p + ".0.SelfAttention", i == 0)
            s[p + ".0.layer_norm.weight"] = (d,)
            j = 1
            if side == "decoder":
                attention(p + ".1.EncDecAttention", False)
                s[p + ".1.layer_norm.weight"] = (d,)
                j = 2
            ffn(f"{p}.{j}.DenseReluDense")
            s[f"{p}.{j}.layer_norm.weight"] = (d,)
        s[f"{side}.final_layer_norm.weight"] = (d,)
    if not tied:
        s["lm_head.weight"] = (vocab, d)
    return s


def t5_random_tensors(shapes, d_kv, rng, eos_bias=0.0):
    """Seeded random weights for `shapes` at T5's scales (its
    _init_weights, initializer_factor 1), so that scores, which T5 does
    not scale, are ~N(0, 1): embeddings N(0, 1), lm_head N(0, 1 / d), q
    N(0, 1 / (d d_kv)), k and v N(0, 1 / d), o N(0, 1 / (heads d_kv)), wi
    N(0, 1 / d), wo N(0, 1 / d_ff); norms 1 + N(0, 0.05); the relative
    position tables N(0, 1) (T5's are smaller; these make a wrong bucket
    change the outputs). A tied model's embeddings are N(0, 0.05^2): at
    T5's scale the decoder's input token dominates its output (x . E_v is
    largest for v = that token) and every output repeats its first token.

    eos_bias (untied models): EOS's logit rises by about B, through the
    last coordinate: every embedding row gets 2 there (the residual
    streams carry it to the final norm, whose output keeps a share of it),
    and EOS's lm_head row gains B there."""
    tied = "lm_head.weight" not in shapes
    if eos_bias and tied:
        raise ValueError("--eos-bias needs an untied model (its lm_head row)")
    t = {}
    for name, shape in shapes.items():
        a = rng.standard_normal(shape, dtype=np.float32)
        if name.endswith("layer_norm.weight"):
            a *= np.float32(0.05)
            a += np.float32(1.0)
        elif name == "shared.weight":
            if tied:
                a *= np.float32(0.05)
        elif name.endswith("relative_attention_bias.weight"):
            pass
        elif name.endswith(".q.weight"):
            a *= np.float32((shape[1] * d_kv) ** -0.5)
        else:
            a *= np.float32(shape[1] ** -0.5)
        t[name] = a
    if eos_bias:
        d = shapes["shared.weight"][1]
        t["shared.weight"][:, d - 1] = np.float32(2.0)
        # The final norm's output at the last coordinate: about 2 / rms of
        # the residual stream, which grows with the layers; 1 is typical.
        t["lm_head.weight"][T5_EOS, d - 1] += np.float32(eos_bias)
    return t


def t5_main(args):
    if args.size not in T5_SIZES:
        sys.exit(f"make_family_model.py: --size {args.size} is not a {args.family} size")
    d, heads, d_kv, d_ff, n_enc, n_dec, vocab = T5_SIZES[args.size]
    if args.layers:
        n_enc = n_dec = args.layers
    d_ff = args.ffn or d_ff
    vocab = args.vocab or vocab
    if args.d_kv:
        d_kv = args.d_kv
    if args.decoder_layers:
        n_dec = args.decoder_layers
    v11 = args.family == "mt5" or args.size == "base"
    proj = args.feed_forward_proj or ("gated-gelu" if v11 else "relu")
    tied = not v11 if args.tied is None else args.tied
    gated = proj.startswith("gated-")
    config = t5_config_json(args.family, d, heads, d_kv, d_ff, n_enc, n_dec, vocab,
                            feed_forward_proj=proj, tied=tied, buckets=args.buckets,
                            max_distance=args.max_distance, n_positions=args.n_positions,
                            dtype=args.dtype)
    rng = np.random.default_rng(args.seed)
    shapes = t5_tensor_shapes(d, heads, d_kv, d_ff, n_enc, n_dec, vocab, gated, tied,
                              args.buckets)
    tensors = t5_random_tensors(shapes, d_kv, rng, args.eos_bias)
    words = T5Vocabulary(vocab)
    sources = random_sources(words, args.sentences, args.seed,
                             max_words=min(22, (args.n_positions or 512) - 2),
                             languages=T5_LANGUAGES)
    # base: shared.weight once (its copies would add 2 x 98 MB to write).
    write_checkpoint(args.out, config, tensors, args.dtype,
                     tied_copies=not args.no_tied_copies and args.size != "base",
                     sources=sources, shards=args.shards)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=FAMILIES + T5_FAMILIES)
    ap.add_argument("out")
    ap.add_argument("--size", default="tiny", choices=list(SIZES) + list(NLLB_SIZES),
                    help="nllb-1.3b and nllb-3.3b: m2m_100 alone")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--sentences", type=int, default=16)
    ap.add_argument("--activation", choices=["relu", "gelu", "swish", "silu"],
                    help="default: the family's (m2m_100 relu, else gelu)")
    ap.add_argument("--scale-embedding", choices=["true", "false", "absent"],
                    help="default: the published checkpoints' (bart false, else true)")
    ap.add_argument("--forced-bos-token-id", type=int,
                    help="-1: none; default: bart 0, none for the others")
    ap.add_argument("--eos-bias", type=float, default=0.0, help="added to EOS's logit")
    ap.add_argument("--no-tied-copies", action="store_true",
                    help="model.shared.weight alone, without the embed_tokens copies")
    ap.add_argument("--max-positions", type=int,
                    help="max_position_embeddings (default: the size's)")
    ap.add_argument("--layers", type=int,
                    help="encoder and decoder layers (default: the size's)")
    ap.add_argument("--ffn", type=int, help="FFN width (default: the size's)")
    ap.add_argument("--vocab", type=int, help="vocabulary size (default: the size's)")
    ap.add_argument("--shards", type=int, default=1,
                    help="write N shards and model.safetensors.index.json")
    t5 = ap.add_argument_group("t5 and mt5")
    t5.add_argument("--feed-forward-proj",
                    help="relu, gated-gelu, ... (default: t5 relu; mt5 and base gated-gelu)")
    tie = t5.add_mutually_exclusive_group()
    tie.add_argument("--untied", dest="tied", action="store_false", default=None,
                     help="an lm_head.weight of its own (default for mt5 and base)")
    tie.add_argument("--tied", dest="tied", action="store_true",
                     help="the output is shared.weight, its input rescaled (default for t5)")
    t5.add_argument("--d-kv", type=int, help="head width (default: d_model / heads, base 64)")
    t5.add_argument("--buckets", type=int, default=32, help="relative_attention_num_buckets")
    t5.add_argument("--max-distance", type=int, default=128,
                    help="relative_attention_max_distance")
    t5.add_argument("--n-positions", type=int, help="n_positions (default: none written)")
    t5.add_argument("--decoder-layers", type=int,
                    help="num_decoder_layers (default: num_layers)")
    args = ap.parse_args()
    if args.family in T5_FAMILIES:
        t5_main(args)
        return

    nllb = args.size in NLLB_SIZES
    if nllb and args.family != "m2m_100":
        sys.exit(f"make_family_model.py: --size {args.size} is an m2m_100 size")
    d, heads, ffn, n_enc, n_dec, vocab, positions = (
        NLLB_SIZES[args.size] if nllb
        else M2M100_BASE if args.family == "m2m_100" and args.size == "base"
        else SIZES[args.size])
    if args.max_positions:
        positions = args.max_positions
    if args.layers:
        n_enc = n_dec = args.layers
    ffn = args.ffn or ffn
    vocab = args.vocab or vocab
    scale = {"true": True, "false": False, "absent": "absent", None: "family"}[args.scale_embedding]
    config = config_json(args.family, d, heads, ffn, n_enc, n_dec, vocab, positions,
                         activation=args.activation, scale_embedding=scale,
                         forced_bos=args.forced_bos_token_id, dtype=args.dtype)
    if nllb:
        config = dict(sorted({**config, **NLLB_CONFIG}.items()))
    rng = np.random.default_rng(args.seed)
    shapes = tensor_shapes(args.family, d, ffn, n_enc, n_dec, vocab, positions)
    tensors = random_tensors(args.family, shapes, rng, args.eos_bias)
    words = Vocabulary(args.family, vocab)
    sources = random_sources(words, args.sentences, args.seed,
                             max_words=min(22, positions - 2))
    write_checkpoint(args.out, config, tensors, args.dtype,
                     tied_copies=not args.no_tied_copies and not nllb, sources=sources,
                     shapes=shapes, shards=args.shards)


if __name__ == "__main__":
    main()
