"""What each model family fixes in its modeling code, beyond what its
config.json says: the facts of Hugging Face's modeling_marian.py,
modeling_bart.py, modeling_mbart.py and modeling_m2m_100.py (and fairseq's,
which the last three were converted from), and modeling_t5.py /
configuration_t5.py (mT5's and MADLAD-400's too), for reference.py's Model.

  family   norms                          embedding                 positions
  marian   config's normalize_before;     token * scale + position  table (stored, or computed:
           pre-norm adds the stack norms                            config's position_encoding), row p
  bart     after each sub-layer (post)    LN(token * scale + pos)   learned table, row p + 2
  mbart    before each sub-layer (pre),   LN(token * scale + pos)   learned table, row p + 2
           and after each stack
  m2m_100  before each sub-layer (pre),   token * scale + pos       fairseq's sinusoids, not stored,
           and after each stack                                     row p + 2, padding -> zero row

scale is sqrt(d_model) where config.json's scale_embedding is true; its
default is the family's config class's (M2M100Config: true, the others
false). "LN" is `model.{encoder,decoder}.layernorm_embedding`; the stack
norms `model.{encoder,decoder}.layer_norm`. All families but Marian's .npz
releases take PyTorch's layer-norm epsilon, 1e-5 (no config key).

T5 (model_type t5; mt5 the same model, MT5Config's other defaults) is
another block: RMS norms (T5LayerNorm: no mean, no bias, config's
layer_norm_epsilon) before each sub-layer and after each stack, no
position embeddings but a relative position bias added to the scores
(t5_bucket), scores not scaled by 1/sqrt(d_kv), heads of width d_kv,
no biases, the FFN plain (act(x wi) wo) or gated (act(x wi_0) * x wi_1) wo
after feed_forward_proj (t5_feed_forward), embeddings not scaled, and the
tied output rescaled by d_model^-0.5; see reference.py's T5 methods.
"""
import math

import numpy as np
import torch


class Family:
    def __init__(self, name, pre_norm, embedding_norm, positions, scale_embedding):
        self.name = name
        # None: from config.json's normalize_before (Marian).
        self.pre_norm = pre_norm
        self.embedding_norm = embedding_norm
        # "marian" | "learned" | "fairseq"
        self.positions = positions
        self.scale_embedding = scale_embedding  # config.json's default


FAMILIES = {
    "marian": Family("marian", None, False, "marian", False),
    "bart": Family("bart", False, True, "learned", False),
    "mbart": Family("mbart", True, True, "learned", False),
    "m2m_100": Family("m2m_100", True, False, "fairseq", True),
    "t5": Family("t5", True, False, "relative", False),
}
# model_type -> family, where they differ: mT5 is T5 (MT5Config only sets
# other defaults); MADLAD-400's checkpoints say t5.
ALIASES = {"mt5": "t5"}

# BART's and fairseq's positions start at 2: fairseq numbers positions
# from padding_idx + 1 (padding_idx = 1), and Hugging Face kept the offset
# in the learned tables it converted (BartLearnedPositionalEmbedding).
LEARNED_OFFSET = 2


def family_of(config):
    """The Family of a config.json dict (Marian without model_type)."""
    name = config.get("model_type", "marian")
    if name not in FAMILIES and name not in ALIASES:
        raise ValueError(f"model_type {name!r} is not one of "
                         f"{', '.join(list(FAMILIES) + list(ALIASES))}")
    return FAMILIES[ALIASES.get(name, name)]


def fairseq_sinusoids(n_pos, dim, padding_idx):
    """fairseq's SinusoidalPositionalEmbedding table (M2M-100, NLLB): row p
    is [sin(p * f_0..f_{h-1}), cos(p * f_0..f_{h-1})] with h = dim / 2 and
    f_i = exp(-i * ln(10000) / (h - 1)); an odd dim gets a zero last column;
    row padding_idx is zero. Computed in float64, then rounded to float32."""
    half = dim // 2
    freq = np.exp(-np.arange(half, dtype=np.float64) * (math.log(10000.0) / (half - 1)))
    angle = np.arange(n_pos, dtype=np.float64)[:, None] * freq[None, :]
    out = np.zeros((n_pos, dim), dtype=np.float32)
    out[:, :half], out[:, half:2 * half] = np.sin(angle), np.cos(angle)
    out[padding_idx] = 0.0
    return torch.from_numpy(out)


def fairseq_positions(ids, padding_idx, past):
    """fairseq's make_positions (Hugging Face's
    create_position_ids_from_input_ids): the i-th non-padding token of a row
    (counting `past` earlier ones) is at padding_idx + i (i from 1); padding
    tokens at padding_idx. ids: [B, S] -> [B, S]."""
    real = (ids != padding_idx).long()
    return (torch.cumsum(real, dim=1) + past) * real + padding_idx


# configuration_t5.py's T5Config and MT5Config defaults: what a config.json
# without the key means.
T5_DEFAULTS = {
    "t5": {"vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
           "num_heads": 8, "feed_forward_proj": "relu", "tie_word_embeddings": True},
    "mt5": {"vocab_size": 250112, "d_model": 512, "d_kv": 64, "d_ff": 1024, "num_layers": 8,
            "num_heads": 6, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
}
T5_COMMON_DEFAULTS = {"relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
                      "layer_norm_epsilon": 1e-6, "pad_token_id": 0, "eos_token_id": 1}


def t5_config(config):
    """config.json of a t5 / mt5 checkpoint with its config class's defaults
    filled in, and the keys the reference's generation reads in the other
    families' names: encoder_layers (num_layers), decoder_layers
    (num_decoder_layers, else num_layers), max_position_embeddings (tfmc's
    limit: n_positions where the config has it, else 512; T5 itself has no
    position table), decoder_start_token_id (the padding, 0, where absent:
    T5's _shift_right starts from it)."""
    c = dict(config)
    for key, value in {**T5_COMMON_DEFAULTS, **T5_DEFAULTS[c.get("model_type", "t5")]}.items():
        if c.get(key) is None:
            c[key] = value
    c["encoder_layers"] = c["num_layers"]
    c["decoder_layers"] = c.get("num_decoder_layers") or c["num_layers"]
    c["max_position_embeddings"] = c.get("n_positions") or 512
    if c.get("decoder_start_token_id") is None:
        c["decoder_start_token_id"] = c["pad_token_id"]
    return c


def gelu_tanh(x):
    """Hugging Face's gelu_new (NewGELUActivation), the tanh approximation
    of GELU: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in the
    order it computes it."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


# Hugging Face's ACT2FN names that a T5 feed_forward_proj can end in.
T5_ACTIVATIONS = {
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,  # the exact (erf) GELU
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
    "swish": torch.nn.functional.silu,
}


def t5_feed_forward(proj):
    """(gated, activation) of a feed_forward_proj as T5Config parses it:
    "ACT" or "gated-ACT" (anything else is refused); "gated-gelu" alone
    means gelu_new (the tanh GELU, kept for the v1.1 checkpoints), while
    "gelu" and "gated-gelu_new" mean what ACT2FN says."""
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise ValueError(f"feed_forward_proj {proj!r} is not ACT or gated-ACT")
    act = "gelu_new" if proj == "gated-gelu" else parts[-1]
    if act not in T5_ACTIVATIONS:
        raise ValueError(f"feed_forward_proj {proj!r}: activation {act!r} is not one of "
                         f"{', '.join(T5_ACTIVATIONS)}")
    return len(parts) == 2, T5_ACTIVATIONS[act]


def t5_bucket(relative, bidirectional, num_buckets, max_distance):
    """T5's _relative_position_bucket (from Mesh TensorFlow): the bucket of
    each relative position (key position - query position; int64 tensor).
    Bidirectional (the encoder): half of the buckets for keys after the
    query (relative > 0), half for the rest, by |relative|; causal (the
    decoder): only keys at or before the query, by -relative (positive
    relative positions fall in bucket 0). Within a half of n buckets,
    distances below n / 2 each have their own, larger ones share
    logarithmic bins up to max_distance: n/2 + trunc(log(r / (n/2)) /
    log(max_distance / (n/2)) * (n - n/2)), at most n - 1, the logarithm
    in float32 as torch computes it (which decides the distances that fall
    on a bin's edge)."""
    buckets = torch.zeros_like(relative)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative > 0).to(torch.long) * num_buckets
        relative = torch.abs(relative)
    else:
        relative = -torch.min(relative, torch.zeros_like(relative))
    max_exact = num_buckets // 2
    small = relative < max_exact
    large = max_exact + (torch.log(relative.float() / max_exact)
                         / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(small, relative, large)
