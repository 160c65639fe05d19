#!/usr/bin/env python3
"""The keyword options of translate_batch and score_batch: the docstrings'
signatures (made from the bindings' tables of names and defaults), the
defaults in effect, options refused by name when unknown and when given by
position, the sentences taken by keyword.

  python_keywords.py MODEL_OUT

Prints a line per case for FileCheck.
"""
import sys

import tfmc


def outcome(call):
    try:
        return repr(call())
    except Exception as e:  # noqa: BLE001: the exception is the outcome
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"


def main():
    translator = tfmc.Translator(sys.argv[1], threads=1)
    tb, sb = translator.translate_batch, translator.score_batch
    for method in (tb, sb):
        print(method.__doc__.splitlines()[0])
    source = [[5, 6, 7], [8, 9]]
    # Every default given explicitly, as the signature states it, changes
    # nothing.
    defaults = dict(beam_size=1, n_best=1, max_length=256, max_length_ratio=3.0,
                    min_length=0, length_penalty=1.0, max_batch_size=32,
                    return_scores=False, return_token_scores=False,
                    target_prefix=None, source_lang=None, target_lang=None,
                    repetition_penalty=None, no_repeat_ngram_size=None,
                    sampling_topk=None, sampling_topp=None,
                    sampling_temperature=None, seed=None, use_vmap=True)
    plain = [r.hypotheses for r in tb(source)]
    explicit = [r.hypotheses for r in tb(source, **defaults)]
    by_keyword = [r.hypotheses for r in tb(source=source)]
    print("defaults:", "same" if plain == explicit == by_keyword else
          f"{plain} {explicit} {by_keyword}")
    print("scores off by default:", [r.scores for r in tb(source)])
    print("max_length applies:",
          all(len(h) <= 1 for r in tb(source, max_length=1) for h in r.hypotheses))
    print("score keywords:", outcome(lambda: len(sb(source=source, target=[[5], [6]],
                                                     length_penalty=0.0))))
    for name, call in (
            ("unknown", lambda: tb(source, beam_sise=2)),
            ("two unknown", lambda: tb(source, foo=1, beam_size=2, bar=2)),
            ("score unknown", lambda: sb(source, [[5], [6]], beam_size=2)),
            ("by position", lambda: tb(source, 2)),
            ("score by position", lambda: sb(source, [[5], [6]], 32)),
            ("source twice", lambda: tb(source, source=source)),
            ("no source", lambda: tb(beam_size=2))):
        print(f"{name}: {outcome(call)}")


if __name__ == "__main__":
    main()
