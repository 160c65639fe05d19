#!/usr/bin/env python3
"""The Python API (import tfmc) against the translator binary it shares a
compiled model with.

  python_api.py MODEL_OUT SOURCE_TEXT CLI_NBEST SOURCE_IDS CLI_IDS IDS_OUT

CLI_NBEST: `translator -b 4 -n 2 SOURCE_TEXT` output; CLI_IDS: `translator
--input-format ids --output-format ids SOURCE_IDS` output; IDS_OUT: a model
compiled without tokenizer. Exits 1 naming the first difference.
"""
import sys
import threading
import time

import tfmc


def fail(message):
    sys.exit("python_api.py: " + message)


def main():
    out, source_text, cli_nbest, source_ids, cli_ids, ids_out = sys.argv[1:7]
    lines = open(source_text, encoding="utf-8").read().splitlines()
    translator = tfmc.Translator(out, threads=2)

    # Text in, n-best with scores out: the translator's lines
    # "INDEX ||| TRANSLATION ||| SCORE".
    results = translator.translate_batch(lines, beam_size=4, n_best=2, return_scores=True,
                                         max_batch_size=7)
    expected = [line.split(" ||| ") for line in open(cli_nbest, encoding="utf-8").read().splitlines()]
    got = [(str(i), h, s) for i, r in enumerate(results) for h, s in zip(r.hypotheses, r.scores)]
    if len(got) != len(expected):
        fail(f"{len(got)} hypotheses, the translator printed {len(expected)}")
    for (i, h, s), (ei, eh, es) in zip(got, expected):
        if (i, h) != (ei, eh) or abs(s - float(es)) > 1e-5 * max(1.0, abs(float(es))):
            fail(f"sentence {i}: {h!r} {s} where the translator printed {eh!r} {es}")

    # Token ids in and out (EOS appended when missing).
    ids = [[int(t) for t in line.split()] for line in open(source_ids).read().splitlines()]
    expected_ids = [[int(t) for t in line.split()] for line in open(cli_ids).read().splitlines()]
    without_eos = [s[:-1] for s in ids]
    for name, batch in (("ids", ids), ("ids without EOS", without_eos)):
        hyps = [r.hypotheses[0] for r in translator.translate_batch(batch)]
        if hyps != expected_ids:
            fail(f"{name}: {hyps[:2]} where the translator printed {expected_ids[:2]}")

    # Blank text gives "" as in the translator; bad input raises TypeError
    # or ValueError (python_edge_cases.py tries many more).
    r = translator.translate_batch(["  ", lines[0]], beam_size=4)
    if r[0].hypotheses != [""] or r[1].hypotheses != [got[0][1]] or r[1].scores != []:
        fail(f"blank line: {r}")
    for bad, kind, text in (([[99999, 0]], ValueError, "outside the vocabulary"),
                            ([3], TypeError, "expected a str or a list of token ids"),
                            ([["a"]], TypeError, "token ids must be integers")):
        try:
            translator.translate_batch(bad)
            fail(f"{bad} translated")
        except kind as e:
            if text not in str(e):
                fail(f"{bad}: {kind.__name__} {e}")
    for kwargs, text in (({"beam_size": 2, "n_best": 3}, "n-best <= beam size"),
                         ({"max_batch_size": 0}, "max_batch_size")):
        try:
            translator.translate_batch(lines[:1], **kwargs)
            fail(f"{kwargs} accepted")
        except ValueError as e:
            if text not in str(e):
                fail(f"{kwargs}: {e}")
    try:
        tfmc.Translator(ids_out).translate_batch(["text"])
        fail("text translated by a model without tokenizer")
    except ValueError as e:
        if "no tokenizer" not in str(e):
            fail(str(e))
    try:
        tfmc.Translator(source_text)
        fail("a file loaded as a model")
    except ValueError as e:
        if "libtranslator.so does not exist" not in str(e):
            fail(str(e))

    # The GIL is released while translating: a Python thread counts on at a
    # good part of its free rate (held, it would stop for the whole call).
    one = tfmc.Translator(out, threads=1)
    count, stop = [0], [False]

    def counter():
        while not stop[0]:
            count[0] += 1
    thread = threading.Thread(target=counter)
    thread.start()
    t0, c0 = time.perf_counter(), count[0]
    time.sleep(0.2)
    free_rate = (count[0] - c0) / (time.perf_counter() - t0)
    t0, c0 = time.perf_counter(), count[0]
    one.translate_batch(lines, beam_size=4)
    busy_rate = (count[0] - c0) / (time.perf_counter() - t0)
    stop[0] = True
    thread.join()
    print(f"counter during translate_batch: {busy_rate / free_rate:.0%} of its free rate")
    if busy_rate < 0.1 * free_rate:
        fail("the GIL is held while translating")
    print(f"{len(lines)} sentences, {len(got)} hypotheses: as the translator's")


if __name__ == "__main__":
    main()
