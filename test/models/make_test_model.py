#!/usr/bin/env python3
"""Writes a deterministic test checkpoint in the Hugging Face MarianMT layout.

  make_test_model.py OUT_DIR [--size tiny|small|base] [--activation relu|gelu|swish]
                     [--pre-norm] [--untied] [--separate-embeddings]
                     [--positions table|sinusoidal] [--no-logits-bias]
                     [--dtype F32|F16|BF16] [--eos-bias B] [--seed S]
                     [--sentences N] [--tokenizer] [--spm-vocab N]

OUT_DIR gets config.json, model.safetensors and source.ids (token ids, one
sentence a line, EOS last). Weights are random but seeded, so the same
options always give the same bytes. Needs only numpy.

--tokenizer also trains SentencePiece models on the small committed corpus
(Inputs/corpus.en for source.spm, Inputs/corpus.de for target.spm; needs
python3-sentencepiece) and writes vocab.json in Marian's layout: one shared
vocabulary, </s> = 0, <unk> = 1, the pieces of both models, <pad> last. The
model's vocabulary is then that vocabulary.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

# d_model, heads, ffn, encoder layers, decoder layers, vocabulary
SIZES = {
    "micro": (16, 2, 32, 1, 1, 50),
    "tiny": (64, 4, 256, 2, 2, 1000),
    "small": (256, 4, 1024, 3, 3, 8000),
    "base": (512, 8, 2048, 6, 6, 32000),
}
MAX_POSITIONS = 512


def sinusoids(n_pos, dim, interleaved):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...); Marian puts
    the sines in the first half and the cosines in the second."""
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    i = np.arange(dim // 2, dtype=np.float64)[None, :]
    angle = pos / np.power(10000.0, 2 * i / dim)
    out = np.zeros((n_pos, dim), dtype=np.float32)
    if interleaved:
        out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    else:
        out[:, :dim // 2], out[:, dim // 2:] = np.sin(angle), np.cos(angle)
    return out


def train_spm(text_path, vocab_size):
    """A unigram SentencePiece model of `text_path`, serialized; training is
    single-threaded and unshuffled, so the bytes are deterministic."""
    import io
    import sentencepiece as spm
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        input=text_path, model_writer=model, vocab_size=vocab_size,
        hard_vocab_limit=False, character_coverage=1.0, model_type="unigram",
        num_threads=1, shuffle_input_sentence=False, input_sentence_size=0,
        minloglevel=2)
    return model.getvalue()


def marian_vocab(*spm_models):
    """Marian's shared vocabulary over SentencePiece models: </s> 0, <unk> 1,
    then every piece (SentencePiece's own control and unknown symbols left
    out) in order of first appearance, <pad> last."""
    import sentencepiece as spm
    vocab = {"</s>": 0, "<unk>": 1}
    for proto in spm_models:
        sp = spm.SentencePieceProcessor(model_proto=proto)
        for i in range(sp.get_piece_size()):
            if sp.is_control(i) or sp.is_unknown(i):
                continue
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab


def build(args, vocab_override=None):
    d, heads, ffn, n_enc, n_dec, vocab = SIZES[args.size]
    if args.layers:
        n_enc = n_dec = args.layers
    if vocab_override:
        vocab = vocab_override
    rng = np.random.default_rng(args.seed)
    eos, pad = 0, vocab - 1
    config = {
        "architectures": ["MarianMTModel"], "model_type": "marian",
        "d_model": d, "encoder_layers": n_enc, "decoder_layers": n_dec,
        "encoder_attention_heads": heads, "decoder_attention_heads": heads,
        "encoder_ffn_dim": ffn, "decoder_ffn_dim": ffn,
        "vocab_size": vocab, "decoder_vocab_size": vocab,
        "max_position_embeddings": MAX_POSITIONS,
        "activation_function": args.activation,
        "normalize_before": args.pre_norm,
        "scale_embedding": True,
        "share_encoder_decoder_embeddings": not args.separate_embeddings,
        "tie_word_embeddings": not args.untied,
        "eos_token_id": eos, "pad_token_id": pad, "decoder_start_token_id": pad,
    }

    def normal(shape, std):
        return rng.normal(0.0, std, shape).astype(np.float32)

    t = {}

    def linear(name, out_f, in_f):
        t[name + ".weight"] = normal((out_f, in_f), (2.0 / (in_f + out_f)) ** 0.5)
        t[name + ".bias"] = normal((out_f,), 0.02)

    def layer_norm(name):
        t[name + ".weight"] = 1.0 + normal((d,), 0.05)
        t[name + ".bias"] = normal((d,), 0.05)

    def attention(name):
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            linear(f"{name}.{proj}", d, d)

    def feed_forward(prefix):
        linear(prefix + ".fc1", ffn, d)
        linear(prefix + ".fc2", d, ffn)
        layer_norm(prefix + ".final_layer_norm")

    if args.separate_embeddings:
        t["model.encoder.embed_tokens.weight"] = normal((vocab, d), d ** -0.5)
        t["model.decoder.embed_tokens.weight"] = normal((vocab, d), d ** -0.5)
    else:
        t["model.shared.weight"] = normal((vocab, d), d ** -0.5)
    if args.positions == "table":
        table = sinusoids(MAX_POSITIONS, d, interleaved=False)
        t["model.encoder.embed_positions.weight"] = table
        t["model.decoder.embed_positions.weight"] = table
    for i in range(n_enc):
        p = f"model.encoder.layers.{i}"
        attention(p + ".self_attn")
        layer_norm(p + ".self_attn_layer_norm")
        feed_forward(p)
    for i in range(n_dec):
        p = f"model.decoder.layers.{i}"
        attention(p + ".self_attn")
        layer_norm(p + ".self_attn_layer_norm")
        attention(p + ".encoder_attn")
        layer_norm(p + ".encoder_attn_layer_norm")
        feed_forward(p)
    if args.pre_norm:
        layer_norm("model.encoder.layer_norm")
        layer_norm("model.decoder.layer_norm")
    if args.untied:
        t["lm_head.weight"] = normal((vocab, d), d ** -0.5)
    if not args.no_logits_bias:
        t["final_logits_bias"] = normal((1, vocab), 0.02)
        # Random models rarely pick EOS; a bias makes sentences end at
        # varied lengths, so tests exercise finished hypotheses.
        t["final_logits_bias"][0, eos] += args.eos_bias

    source_rng = np.random.default_rng(args.seed + 1)
    sentences = []
    for _ in range(args.sentences):
        n = int(source_rng.integers(3, 24))
        sentences.append(source_rng.integers(2, vocab - 1, n).tolist() + [eos])
    return config, t, sentences


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--size", default="tiny", choices=SIZES)
    ap.add_argument("--activation", default="relu", choices=["relu", "gelu", "swish", "silu"])
    ap.add_argument("--pre-norm", action="store_true")
    ap.add_argument("--untied", action="store_true", help="separate lm_head.weight")
    ap.add_argument("--separate-embeddings", action="store_true",
                    help="encoder and decoder embedding tables instead of model.shared")
    ap.add_argument("--positions", default="table", choices=["table", "sinusoidal"],
                    help="store position tables, or leave them to be computed")
    ap.add_argument("--no-logits-bias", action="store_true")
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--eos-bias", type=float, default=0.0,
                    help="added to EOS's logits bias")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int,
                    help="encoder and decoder layers instead of the size's")
    ap.add_argument("--sentences", type=int, default=16)
    ap.add_argument("--tokenizer", action="store_true",
                    help="train source.spm/target.spm on Inputs/corpus.{en,de}, write vocab.json")
    ap.add_argument("--spm-vocab", type=int, default=300,
                    help="pieces per SentencePiece model (at most; the corpus is small)")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    vocab = None
    if args.tokenizer:
        inputs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs")
        source = train_spm(os.path.join(inputs, "corpus.en"), args.spm_vocab)
        target = train_spm(os.path.join(inputs, "corpus.de"), args.spm_vocab)
        vocab = marian_vocab(source, target)
        for name, proto in (("source.spm", source), ("target.spm", target)):
            with open(os.path.join(args.out, name), "wb") as f:
                f.write(proto)
        with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False, indent=2)
    config, tensors, sentences = build(args, len(vocab) if vocab else None)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    safetensors_io.write(os.path.join(args.out, "model.safetensors"), tensors, args.dtype)
    with open(os.path.join(args.out, "source.ids"), "w") as f:
        for s in sentences:
            f.write(" ".join(map(str, s)) + "\n")


if __name__ == "__main__":
    main()
