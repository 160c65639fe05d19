#!/usr/bin/env python3
"""Edge cases of the Python API (import tfmc): text and token ids follow the
translator binary's rules (invalid UTF-8 replaced by U+FFFD, sentences past
the model's positions cut with EOS kept last, each with a warning), and
every bad argument raises a TypeError or ValueError that names it and the
sentence by its index in the list ("sentence 2"), never a crash.

  python_edge_cases.py write EDGE_TEXT EDGE_IDS IDS_MODEL
  python_edge_cases.py check MODEL_OUT EDGE_TEXT CLI_TEXT IDS_OUT EDGE_IDS CLI_IDS OVERFLOW_OUT

write: the inputs, with the EOS of IDS_MODEL/config.json. check: CLI_TEXT
is `translator -b 2 -n 2 EDGE_TEXT` output, CLI_IDS `translator --input-format
ids --output-format ids EDGE_IDS` output with the model IDS_OUT;
OVERFLOW_OUT a model whose logits are never finite. Prints every failed
check and exits 1 if there was one.
"""
import json
import os
import sys
import warnings

import numpy as np

tfmc = None  # imported by `check`: `write` runs without it

# Line 1 holds invalid UTF-8 (a cut sequence and a lone continuation byte),
# line 2 cuts into more than the model's 512 positions, line 3 is blank.
TEXT_LINES = [b"Open the file.", b"Save the \xe2\x82 document\x80 now.",
              b"open the file " * 200, b""]
LONG_IDS = [5, 6] * 300

failures = []


def fail(message):
    failures.append(message)
    print("python_edge_cases.py: " + message)


def caught(call):
    """The warnings and the result (or exception) of call()."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as e:  # noqa: BLE001: any exception is compared
            result = e
    return [(w.category, str(w.message), w.filename) for w in seen], result


def expect_warnings(name, seen, expected):
    """`seen` holds exactly the `expected` (category, message) warnings,
    reported at this file's calling line."""
    got = [(c, m) for c, m, _ in seen]
    if got != expected:
        fail(f"{name}: warnings {got}, expected {expected}")
    elif any(os.path.abspath(f) != os.path.abspath(__file__) for _, _, f in seen):
        fail(f"{name}: warnings reported in {[f for _, _, f in seen]}, not the caller's file")


def expect_error(name, call, kind, *texts):
    _, result = caught(call)
    if not isinstance(result, Exception):
        fail(f"{name}: returned {result!r}, expected {kind.__name__}")
    elif type(result) is not kind or not all(t in str(result) for t in texts):
        fail(f"{name}: {type(result).__name__}: {result}; expected {kind.__name__} with {texts}")


def nbest(results):
    return [(h, s) for r in results for h, s in zip(r.hypotheses, r.scores)]


def check_text(out, edge_text, cli_text):
    """The translator's n-best lines for the same bytes: Python reads them
    with errors="surrogateescape", which keeps the invalid bytes."""
    translator = tfmc.Translator(out, threads=2)
    raw = open(edge_text, "rb").read().split(b"\n")[:-1]
    lines = [line.decode("utf-8", "surrogateescape") for line in raw]
    expected = {}
    for line in open(cli_text, encoding="utf-8").read().splitlines():
        index, hyp, score = line.split(" ||| ")
        expected.setdefault(int(index), []).append((hyp, float(score)))
    options = dict(beam_size=2, n_best=2, return_scores=True)

    def same(name, got, want):
        if len(got) != len(want) or any(
                h != eh or abs(s - es) > 1e-5 * max(1.0, abs(es))
                for (h, s), (eh, es) in zip(got, want)):
            fail(f"{name}: {got} where the translator printed {want}")

    # Each line alone, then all together (the warnings name the index).
    invalid = "sentence 0: lone surrogates (invalid UTF-8), replaced by U+FFFD as the translator does"
    seen, result = caught(lambda: translator.translate_batch([lines[1]], **options))
    if isinstance(result, Exception):
        fail(f"invalid UTF-8: {type(result).__name__}: {result}")
    else:
        same("invalid UTF-8", nbest(result), expected[1])
        expect_warnings("invalid UTF-8", seen, [(UnicodeWarning, invalid)])
    # A lone surrogate that stands for no byte is one U+FFFD.
    _, plain = caught(lambda: translator.translate_batch(["a\ufffdb"], **options))
    seen, result = caught(lambda: translator.translate_batch(["a\ud800b"], **options))
    if isinstance(result, Exception) or isinstance(plain, Exception):
        fail(f"lone surrogate: {result!r} {plain!r}")
    else:
        same("lone surrogate", nbest(result), nbest(plain))
        expect_warnings("lone surrogate", seen, [(UnicodeWarning, invalid)])

    seen, result = caught(lambda: translator.translate_batch([lines[2]], **options))
    if isinstance(result, Exception):
        fail(f"long sentence: {type(result).__name__}: {result}")
    else:
        same("long sentence", nbest(result), expected[2])
        expect_warnings("long sentence", seen, [
            (UserWarning, "sentence 0: 601 tokens, truncated to the model's 512 positions")])

    seen, result = caught(lambda: translator.translate_batch(lines, **options))
    if isinstance(result, Exception):
        fail(f"edge lines: {type(result).__name__}: {result}")
    else:
        got = nbest(result)
        want = [h for i in sorted(expected) for h in expected[i]]
        same("edge lines", got, want)
        if result[3].hypotheses != [""]:
            fail(f"blank line: {result[3]}")
        expect_warnings("edge lines", seen, [
            (UnicodeWarning, invalid.replace("sentence 0", "sentence 1")),
            (UserWarning, "sentence 2: 601 tokens, truncated to the model's 512 positions")])

    # Warnings turned into errors stop the call as exceptions.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            translator.translate_batch([lines[2]])
            fail("warnings as errors: no exception")
        except UserWarning as e:
            if "sentence 0: 601 tokens" not in str(e):
                fail(f"warnings as errors: {e}")
        except Exception as e:  # noqa: BLE001
            fail(f"warnings as errors: {type(e).__name__}: {e}")
    return translator


def check_ids(ids_out, edge_ids, cli_ids):
    """Ids cut as the translator cuts them, with or without EOS."""
    translator = tfmc.Translator(ids_out, threads=2)
    sources = [[int(t) for t in line.split()] for line in open(edge_ids).read().splitlines()]
    expected = [[int(t) for t in line.split()] for line in open(cli_ids).read().splitlines()]
    eos = sources[0][-1]
    for name, batch in (("ids", sources), ("ids without EOS", [s[:-1] for s in sources])):
        seen, result = caught(lambda: translator.translate_batch(batch, beam_size=2))
        if isinstance(result, Exception):
            fail(f"{name}: {type(result).__name__}: {result}")
            continue
        if [r.hypotheses[0] for r in result] != expected:
            fail(f"{name}: {[r.hypotheses[0] for r in result]} where the translator printed {expected}")
        expect_warnings(name, seen, [
            (UserWarning, "sentence 1: 601 tokens, truncated to the model's 512 positions")])
    # Any sequence of integers is a sentence, any iterable a list of them.
    want = [r.hypotheses for r in translator.translate_batch([[5, 6, eos], [7, 8, 9, eos]])]
    for name, source in (("tuple", ([5, 6, eos], (7, 8, 9))),
                         ("generator", (s for s in [[5, 6], [7, 8, 9]])),
                         ("numpy rows", [np.array([5, 6]), np.array([7, 8, 9], dtype=np.int32)]),
                         ("numpy ints", [[np.int64(5), 6], range(7, 10)])):
        _, result = caught(lambda: translator.translate_batch(source))
        got = result if isinstance(result, Exception) else [r.hypotheses for r in result]
        if got != want:
            fail(f"{name}: {got!r}, expected {want}")
    _, result = caught(lambda: translator.translate_batch(np.array([[5, 6, eos]])))
    if isinstance(result, Exception) or [r.hypotheses for r in result] != want[:1]:
        fail(f"numpy 2-d array: {result!r}, expected {want[:1]}")
    # No ids give no hypothesis ids, as a blank ids line gives a blank line.
    _, result = caught(lambda: translator.translate_batch([[], [5, 6]], return_scores=True))
    if isinstance(result, Exception) or result[0].hypotheses != [[]] or result[0].scores != [0.0]:
        fail(f"empty ids: {result!r}")
    _, result = caught(lambda: translator.translate_batch([]))
    if result != []:
        fail(f"no sentences: {result!r}")


def check_errors(translator, overflow_out):
    """Each bad argument: its exception names it (and the sentence)."""
    ok = ["Open the file."]
    tb = translator.translate_batch
    expect_error("bytes", lambda: tb(["Open the file.", b"Open the file."]), TypeError,
                 "sentence 1: expected a str or a list of token ids, found bytes")
    expect_error("bytearray", lambda: tb([bytearray(b"Open")]), TypeError, "sentence 0", "bytearray")
    expect_error("one str", lambda: tb("Open the file."), TypeError, "source must be a list", "str")
    expect_error("None source", lambda: tb(None), TypeError, "source must be a list", "NoneType")
    expect_error("None sentence", lambda: tb(ok + [None]), TypeError, "sentence 1", "NoneType")
    expect_error("int sentence", lambda: tb(ok * 2 + [3]), TypeError, "sentence 2", "found int 3")
    expect_error("nested ids", lambda: tb([[[5, 6]]]), TypeError, "sentence 0: token 0 is list",
                 "token ids must be integers")
    expect_error("float id", lambda: tb([[5, 6.0]]), TypeError, "sentence 0: token 1 is float 6.0")
    expect_error("bool id", lambda: tb([[5, True]]), TypeError, "sentence 0: token 1 is bool")
    expect_error("negative id", lambda: tb(ok + [[5, -1]]), ValueError,
                 "sentence 1: token id -1 is outside the vocabulary [0, 4000)")
    expect_error("huge id", lambda: tb([[2**70]]), ValueError,
                 f"sentence 0: token id {2**70} is outside the vocabulary")
    # One numbering: the list index, also past a batch's first sentence.
    expect_error("id past the vocabulary", lambda: tb(ok * 2 + [[5, 99999]], max_batch_size=2),
                 ValueError, "sentence 2: token id 99999 is outside the vocabulary")
    expect_error("0-d array", lambda: tb([np.array(5)]), TypeError, "sentence 0", "numpy.ndarray")
    expect_error("set", lambda: tb([{5, 6}]), TypeError, "sentence 0", "found set")

    nan, inf = float("nan"), float("inf")
    in_vocab = "beam_size must be at most the target vocabulary's size, 4000"
    in_int32 = "beam_size must be an int in [-2147483648, 2147483647]"
    beam_rule = "need beam size >= 1 and 1 <= n-best <= beam size"
    for kwargs, kind, *texts in (
            ({"length_penalty": nan}, ValueError, "length_penalty must be a finite number, found nan"),
            ({"length_penalty": inf}, ValueError, "length_penalty must be a finite number, found inf"),
            ({"length_penalty": 1e300}, ValueError, "length_penalty must be a finite number, found 1e+300"),
            ({"length_penalty": "1"}, TypeError, "length_penalty must be a number, found str '1'"),
            ({"max_length_ratio": -1.0}, ValueError, "the max length ratio must be a finite number >= 0"),
            ({"max_length_ratio": nan}, ValueError, "max_length_ratio must be a finite number, found nan"),
            ({"max_length_ratio": inf}, ValueError, "max_length_ratio must be a finite number, found inf"),
            ({"beam_size": 0}, ValueError, beam_rule),
            ({"beam_size": 4001}, ValueError, in_vocab, "found 4001"),
            ({"beam_size": 10**40}, ValueError, in_int32, f"found {10**40}"),
            ({"beam_size": 2.0}, TypeError, "beam_size must be an int, found float 2.0"),
            ({"beam_size": True}, TypeError, "beam_size must be an int, found bool True"),
            ({"beam_size": None}, TypeError, "beam_size must be an int, found NoneType None"),
            ({"beam_size": 2, "n_best": 3}, ValueError, beam_rule),
            ({"n_best": 0}, ValueError, beam_rule),
            ({"repetition_penalty": -1.0}, ValueError,
             "the repetition penalty must be a finite number > 0"),
            ({"repetition_penalty": 0}, ValueError,
             "repetition_penalty 0 is no penalty: None takes the model's, 1 turns it off"),
            ({"max_length": 0}, ValueError, "max_length must be an int in [1, 2147483647], found 0"),
            ({"min_length": -1}, ValueError, "min_length must be an int in [0, 2147483647], found -1"),
            ({"max_batch_size": 0}, ValueError, "max_batch_size must be an int in [1, 2147483647], found 0"),
            ({"max_batch_size": 2**31}, ValueError, "max_batch_size must be an int in [1, 2147483647]",
             "found 2147483648"),
            ({"return_scores": "no"}, TypeError, "return_scores must be a bool, found str 'no'"),
            ({"return_scores": None}, TypeError, "return_scores must be a bool, found NoneType None")):
        expect_error(str(kwargs), lambda: tb(ok, **kwargs), kind, *texts)
    # The runtime judges the options before any sentence is read.
    expect_error("options before sentences", lambda: tb([[5, -1]], n_best=0), ValueError,
                 beam_rule)
    # What the checks must let through (numpy's scalars, the largest values
    # allowed) gives the same translation; a max_length_ratio of 1e30 used
    # to overflow an integer in the runtime and translate to "".
    want = tb(ok, beam_size=2)[0].hypotheses
    for kwargs in ({"beam_size": np.int64(2)}, {"beam_size": 2, "length_penalty": np.float32(1.0)},
                   {"beam_size": 2, "max_length_ratio": 1e30}, {"beam_size": 2, "max_batch_size": 2**31 - 1},
                   {"beam_size": 2, "return_scores": np.bool_(False)}):
        _, result = caught(lambda: tb(ok, **kwargs))
        if isinstance(result, Exception) or result[0].hypotheses != want:
            fail(f"{kwargs}: {result!r}, expected {want}")

    check_empty_names(translator)

    for args, kind, text in (((None,), TypeError, "model_dir must be a str or os.PathLike, found NoneType"),
                             (("a\0b",), ValueError, "model_dir contains a NUL character"),
                             (("",), ValueError, "model_dir must not be empty"),
                             ((b"",), ValueError, "model_dir must not be empty"),
                             ((overflow_out, 0), ValueError, "threads must be an int in [1, 1024], found 0"),
                             ((overflow_out, 10**6), ValueError, "threads must be an int in [1, 1024]"),
                             ((overflow_out, "2"), TypeError, "threads must be an int, found str")):
        expect_error(f"Translator{args}", lambda: tfmc.Translator(*args), kind, text)

    # A runtime error about one sentence names it as Python counts the
    # batch's sentences (the overflowing model fails on any: the first).
    overflow = tfmc.Translator(os.fspath(overflow_out))
    for batch in ([[], [], [5, 6], [7, 8]], [[], [], [5, 6]]):
        _, result = caught(lambda: overflow.translate_batch(batch))
        if (type(result) is not RuntimeError
                or not str(result).startswith("sentence 2: the logits of step 1 are not finite;")
                or "of the batch" in str(result)):
            fail(f"runtime error of {batch}: {result!r}")


def check_empty_names(translator):
    """An argument that names something (a language, a piece, a file) is a
    ValueError when empty, not taken as None; a sentence's target prefix
    may be empty (no prefix), as a blank line of --target-prefix-file is."""
    ok = ["Open the file."]
    tb, sb = translator.translate_batch, translator.score_batch
    for name, call, text in (
            ("source_lang ''", lambda: tb(ok, source_lang=""), "source_lang must not be empty"),
            ("target_lang ''", lambda: tb(ok, target_lang=""), "target_lang must not be empty"),
            ("score source_lang ''", lambda: sb(ok, ok, source_lang=""), "source_lang must not be empty"),
            ("score target_lang ''", lambda: sb(ok, ok, target_lang=""), "target_lang must not be empty"),
            ("piece ''", lambda: tb(ok * 2, target_prefix=[None, ["\u2581Die", ""]]),
             "target_prefix 1: token 1: an empty piece names no token"),
            ("read_vmap ''", lambda: translator.read_vmap(""), "path must not be empty")):
        expect_error(name, call, ValueError, text)
    want = tb(ok * 2)
    for prefix in ([[], None], [(), []]):
        _, result = caught(lambda: tb(ok * 2, target_prefix=prefix))
        if isinstance(result, Exception) or [r.hypotheses for r in result] != [r.hypotheses for r in want]:
            fail(f"target_prefix {prefix}: {result!r}, expected no prefix")


def write(edge_text, edge_ids, ids_model):
    with open(edge_text, "wb") as f:
        f.write(b"".join(line + b"\n" for line in TEXT_LINES))
    eos = json.load(open(os.path.join(ids_model, "config.json")))["eos_token_id"]
    with open(edge_ids, "w") as f:
        for ids in ([5, 6, 7], LONG_IDS, [8, 9]):
            f.write(" ".join(str(t) for t in ids + [eos]) + "\n")


def main():
    if sys.argv[1] == "write":
        write(*sys.argv[2:5])
        return
    global tfmc
    import tfmc
    out, edge_text, cli_text, ids_out, edge_ids, cli_ids, overflow_out = sys.argv[2:9]
    translator = check_text(out, edge_text, cli_text)
    check_ids(ids_out, edge_ids, cli_ids)
    check_errors(translator, overflow_out)
    if failures:
        sys.exit(f"python_edge_cases.py: {len(failures)} checks failed")
    print("edge cases: as the translator's, every bad argument named")


if __name__ == "__main__":
    main()
