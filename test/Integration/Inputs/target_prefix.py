#!/usr/bin/env python3
"""Target prefixes through the Python API and as vocabulary pieces.

  target_prefix.py python MODEL_OUT SOURCE_IDS CLI_PREFIXED
      translate_batch(target_prefix=...) prints what `translator
      --target-prefix-file` printed (CLI_PREFIXED, for the prefixes of
      prefixes.ids beside SOURCE_IDS), and refuses bad prefixes by name.
  target_prefix.py pieces MODEL_OUT TRANSLATOR SOURCE_TEXT
      --target-prefix given as pieces forces the ids of those pieces.

Exits 1 naming the first difference.
"""
import json
import os
import subprocess
import sys


def fail(message):
    sys.exit("target_prefix.py: " + message)


def read_ids(path):
    return [[int(t) for t in line.split()] for line in open(path).read().splitlines()]


def check_python(out, source_ids, cli_prefixed):
    import tfmc
    translator = tfmc.Translator(out, threads=2)
    sources = read_ids(source_ids)
    prefixes = read_ids(os.path.join(os.path.dirname(source_ids), "prefixes.ids"))
    results = translator.translate_batch(sources, target_prefix=[p or None for p in prefixes], max_length=9,
                                         max_batch_size=3)
    expected = read_ids(cli_prefixed)
    got = [r.hypotheses[0] for r in results]
    if got != expected:
        fail(f"Python gave {got}, the translator {expected}")
    for bad, message in (([[0]], "the model's EOS"), ([[10**6]], "outside the target vocabulary"),
                         ("5 6", "must be a list"), ([[5]] * 2, "has 2 entries for 1 sentences"),
                         ([["not-a-piece"]], "no tokenizer")):
        try:
            translator.translate_batch(sources[:1], target_prefix=bad)
        except (TypeError, ValueError, RuntimeError) as e:
            if message not in str(e):
                fail(f"target_prefix={bad!r}: {e!r} does not say {message!r}")
        else:
            fail(f"target_prefix={bad!r} was accepted")
    print("python: ok")


def check_pieces(out, translator, source_text):
    """Text output takes pieces, ids output ids: both force the same tokens,
    so the text is the ids' pieces joined by target.spm."""
    import sentencepiece
    vocab = json.load(open(os.path.join(out, "vocab.json"), encoding="utf-8"))
    piece_of = {i: p for p, i in vocab.items()}
    pieces = sorted((i, p) for p, i in vocab.items() if p.startswith("\u2581") and len(p) > 2)[:2]
    ids = " ".join(str(i) for i, _ in pieces)
    text = " ".join(p for _, p in pieces)

    def run(*args, ok=True):
        r = subprocess.run([translator, source_text, *args], capture_output=True, text=True)
        if (r.returncode == 0) != ok:
            fail(f"{args}: exit {r.returncode}: {r.stderr}")
        return r

    by_id = run("--output-format", "ids", "--target-prefix", ids).stdout.splitlines()
    if any(not line.startswith(ids + " ") for line in by_id):
        fail(f"translations do not start with {ids}: {by_id}")
    by_piece = run("--target-prefix", text).stdout.splitlines()
    spm = sentencepiece.SentencePieceProcessor(model_file=os.path.join(out, "target.spm"))
    eos = vocab["</s>"]
    for line, got in zip(by_id, by_piece):
        want = spm.decode_pieces([piece_of[int(t)] for t in line.split() if int(t) != eos])
        if got != want:
            fail(f"--target-prefix '{text}' gave {got!r}, the ids {line} read {want!r}")
    # Each format reads its own tokens.
    wrong = run("--target-prefix", ids, ok=False).stderr
    if "is not a piece of the vocabulary" not in wrong:
        fail("ids taken as pieces: " + wrong)
    wrong = run("--output-format", "ids", "--target-prefix", text, ok=False).stderr
    if "is not a target token id" not in wrong:
        fail("pieces taken as ids: " + wrong)
    print("pieces: ok")


def main():
    mode = sys.argv[1]
    if mode == "python":
        check_python(*sys.argv[2:5])
    elif mode == "pieces":
        check_pieces(*sys.argv[2:5])
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
