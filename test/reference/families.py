"""What each model family fixes in its modeling code, beyond what its
config.json says: the facts of Hugging Face's modeling_marian.py,
modeling_bart.py, modeling_mbart.py and modeling_m2m_100.py (and fairseq's,
which the last three were converted from), for reference.py's Model.

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
}

# BART's and fairseq's positions start at 2: fairseq numbers positions
# from padding_idx + 1 (padding_idx = 1), and Hugging Face kept the offset
# in the learned tables it converted (BartLearnedPositionalEmbedding).
LEARNED_OFFSET = 2


def family_of(config):
    """The Family of a config.json dict (Marian without model_type)."""
    name = config.get("model_type", "marian")
    if name not in FAMILIES:
        raise ValueError(f"model_type {name!r} is not one of {', '.join(FAMILIES)}")
    return FAMILIES[name]


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
