#!/usr/bin/env python3
"""Trains the bundled English -> German model and exports it in the Hugging
Face MarianMT layout that tfmc imports.

  train.py [--work DIR] [--out DIR] [--minutes M] [--steps N] [options]
  train.py --init-from MODEL_DIR [--minutes M] [options]
  train.py --export-only [--work DIR] [--out DIR]

  1. A shared SentencePiece model (unigram) on the English and German sides
     of examples/train/data/train.tsv.xz, with Marian's ids: </s> = 0 (EOS),
     <unk> = 1, the pieces, and <pad> = vocab_size - 1 (also the decoder's
     start token), which SentencePiece does not know and vocab.json adds.
  2. A Transformer written here with the math of test/reference/reference.py:
     post-norm (LN(x + f(x))), shared embeddings tied to the output layer,
     embeddings scaled by sqrt(d_model), sinusoidal positions (sines in the
     first half, cosines in the second), final logits bias, ReLU. Trained
     with teacher forcing (source + EOS; decoder input <pad> + target; labels
     target + EOS), label smoothing 0.1, Adam (0.9, 0.98) with linear warmup
     and inverse-square-root decay (and with --cooldown N, a linear fall to
     zero over the last N steps before --steps), batches of about
     --batch-tokens tokens of similar lengths, dropout 0.1.
  3. Every --eval-every steps the development loss; the best checkpoint by
     that loss is kept (WORK/best.pt), the latest too (WORK/last.pt, which
     --resume continues from). Training stops after --steps steps or
     --minutes minutes of wall clock, whichever comes first. SIGTERM stops
     after the current step as if the time were up (evaluated, saved,
     exported); SIGUSR1 pauses the run until SIGCONT (to measure something
     else on the machine), and the pause does not count as training time.
  4. The best checkpoint exported to OUT: config.json, model.safetensors
     (F16), source.spm = target.spm, vocab.json; its metadata says where in
     the run it was (step, epoch, batch of the epoch, training seconds).

--init-from continues a run from an exported model alone (the committed
one: optimizer states are not kept in the repository): its architecture,
weights, SentencePiece model and place in the schedule and batch order, with
a fresh Adam whose learning rate warms up again to the schedule's over
--rewarm steps (a warm restart).

Run with /usr/bin/python3 (Debian's python3-torch, python3-sentencepiece).
Everything is seeded; on the same machine and thread count the run repeats.
"""
import argparse
import ctypes
import json
import lzma
import math
import os
import random
import shutil
import signal
import sys
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import safetensors_io  # noqa: E402

EOS, UNK = 0, 1


def log(msg):
    print(time.strftime("%H:%M:%S ") + msg, flush=True)


# ----------------------------------------------------------------------------
# Data


def read_tsv(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f if line.strip()]


def train_spm(train_pairs, work, vocab_size, seed):
    """Trains the shared SentencePiece model; returns its path. Ids: </s> 0,
    <unk> 1; vocab_size - 1 pieces, <pad> comes after them."""
    text = os.path.join(work, "spm_train.txt")
    with open(text, "w", encoding="utf-8") as f:
        for en, de in train_pairs:
            f.write(en + "\n" + de + "\n")
    prefix = os.path.join(work, "spm")
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, model_type="unigram",
        vocab_size=vocab_size - 1, character_coverage=0.9999,
        eos_id=EOS, unk_id=UNK, bos_id=-1, pad_id=-1,
        input_sentence_size=0, shuffle_input_sentence=False,
        num_threads=2, minloglevel=2)
    return prefix + ".model"


class Vocab:
    def __init__(self, spm_path):
        self.sp = spm.SentencePieceProcessor(model_file=spm_path)
        self.pieces = [self.sp.id_to_piece(i) for i in range(self.sp.get_piece_size())]
        self.pad = len(self.pieces)
        self.size = self.pad + 1

    def to_json(self):
        v = {p: i for i, p in enumerate(self.pieces)}
        v["<pad>"] = self.pad
        return v

    def encode(self, texts):
        return self.sp.encode(texts)

    def decode(self, ids):
        return self.sp.decode([i for i in ids if i < self.pad])


def make_batches(examples, batch_tokens, rng):
    """examples: [(src ids, tgt ids)]; batches of similar lengths with at most
    batch_tokens padded source + target tokens; shuffled order."""
    order = sorted(range(len(examples)),
                   key=lambda i: (len(examples[i][1]), len(examples[i][0]), rng.random()))
    batches, cur, cur_max = [], [], 0
    for i in order:
        s, t = examples[i]
        m = max(cur_max, len(s) + len(t) + 1)
        if cur and m * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, m = [], len(s) + len(t) + 1
        cur.append(i)
        cur_max = m
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def collate(examples, idx, pad):
    srcs = [examples[i][0] + [EOS] for i in idx]
    tgts = [examples[i][1] for i in idx]
    S, T = max(map(len, srcs)), max(map(len, tgts)) + 1
    src = torch.full((len(idx), S), pad, dtype=torch.long)
    dec_in = torch.full((len(idx), T), pad, dtype=torch.long)
    labels = torch.full((len(idx), T), pad, dtype=torch.long)
    for b, (s, t) in enumerate(zip(srcs, tgts)):
        src[b, :len(s)] = torch.tensor(s)
        dec_in[b, :len(t) + 1] = torch.tensor([pad] + t)
        labels[b, :len(t) + 1] = torch.tensor(t + [EOS])
    return src, dec_in, labels


# ----------------------------------------------------------------------------
# Model: module names are those of the Hugging Face MarianMT checkpoints, so
# the state dict is the export.


def sinusoids(n_pos, dim):
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    i = np.arange(dim // 2, dtype=np.float64)[None, :]
    angle = pos / np.power(10000.0, 2 * i / dim)
    out = np.zeros((n_pos, dim), dtype=np.float32)
    out[:, :dim // 2], out[:, dim // 2:] = np.sin(angle), np.cos(angle)
    return torch.from_numpy(out)


class Attention(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.d, self.h, self.dropout = d, heads, dropout
        self.q_proj, self.k_proj = nn.Linear(d, d), nn.Linear(d, d)
        self.v_proj, self.out_proj = nn.Linear(d, d), nn.Linear(d, d)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.h, self.d // self.h).transpose(1, 2)

    def forward(self, x, mem, mask):
        """mask: additive, broadcastable to [B, H, Sq, Sk]."""
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(mem)), self.split(self.v_proj(mem))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d // self.h) + mask
        attn = F.dropout(torch.softmax(scores, dim=-1), self.dropout, self.training)
        out = (attn @ v).transpose(1, 2).reshape(x.shape)
        return self.out_proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ffn, dropout):
        super().__init__()
        self.self_attn = Attention(d, heads, dropout)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.dropout = dropout

    def forward(self, x, mask):
        drop = lambda t: F.dropout(t, self.dropout, self.training)  # noqa: E731
        x = self.self_attn_layer_norm(x + drop(self.self_attn(x, x, mask)))
        h = self.fc2(drop(F.relu(self.fc1(x))))
        return self.final_layer_norm(x + drop(h))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ffn, dropout):
        super().__init__()
        self.self_attn = Attention(d, heads, dropout)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = Attention(d, heads, dropout)
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.dropout = dropout

    def forward(self, x, mem, self_mask, mem_mask):
        drop = lambda t: F.dropout(t, self.dropout, self.training)  # noqa: E731
        x = self.self_attn_layer_norm(x + drop(self.self_attn(x, x, self_mask)))
        x = self.encoder_attn_layer_norm(x + drop(self.encoder_attn(x, mem, mem_mask)))
        h = self.fc2(drop(F.relu(self.fc1(x))))
        return self.final_layer_norm(x + drop(h))


class Stack(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)


class Inner(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.shared = nn.Embedding(a.vocab, a.d_model)
        self.encoder = Stack([EncoderLayer(a.d_model, a.heads, a.ffn, a.dropout)
                              for _ in range(a.encoder_layers)])
        self.decoder = Stack([DecoderLayer(a.d_model, a.heads, a.ffn, a.dropout)
                              for _ in range(a.decoder_layers)])


class Marian(nn.Module):
    def __init__(self, a, pad):
        super().__init__()
        self.a, self.pad = a, pad
        self.model = Inner(a)
        self.final_logits_bias = nn.Parameter(torch.zeros(1, a.vocab))
        self.register_buffer("positions", sinusoids(a.max_positions, a.d_model), persistent=False)
        self.scale = math.sqrt(a.d_model)
        nn.init.normal_(self.model.shared.weight, 0.0, a.d_model ** -0.5)
        for name, p in self.named_parameters():
            if p.dim() == 2 and "shared" not in name:
                nn.init.xavier_uniform_(p)
            elif name.endswith(".bias") and "layer_norm" not in name:
                nn.init.zeros_(p)

    def embed(self, ids):
        x = self.model.shared(ids) * self.scale + self.positions[: ids.shape[1]]
        return F.dropout(x, self.a.dropout, self.training)

    def forward(self, src, dec_in):
        src_mask = torch.zeros(src.shape, dtype=torch.float32)
        src_mask = src_mask.masked_fill(src == self.pad, float("-inf"))[:, None, None, :]
        x = self.embed(src)
        for layer in self.model.encoder.layers:
            x = layer(x, src_mask)
        T = dec_in.shape[1]
        causal = torch.full((T, T), float("-inf")).triu(1)
        y = self.embed(dec_in)
        for layer in self.model.decoder.layers:
            y = layer(y, x, causal, src_mask)
        return y @ self.model.shared.weight.T + self.final_logits_bias


def loss_of(model, batch, smoothing):
    src, dec_in, labels = batch
    logits = model(src, dec_in)
    flat = logits.reshape(-1, logits.shape[-1])
    loss = F.cross_entropy(flat, labels.reshape(-1), ignore_index=model.pad,
                           label_smoothing=smoothing, reduction="sum")
    nll = F.cross_entropy(flat, labels.reshape(-1), ignore_index=model.pad, reduction="sum")
    return loss, nll, int((labels != model.pad).sum())


@torch.no_grad()
def dev_loss(model, dev_examples, pad):
    model.eval()
    total, tokens = 0.0, 0
    order = sorted(range(len(dev_examples)), key=lambda i: len(dev_examples[i][1]))
    for begin in range(0, len(order), 64):
        batch = collate(dev_examples, order[begin:begin + 64], pad)
        _, nll, n = loss_of(model, batch, 0.0)
        total += nll.item()
        tokens += n
    model.train()
    return total / tokens


# ----------------------------------------------------------------------------
# Export


def export(model, vocab, spm_path, out, meta):
    a = model.a
    os.makedirs(out, exist_ok=True)
    config = {
        "architectures": ["MarianMTModel"], "model_type": "marian",
        "d_model": a.d_model, "encoder_layers": a.encoder_layers,
        "decoder_layers": a.decoder_layers,
        "encoder_attention_heads": a.heads, "decoder_attention_heads": a.heads,
        "encoder_ffn_dim": a.ffn, "decoder_ffn_dim": a.ffn,
        "vocab_size": vocab.size, "decoder_vocab_size": vocab.size,
        "max_position_embeddings": a.max_positions,
        "activation_function": "relu", "normalize_before": False,
        "scale_embedding": True, "share_encoder_decoder_embeddings": True,
        "tie_word_embeddings": True,
        "eos_token_id": EOS, "pad_token_id": vocab.pad,
        "decoder_start_token_id": vocab.pad,
        "forced_eos_token_id": EOS, "num_beams": 4, "max_length": 256,
    }
    tensors = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    table = model.positions.numpy()
    tensors["model.encoder.embed_positions.weight"] = table
    tensors["model.decoder.embed_positions.weight"] = table
    tensors = dict(sorted(tensors.items()))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    safetensors_io.write(os.path.join(out, "model.safetensors"), tensors, "F16",
                         metadata={"format": "pt", **{k: str(v) for k, v in meta.items()}})
    shutil.copyfile(spm_path, os.path.join(out, "source.spm"))
    shutil.copyfile(spm_path, os.path.join(out, "target.spm"))
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab.to_json(), f, ensure_ascii=False, indent=1)
        f.write("\n")


def read_exported(model_dir):
    """What --init-from continues from: {"args": architecture, "weights":
    state dict, "meta": step, epoch, batch, dev_nll, train_seconds}."""
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    args = {"d_model": c["d_model"], "heads": c["encoder_attention_heads"],
            "ffn": c["encoder_ffn_dim"], "encoder_layers": c["encoder_layers"],
            "decoder_layers": c["decoder_layers"],
            "max_positions": c["max_position_embeddings"]}
    path = os.path.join(model_dir, "model.safetensors")
    header, _ = safetensors_io.read_raw(path)
    meta = {k: (float(v) if k == "dev_nll" else int(v))
            for k, v in header["__metadata__"].items() if k != "format"}
    if "batch" not in meta:
        if meta["epoch"] != 0:
            sys.exit(f"{path}: the metadata does not say which batch of epoch "
                     f"{meta['epoch']} the model stopped at")
        meta["batch"] = meta["step"]  # in the first epoch, one batch a step
    weights = {k: torch.from_numpy(v) for k, v in safetensors_io.read(path).items()
               if not k.endswith("embed_positions.weight")}
    return {"args": args, "weights": weights, "meta": meta}


# ----------------------------------------------------------------------------


def set_threads(n):
    """Debian's torch does its matmuls in OpenBLAS; OpenBLAS's threads and
    torch's pool on top of each other oversubscribe the cores (2-3x slower
    steps measured here), so n BLAS threads and one torch thread when the
    BLAS is OpenBLAS, else n torch threads (as test/reference/reference.py)."""
    try:
        ctypes.CDLL("libblas.so.3").openblas_set_num_threads(n)
        torch.set_num_threads(1)
    except (OSError, AttributeError):
        torch.set_num_threads(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--out", default=os.path.join(ROOT, "examples", "en-de"))
    ap.add_argument("--vocab", type=int, default=4000)
    ap.add_argument("--d-model", type=int, default=192)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=768)
    ap.add_argument("--encoder-layers", type=int, default=3)
    ap.add_argument("--decoder-layers", type=int, default=2)
    ap.add_argument("--max-positions", type=int, default=512)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--batch-tokens", type=int, default=2500)
    ap.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    ap.add_argument("--warmup", type=int, default=250)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--cooldown", type=int, default=0, metavar="N",
                    help="over the last N steps before --steps the learning rate "
                         "falls linearly to zero")
    ap.add_argument("--minutes", type=float, default=42.0)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=96, help="longer sides are cut")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--init-from", metavar="MODEL_DIR",
                    help="continue from an exported model with a fresh optimizer")
    ap.add_argument("--rewarm", type=int, default=200,
                    help="steps of learning-rate warmup after --init-from")
    ap.add_argument("--export-only", action="store_true",
                    help="export WORK/best.pt to OUT and stop")
    a = ap.parse_args()

    init = read_exported(a.init_from) if a.init_from else None
    if init:
        for key, value in init["args"].items():
            setattr(a, key, value)
    set_threads(a.threads)
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    os.makedirs(a.work, exist_ok=True)
    spm_path = os.path.join(a.work, "spm.model")

    if a.export_only:
        ckpt = torch.load(os.path.join(a.work, "best.pt"))
        vocab = Vocab(spm_path)
        ma = argparse.Namespace(**ckpt["args"])
        model = Marian(ma, vocab.pad)
        model.load_state_dict(ckpt["model"])
        export(model, vocab, spm_path, a.out, ckpt["meta"])
        log(f"exported {a.work}/best.pt (step {ckpt['meta']['step']}) to {a.out}")
        return

    train_pairs = read_tsv(os.path.join(a.data, "train.tsv.xz"))
    dev_pairs = read_tsv(os.path.join(a.data, "dev.tsv"))
    log(f"{len(train_pairs)} training pairs, {len(dev_pairs)} development pairs")
    if init:
        shutil.copyfile(os.path.join(a.init_from, "source.spm"), spm_path)
    elif not (a.resume and os.path.exists(spm_path)):
        spm_path = train_spm(train_pairs, a.work, a.vocab, a.seed)
    vocab = Vocab(spm_path)
    a.vocab = vocab.size
    log(f"SentencePiece: {vocab.size} ids (<pad> = {vocab.pad})")

    def encode(pairs):
        src = vocab.encode([en for en, _ in pairs])
        tgt = vocab.encode([de for _, de in pairs])
        return [(s[: a.max_tokens], t[: a.max_tokens]) for s, t in zip(src, tgt)]
    train_ex, dev_ex = encode(train_pairs), encode(dev_pairs)
    log(f"training tokens: {sum(len(s) for s, _ in train_ex)} English, "
        f"{sum(len(t) for _, t in train_ex)} German")

    model = Marian(a, vocab.pad)
    params = sum(p.numel() for p in model.parameters())
    log(f"model: {params} parameters")
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9)

    restart = 0  # the step a warm restart began at

    def lr_at(step):
        rewarm = min(1.0, (step - restart) / a.rewarm) if restart else 1.0
        # A cooldown to zero at the end settles the weights the noisy
        # inverse-square-root steps keep moving around a minimum.
        cool = min(1.0, (a.steps - step) / a.cooldown) if a.cooldown else 1.0
        return a.lr * min(step / a.warmup, math.sqrt(a.warmup / step)) * rewarm * cool

    step, epoch, best, elapsed_before, skip = 0, 0, float("inf"), 0.0, 0
    history = []
    if init:
        model.load_state_dict(init["weights"])
        meta = init["meta"]
        step = restart = meta["step"]
        epoch, skip, best = meta["epoch"], meta["batch"], meta["dev_nll"]
        elapsed_before = meta["train_seconds"]
        history_path = os.path.join(HERE, "history.json")
        if os.path.exists(history_path):
            with open(history_path) as f:
                history = [tuple(h) for h in json.load(f) if h[0] <= step]
        log(f"initialized from {a.init_from} at step {step} (epoch {epoch}, batch {skip}), "
            f"dev nll {best:.4f}; learning rate warms up again over {a.rewarm} steps")
        torch.save({"model": model.state_dict(), "args": vars(a), "meta": meta},
                   os.path.join(a.work, "best.pt"))  # until a better one
    if a.resume and os.path.exists(os.path.join(a.work, "last.pt")):
        ckpt = torch.load(os.path.join(a.work, "last.pt"))
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optim"])
        step, epoch, best = ckpt["step"], ckpt["epoch"], ckpt["best"]
        elapsed_before, history = ckpt["elapsed"], ckpt["history"]
        torch.set_rng_state(ckpt["torch_rng"])
        skip = ckpt["batch"]  # batches of this epoch already trained on
        log(f"resumed at step {step}")

    # --minutes and --steps count the whole run, the model's past included.
    if elapsed_before >= a.minutes * 60 or step >= a.steps:
        sys.exit(f"train.py: the model has trained {elapsed_before / 60:.1f} minutes, "
                 f"{step} steps already; --minutes and --steps count those too")
    started = time.time()
    paused = [0.0]  # seconds stopped by SIGUSR1 .. SIGCONT
    stop = [False]

    def pause(signum, frame):
        t = time.time()
        log("paused (SIGUSR1); continues on SIGCONT")
        os.kill(os.getpid(), signal.SIGSTOP)
        paused[0] += time.time() - t
        log(f"continued after {time.time() - t:.0f} s")

    def request_stop(signum, frame):
        log("SIGTERM: stopping after this step")
        stop[0] = True
    signal.signal(signal.SIGUSR1, pause)
    signal.signal(signal.SIGTERM, request_stop)
    model.train()
    window = [0.0, 0.0, 0, 0]  # loss, nll, tokens, steps
    done = False
    while not done:
        rng = random.Random(a.seed * 1000 + epoch)
        batches = make_batches(train_ex, a.batch_tokens, rng)
        for bi, idx in enumerate(batches):
            if bi < skip:
                continue
            step += 1
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            loss, nll, n = loss_of(model, collate(train_ex, idx, vocab.pad), a.label_smoothing)
            opt.zero_grad()
            (loss / n).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            window[0] += loss.item()
            window[1] += nll.item()
            window[2] += n
            window[3] += 1
            elapsed = elapsed_before + time.time() - started - paused[0]
            if step % 50 == 0:
                log(f"step {step} epoch {epoch} lr {lr_at(step):.2e} loss {window[0] / window[2]:.3f} "
                    f"nll {window[1] / window[2]:.3f} {window[2] / window[3]:.0f} tgt tok/step "
                    f"{elapsed / step:.2f} s/step elapsed {elapsed / 60:.1f} min")
                window = [0.0, 0.0, 0, 0]
            out_of_time = elapsed >= a.minutes * 60 or step >= a.steps or stop[0]
            if step % a.eval_every == 0 or out_of_time:
                dl = dev_loss(model, dev_ex, vocab.pad)
                history.append((step, round(elapsed, 1), round(dl, 4)))
                meta = {"step": step, "epoch": epoch, "batch": bi + 1, "dev_nll": round(dl, 4),
                        "train_seconds": round(elapsed), "params": params}
                state = {"model": model.state_dict(), "args": vars(a), "meta": meta}
                if dl < best:
                    best = dl
                    torch.save(state, os.path.join(a.work, "best.pt"))
                torch.save({**state, "optim": opt.state_dict(), "step": step, "epoch": epoch,
                            "batch": bi + 1, "best": best, "elapsed": elapsed,
                            "history": history, "torch_rng": torch.get_rng_state()},
                           os.path.join(a.work, "last.pt"))
                log(f"dev nll {dl:.4f} (ppl {math.exp(dl):.2f}) best {best:.4f}")
            if out_of_time:
                done = True
                break
        else:
            epoch += 1
            skip = 0

    with open(os.path.join(a.work, "history.json"), "w") as f:
        json.dump(history, f)
    ckpt = torch.load(os.path.join(a.work, "best.pt"))
    model.load_state_dict(ckpt["model"])
    export(model, vocab, spm_path, a.out, ckpt["meta"])
    log(f"done: {step} steps, {epoch} full epochs, best dev nll {best:.4f} "
        f"(step {ckpt['meta']['step']}); exported to {a.out}")


if __name__ == "__main__":
    main()
