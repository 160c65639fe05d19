#!/usr/bin/env python3
"""Trains the tiny known-answer models of test/models/families/.

  train_family_model.py bart|mbart|m2m_100|t5|all [--out DIR] [--steps N]
                        [--check] [--seed S]

Each model is a small Transformer of the family (d_model 64, 2 + 2 layers,
4 heads, FFN 128, 20 words) trained with PyTorch on a task whose answer is
known, then written by make_family_model.py's writer with Hugging Face's
names and layout:

  bart     source <s> w1..wn </s>                 output <s> wn..w1
           (forced_bos_token_id 0, as BART's config forces <s>)
  mbart    source xx_XX w1..wn </s> (mBART-50)    output de_DE wn..w1  (reverse)
                                                  output fr_XX w1..wn  (copy)
  m2m_100  source __xx__ w1..wn </s>              output __de__ wn..w1 (reverse)
                                                  output __fr__ w1..wn (copy)
  t5       source <2de> w1..wn </s> (MADLAD-400)  output wn..w1        (reverse)
           source <2fr> w1..wn </s>               output w1..wn        (copy)

For mbart and m2m_100, the forced first target token (the target
language, given as a target prefix) chooses the task; the source language
(en, es or it) does not matter. For t5 (a MADLAD-400-like model_type t5:
gated-gelu, untied lm_head, 4 heads of d_kv 8 over d_model 64, FFN 128,
3 + 3 layers, 3000 steps, vocabulary 34 of which 20 words) the source's target language token
chooses it, and the decoder starts from <pad> with nothing forced. n is
1..10. The vocabularies are laid out as the families' tokenizers number
them (make_family_model.Vocabulary, T5Vocabulary);
m2m_100 gets a vocab.json whose size puts __de__ at len(vocab.json) + 16,
as M2M100Tokenizer numbers it.

OUT/FAMILY/ gets config.json, generation_config.json, model.safetensors,
source.ids (held-out inputs: none of them is trained on) and the known
answers, as id lines: expected.ids (bart; t5, whose source lines
alternate <2de> and <2fr>, with prefix.ids: each answer's first word, for
prefix-constrained decoding to the same answer), or for mbart and m2m_100
prefix.ids (per line the target language token: de and fr alternate),
expected.ids (the answers with those prefixes), expected-de.ids and
expected-fr.ids (every line with that one prefix). Training is
deterministic (seeded, one thread, examples drawn from one seeded
generator) and then checked: its own greedy decoding must be exact on
4000 held-out examples. --check also runs the reference (greedy and beam 4)
on the written files and requires the known answers.
"""
import argparse
import ctypes
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_family_model as mfm  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import families  # noqa: E402

ALL = mfm.FAMILIES + ("t5",)

WORDS = 20
MAX_WORDS = 10
D, HEADS, FFN, LAYERS = 64, 4, 128, 2
POSITIONS = 64
SOURCE_LANGUAGES = ["en", "es", "it"]
TASKS = {"de": "reverse", "fr": "copy"}  # target language -> task
TEST_SENTENCES = 24
# t5: 4 heads of width 8 over d_model 64 (heads * d_kv != d_model, as in
# mT5); 3 + 3 layers (with 2 + 2, or 2500 steps, a few of the 8000
# validation examples stay wrong: positions past 8 share buckets, which the
# encoder must tell apart from both ends); < 1 MB.
# Vocabulary: <pad> </s> <unk>, 20 words, 5 <2xx>, 2 sentinels, 4 rows unused.
T5_D_KV = 8
T5_FFN = FFN
T5_LAYERS = 3
T5_STEPS = 3000
T5_VOCAB = (3 + WORDS + len(mfm.T5_LANGUAGES) + 2 + 4)


def t5_vocabulary():
    return mfm.T5Vocabulary(T5_VOCAB, sentinels=2, unused=4)


def vocab_size(family):
    if family == "t5":
        return T5_VOCAB
    extra = {"bart": 1, "mbart": len(mfm.MBART50_CODES) + 1,
             "m2m_100": len(mfm.M2M100_CODES) + mfm.M2M100_MADEUP_WORDS}[family]
    return 4 + WORDS + extra


class Task:
    """Examples of the family's task: (source ids, target ids), the target
    being what the decoder must output (its prefix included, EOS last)."""

    def __init__(self, family):
        self.family = family
        if family == "t5":
            self.vocab = t5_vocabulary()
        else:
            self.vocab = mfm.Vocabulary(family, vocab_size(family))
        assert self.vocab.words_end - self.vocab.words_begin == WORDS

    def example(self, rng, target_language=None):
        n = int(rng.integers(1, MAX_WORDS + 1))
        words = rng.integers(self.vocab.words_begin, self.vocab.words_end, n).tolist()
        return self.make(words, rng, target_language)

    def make(self, words, rng, target_language=None):
        if self.family == "bart":
            return self.vocab.frame_source(words), [mfm.BOS] + words[::-1] + [mfm.EOS]
        if self.family == "t5":
            if target_language is None:
                target_language = list(TASKS)[int(rng.integers(0, len(TASKS)))]
            out = words[::-1] if TASKS[target_language] == "reverse" else list(words)
            return self.vocab.frame_source(words, target_language), out + [mfm.T5_EOS]
        source_language = SOURCE_LANGUAGES[int(rng.integers(0, len(SOURCE_LANGUAGES)))]
        if target_language is None:
            target_language = list(TASKS)[int(rng.integers(0, len(TASKS)))]
        out = words[::-1] if TASKS[target_language] == "reverse" else list(words)
        return (self.vocab.frame_source(words, source_language),
                [self.vocab.language(target_language)] + out + [mfm.EOS])


class Net(torch.nn.Module):
    """The family's Transformer over parameters named as Hugging Face names
    them, run on whole sequences (teacher forcing)."""

    def __init__(self, family, config, shapes, generator):
        super().__init__()
        self.family, self.c = family, config
        self.pre_norm = family != "bart"
        self.scale = math.sqrt(config["d_model"]) if config["scale_embedding"] else 1.0
        self.act = torch.relu if config["activation_function"] == "relu" else torch.nn.functional.gelu
        self.names = list(shapes)
        for name, shape in shapes.items():
            if name.endswith("norm.weight") or name.endswith("layernorm_embedding.weight"):
                t = torch.ones(shape)
            elif name.endswith(".bias") or name == "final_logits_bias":
                t = torch.zeros(shape)
            elif name == "model.shared.weight" or "embed_positions" in name:
                t = torch.randn(shape, generator=generator) * shape[1] ** -0.5
            else:
                t = torch.randn(shape, generator=generator) * (2.0 / (shape[0] + shape[1])) ** 0.5
            self.register_parameter(name.replace(".", "__"), torch.nn.Parameter(t))
        if family == "m2m_100":
            self.register_buffer("sinusoids", self.fairseq_table(POSITIONS + 2, config["d_model"],
                                                                 config["pad_token_id"]))

    @staticmethod
    def fairseq_table(n, dim, padding_idx):
        # As fairseq and Hugging Face compute it, in float32.
        half = dim // 2
        step = math.log(10000) / (half - 1)
        freq = torch.exp(torch.arange(half, dtype=torch.float) * -step)
        angle = torch.arange(n, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
        table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
        table[padding_idx] = 0
        return table

    def w(self, name):
        return getattr(self, name.replace(".", "__"))

    def tensors(self):
        return {n: self.w(n).detach().numpy().astype(np.float32).copy() for n in self.names}

    def norm(self, x, name):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w(name + ".weight"),
                                              self.w(name + ".bias"), eps=1e-5)

    def linear(self, x, name):
        return x @ self.w(name + ".weight").T + self.w(name + ".bias")

    def embed(self, side, ids):
        pad = self.c["pad_token_id"]
        x = self.w("model.shared.weight")[ids] * self.scale
        if self.family == "m2m_100":
            real = (ids != pad).long()
            x = x + self.sinusoids[torch.cumsum(real, 1) * real + pad]
        else:
            x = x + self.w(f"model.{side}.embed_positions.weight")[2: 2 + ids.shape[1]]
            x = self.norm(x, f"model.{side}.layernorm_embedding")
        return x

    def attend(self, x, memory, name, hidden):
        b, sq, d = x.shape
        h = self.c["encoder_attention_heads"]

        def split(t):
            return t.view(b, -1, h, d // h).transpose(1, 2)
        q = split(self.linear(x, name + ".q_proj")) * (d // h) ** -0.5
        k, v = split(self.linear(memory, name + ".k_proj")), split(self.linear(memory, name + ".v_proj"))
        scores = (q @ k.transpose(-1, -2)).masked_fill(hidden, float("-inf"))
        out = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, sq, d)
        return self.linear(out, name + ".out_proj")

    def sub(self, x, norm, fn):
        if self.pre_norm:
            return x + fn(self.norm(x, norm))
        return self.norm(x + fn(x), norm)

    def ffn(self, x, p):
        return self.linear(self.act(self.linear(x, p + ".fc1")), p + ".fc2")

    def forward(self, src, dec):
        pad = self.c["pad_token_id"]
        src_hidden = (src == pad)[:, None, None, :]
        x = self.embed("encoder", src)
        for i in range(self.c["encoder_layers"]):
            p = f"model.encoder.layers.{i}"
            x = self.sub(x, p + ".self_attn_layer_norm",
                         lambda h: self.attend(h, h, p + ".self_attn", src_hidden))
            x = self.sub(x, p + ".final_layer_norm", lambda h: self.ffn(h, p))
        if self.pre_norm:
            x = self.norm(x, "model.encoder.layer_norm")
        memory = x
        t = dec.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)[None, None]
        y = self.embed("decoder", dec)
        for i in range(self.c["decoder_layers"]):
            p = f"model.decoder.layers.{i}"
            y = self.sub(y, p + ".self_attn_layer_norm",
                         lambda h: self.attend(h, h, p + ".self_attn", causal))
            y = self.sub(y, p + ".encoder_attn_layer_norm",
                         lambda h: self.attend(h, memory, p + ".encoder_attn", src_hidden))
            y = self.sub(y, p + ".final_layer_norm", lambda h: self.ffn(h, p))
        if self.pre_norm:
            y = self.norm(y, "model.decoder.layer_norm")
        logits = y @ self.w("model.shared.weight").T
        if "final_logits_bias" in self.names:
            logits = logits + self.w("final_logits_bias")
        return logits


class T5Net(torch.nn.Module):
    """The T5 model (modeling_t5.py's T5ForConditionalGeneration, untied,
    gated-gelu) over parameters named as Hugging Face names them, run on
    whole sequences (teacher forcing)."""

    def __init__(self, config, shapes, rng):
        super().__init__()
        self.c = config
        self.names = list(shapes)
        for name, a in mfm.t5_random_tensors(shapes, config["d_kv"], rng).items():
            if name.endswith("relative_attention_bias.weight"):
                a = a * np.float32(config["d_model"] ** -0.5)
            self.register_parameter(name.replace(".", "__"),
                                    torch.nn.Parameter(torch.from_numpy(a)))

    def w(self, name):
        return getattr(self, name.replace(".", "__"))

    def tensors(self):
        return {n: self.w(n).detach().numpy().astype(np.float32).copy() for n in self.names}

    def norm(self, x, name):
        return self.w(name + ".weight") * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    def lin(self, x, name):
        return x @ self.w(name + ".weight").T

    def bias(self, side, n):
        c = self.c
        pos = torch.arange(n)
        buckets = families.t5_bucket(pos[None, :] - pos[:, None], side == "encoder",
                                     c["relative_attention_num_buckets"],
                                     c["relative_attention_max_distance"])
        table = self.w(f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight")
        return table[buckets].permute(2, 0, 1)[None]

    def attend(self, x, memory, name, bias):
        b, sq, _ = x.shape
        h, dk = self.c["num_heads"], self.c["d_kv"]

        def split(t):
            return t.view(b, -1, h, dk).transpose(1, 2)
        q, k, v = (split(self.lin(x, name + ".q")), split(self.lin(memory, name + ".k")),
                   split(self.lin(memory, name + ".v")))
        out = torch.softmax(q @ k.transpose(-1, -2) + bias, -1) @ v
        return self.lin(out.transpose(1, 2).reshape(b, sq, h * dk), name + ".o")

    def ffn(self, x, p):
        return self.lin(families.gelu_tanh(self.lin(x, p + ".wi_0")) * self.lin(x, p + ".wi_1"),
                        p + ".wo")

    def forward(self, src, dec):
        c = self.c
        emb = self.w("shared.weight")
        hidden = torch.zeros(src.shape).masked_fill(src == c["pad_token_id"], float("-inf"))
        hidden = hidden[:, None, None, :]
        x = emb[src]
        bias = self.bias("encoder", src.shape[1]) + hidden
        for i in range(c["num_layers"]):
            p = f"encoder.block.{i}.layer"
            h = self.norm(x, p + ".0.layer_norm")
            x = x + self.attend(h, h, p + ".0.SelfAttention", bias)
            x = x + self.ffn(self.norm(x, p + ".1.layer_norm"), p + ".1.DenseReluDense")
        memory = self.norm(x, "encoder.final_layer_norm")
        t = dec.shape[1]
        causal = torch.zeros(t, t).masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1),
                                               float("-inf"))
        self_bias = self.bias("decoder", t) + causal
        y = emb[dec]
        for i in range(c["num_decoder_layers"]):
            p = f"decoder.block.{i}.layer"
            h = self.norm(y, p + ".0.layer_norm")
            y = y + self.attend(h, h, p + ".0.SelfAttention", self_bias)
            y = y + self.attend(self.norm(y, p + ".1.layer_norm"), memory,
                                p + ".1.EncDecAttention", hidden)
            y = y + self.ffn(self.norm(y, p + ".2.layer_norm"), p + ".2.DenseReluDense")
        return self.lin(self.norm(y, "decoder.final_layer_norm"), "lm_head")


def pad_batch(seqs, pad):
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s)
    return out


@torch.no_grad()
def greedy(net, sources, prefixes, max_len=MAX_WORDS + 3):
    """Greedy outputs (EOS and what follows dropped) with forced prefixes."""
    c = net.c
    src = pad_batch(sources, c["pad_token_id"])
    dec = torch.full((len(sources), 1), c["decoder_start_token_id"], dtype=torch.long)
    for step in range(max_len):
        logits = net(src, dec)[:, -1]
        logits[:, c["pad_token_id"]] = float("-inf")
        nxt = logits.argmax(-1)
        for i, p in enumerate(prefixes):
            if step < len(p):
                nxt[i] = p[step]
        dec = torch.cat([dec, nxt[:, None]], 1)
    outs = []
    for row in dec[:, 1:].tolist():
        outs.append(row[:row.index(c["eos_token_id"])] if c["eos_token_id"] in row else row)
    return outs


def held_out(task, seed):
    """The test and validation examples: words lists never trained on."""
    rng = np.random.default_rng(seed + 1000)
    test, seen = [], set()
    while len(test) < TEST_SENTENCES:
        # Lengths 1..10 all present: the n-th sentence has 1 + n % 10 words.
        n = 1 + len(test) % MAX_WORDS
        words = rng.integers(task.vocab.words_begin, task.vocab.words_end, n).tolist()
        if tuple(words) not in seen:
            seen.add(tuple(words))
            test.append(words)
    valid = []
    while len(valid) < 4000:
        n = int(rng.integers(1, MAX_WORDS + 1))
        words = rng.integers(task.vocab.words_begin, task.vocab.words_end, n).tolist()
        if n > 2 and tuple(words) not in seen:
            seen.add(tuple(words))
            valid.append(words)
    # Words lists of one and two words are too few to hold out.
    return test, valid, {w for w in seen if len(w) > 2}


def one_thread():
    """Torch and its BLAS (Debian's: OpenBLAS) on one thread: the same sums
    in the same order every run, and on a shared host no spinning threads
    (two torch threads at nice 19 beside a build ran 12x slower here)."""
    torch.set_num_threads(1)
    try:
        ctypes.CDLL("libblas.so.3").openblas_set_num_threads(1)
    except (OSError, AttributeError):
        pass


def train(family, steps, seed, log):
    torch.manual_seed(seed)
    one_thread()
    task = Task(family)
    V = vocab_size(family)
    if family == "t5":
        config = families.t5_config(mfm.t5_config_json(
            "t5", D, HEADS, T5_D_KV, T5_FFN, T5_LAYERS, T5_LAYERS, V, "gated-gelu", tied=False))
        shapes = mfm.t5_tensor_shapes(D, HEADS, T5_D_KV, T5_FFN, T5_LAYERS, T5_LAYERS, V,
                                      gated=True, tied=False,
                                      buckets=config["relative_attention_num_buckets"])
        net = T5Net(config, shapes, np.random.default_rng(seed))
    else:
        config = mfm.config_json(family, D, HEADS, FFN, LAYERS, LAYERS, V, POSITIONS)
        shapes = mfm.tensor_shapes(family, D, FFN, LAYERS, LAYERS, V, POSITIONS)
        net = Net(family, config, shapes, torch.Generator().manual_seed(seed))
    test, valid, excluded = held_out(task, seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3, betas=(0.9, 0.98))
    warmup = 200
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.05, 1 - s / steps)))
    started = time.perf_counter()
    pad, start = config["pad_token_id"], config["decoder_start_token_id"]
    for step in range(steps):
        batch = []
        while len(batch) < 64:
            src, tgt = task.example(rng)
            words = tuple(src[1:-1])
            if words not in excluded:
                batch.append((src, tgt))
        src = pad_batch([s for s, _ in batch], pad)
        tgt = pad_batch([t for _, t in batch], pad)
        dec = torch.cat([torch.full((len(batch), 1), start, dtype=torch.long), tgt[:, :-1]], 1)
        logits = net(src, dec)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1),
                                                 ignore_index=pad)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 500 == 0 or step == steps - 1:
            log(f"{family}: step {step} loss {loss.item():.4f} "
                f"({time.perf_counter() - started:.0f} s)")
    net.eval()
    return task, net, config, test, valid, time.perf_counter() - started


def evaluate(task, net, words_lists, log, what):
    """Exact-match accuracy of greedy decoding, every task."""
    rng = np.random.default_rng(7)
    languages = [None] if task.family == "bart" else list(TASKS)
    wrong = total = 0
    for language in languages:
        pairs = [task.make(w, rng, language) for w in words_lists]
        prefixes = [[] if task.family == "t5" else t[:1] for _, t in pairs]
        outs = []
        for i in range(0, len(pairs), 500):
            outs += greedy(net, [s for s, _ in pairs[i:i + 500]], prefixes[i:i + 500])
        for (_, t), o in zip(pairs, outs):
            total += 1
            wrong += o != t[:-1]
    log(f"{task.family}: {what}: {total - wrong}/{total} exact")
    return wrong == 0


def write(task, net, config, test, out):
    family = task.family
    rng = np.random.default_rng(11)
    lines = lambda rows: "".join(" ".join(map(str, r)) + "\n" for r in rows)  # noqa: E731
    extra = {}
    if family == "bart":
        pairs = [task.make(w, rng) for w in test]
        extra["expected.ids"] = lines(t[:-1] for _, t in pairs)
    elif family == "t5":
        languages = [list(TASKS)[i % len(TASKS)] for i in range(len(test))]
        pairs = [task.make(w, rng, lang) for w, lang in zip(test, languages)]
        extra["expected.ids"] = lines(t[:-1] for _, t in pairs)
        extra["prefix.ids"] = lines([t[0]] for _, t in pairs)
    else:
        languages = [list(TASKS)[i % len(TASKS)] for i in range(len(test))]
        pairs = [task.make(w, rng, lang) for w, lang in zip(test, languages)]
        extra["prefix.ids"] = lines([t[0]] for _, t in pairs)
        extra["expected.ids"] = lines(t[:-1] for _, t in pairs)
        for lang in TASKS:
            tid = task.vocab.language(lang)
            extra[f"expected-{lang}.ids"] = lines(
                task.make(src[1:-1], rng, lang)[1][:-1] for src, _ in pairs)
            assert all(line.split()[0] == str(tid) for line in extra[f"expected-{lang}.ids"].splitlines())
    if family == "m2m_100":
        import json
        extra["vocab.json"] = json.dumps(task.vocab.m2m100_vocab_json(), ensure_ascii=False,
                                         indent=2) + "\n"
    if family == "t5":  # as it was written, without the reference's added keys
        config = {k: v for k, v in config.items()
                  if k not in ("encoder_layers", "decoder_layers", "max_position_embeddings")}
    mfm.write_checkpoint(out, config, net.tensors(), "F32", sources=[s for s, _ in pairs],
                         extra_files=extra)


def check(family, out, log):
    """The reference must give the known answers, greedy and beam 4."""
    ref = os.path.join(HERE, "..", "reference", "reference.py")
    src = os.path.join(out, "source.ids")
    runs = []
    if family == "bart":
        runs.append(([], "expected.ids"))
    elif family == "t5":
        runs.append(([], "expected.ids"))
        runs.append((["--target-prefix-file", os.path.join(out, "prefix.ids")], "expected.ids"))
    else:
        runs.append((["--target-prefix-file", os.path.join(out, "prefix.ids")], "expected.ids"))
        vocab = mfm.Vocabulary(family, vocab_size(family))
        for lang in TASKS:
            runs.append((["--target-prefix", str(vocab.language(lang))], f"expected-{lang}.ids"))
    ok = True
    for extra, expected in runs:
        want = open(os.path.join(out, expected)).read()
        for beam in ("1", "4"):
            got = subprocess.run([sys.executable, ref, out, src, "-b", beam] + extra,
                                 check=True, capture_output=True, text=True).stdout
            same = got == want
            ok &= same
            log(f"{family}: reference -b {beam} {' '.join(extra)}: "
                f"{'equals' if same else 'DIFFERS FROM'} {expected}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=ALL + ("all",))
    ap.add_argument("--out", default=os.path.join(HERE, "families"))
    ap.add_argument("--steps", type=int, help="default: 2000, t5 3000")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true",
                    help="run the reference on the written model and require the known answers")
    args = ap.parse_args()

    def log(message):
        print(message, file=sys.stderr, flush=True)
    failed = False
    for family in (ALL if args.family == "all" else [args.family]):
        steps = args.steps or (T5_STEPS if family == "t5" else 2000)
        task, net, config, test, valid, seconds = train(family, steps, args.seed, log)
        log(f"{family}: trained in {seconds:.0f} s")
        good = evaluate(task, net, test, log, "test") & evaluate(task, net, valid, log, "validation")
        out = os.path.join(args.out, family)
        write(task, net, config, test, out)
        if args.check:
            good &= check(family, out, log)
        failed |= not good
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
