#!/usr/bin/env python3
"""Translates text with the reference implementation and scores it.

  evaluate.py [MODEL_DIR] [--src FILE] [--ref FILE] [--beam K ...]
              [--limit N] [--batch-size N] [--threads N] [--out DIR]
  evaluate.py [MODEL_DIR] --sentences "Open file" "Save the document" ...
  evaluate.py [MODEL_DIR] --encode TEXT_FILE [--limit N]   text -> id lines
  evaluate.py [MODEL_DIR] --decode IDS_FILE                id lines -> text

MODEL_DIR (default examples/en-de) is a checkpoint in the Hugging Face
MarianMT layout with source.spm, target.spm and vocab.json. Each source line
is cut into pieces by source.spm, the pieces mapped to ids by vocab.json
(unknown pieces to <unk>) and EOS appended, as Marian does; the ids are
translated by test/reference/reference.py (greedy for beam 1, beam search
otherwise, its default options); output ids are mapped back to pieces and
detokenized by target.spm. The translations are scored against --ref with
test/reference/metrics.py: corpus BLEU (13a) and chrF2.

The defaults score the held-out test set examples/en-de/test.{en,de} with
greedy search and beam 4.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
REFERENCE = os.path.join(ROOT, "test", "reference", "reference.py")
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import metrics  # noqa: E402


class Tokenizer:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            config = json.load(f)
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        self.pieces = {i: p for p, i in self.vocab.items()}
        self.eos, self.pad = config["eos_token_id"], config["pad_token_id"]
        self.unk = self.vocab["<unk>"]
        self.src = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
        self.tgt = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "target.spm"))

    def encode(self, line):
        pieces = self.src.encode(line, out_type=str)
        return [self.vocab.get(p, self.unk) for p in pieces] + [self.eos]

    def decode(self, ids):
        pieces = [self.pieces[i] for i in ids if i not in (self.eos, self.pad)]
        return self.tgt.decode_pieces(pieces)


def translate(model_dir, tok, lines, beam, batch_size, threads, extra=()):
    """Detokenized translations of lines by the reference implementation."""
    with tempfile.TemporaryDirectory() as tmp:
        ids_path = os.path.join(tmp, "source.ids")
        with open(ids_path, "w") as f:
            for line in lines:
                f.write(" ".join(map(str, tok.encode(line))) + "\n")
        cmd = [sys.executable, REFERENCE, model_dir, ids_path, "-b", str(beam),
               "--input-format", "ids", "--output-format", "ids",
               "--batch-size", str(batch_size), "--threads", str(threads), *extra]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    results = out.splitlines()
    assert len(results) == len(lines), (len(results), len(lines))
    return [tok.decode([int(t) for t in r.split()]) for r in results]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", default=os.path.join(ROOT, "examples", "en-de"))
    ap.add_argument("--src", help="source text (default MODEL/test.en)")
    ap.add_argument("--ref", help="reference translations (default MODEL/test.de)")
    ap.add_argument("--beam", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--limit", type=int, default=0, help="only the first N lines")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", help="write the translations to OUT/hyp.bK.de")
    ap.add_argument("--sentences", nargs="+", help="translate these and print them")
    ap.add_argument("--encode", metavar="TEXT_FILE",
                    help="print the source ids (EOS last) of each line, as the translator reads them")
    ap.add_argument("--decode", metavar="IDS_FILE",
                    help="print the detokenized text of each line of output ids")
    a = ap.parse_args()

    tok = Tokenizer(a.model)
    if a.encode:
        lines = metrics.read_lines(a.encode)
        for line in lines[: a.limit] if a.limit else lines:
            print(" ".join(map(str, tok.encode(line))))
        return 0
    if a.decode:
        for line in metrics.read_lines(a.decode):
            print(tok.decode([int(t) for t in line.split()]))
        return 0
    if a.sentences:
        for beam in a.beam:
            hyps = translate(a.model, tok, a.sentences, beam, a.batch_size, a.threads)
            print(f"# beam {beam}")
            for src, hyp in zip(a.sentences, hyps):
                print(f"{src}\t{hyp}")
        return 0

    src_lines = metrics.read_lines(a.src or os.path.join(a.model, "test.en"))
    ref_lines = metrics.read_lines(a.ref or os.path.join(a.model, "test.de"))
    if a.limit:
        src_lines, ref_lines = src_lines[: a.limit], ref_lines[: a.limit]
    for beam in a.beam:
        started = time.time()
        hyps = translate(a.model, tok, src_lines, beam, a.batch_size, a.threads)
        seconds = time.time() - started
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, f"hyp.b{beam}.de"), "w", encoding="utf-8") as f:
                f.write("".join(h + "\n" for h in hyps))
        bleu = metrics.corpus_bleu(hyps, ref_lines)
        chrf = metrics.corpus_chrf(hyps, ref_lines)
        name = "greedy" if beam == 1 else f"beam {beam}"
        print(f"{name}: {len(src_lines)} sentences in {seconds:.0f} s")
        print(f"  {bleu}")
        print(f"  chrF2 = {chrf:.2f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
