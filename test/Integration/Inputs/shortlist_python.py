"""The Python API's shortlist: translate_batch over the model's shortlist
by default and the whole vocabulary with use_vmap=False, read_vmap(path)
replacing it, each giving the translator's tokens (FILE lines
"SCORE<TAB>TOKENS<TAB>TOKEN SCORES", --token-scores output).

  shortlist_python.py MODEL SOURCE SHORT_FILE FULL_FILE [VMAP]
    MODEL compiled with a vmap: its default gives SHORT_FILE, use_vmap=False
    FULL_FILE. With VMAP, MODEL was compiled without one: has_vmap is
    False, then read_vmap(VMAP) makes it give SHORT_FILE.
"""
import sys

import tfmc


def tokens_of(path):
    return [line.split("\t")[1].split() for line in open(path).read().splitlines()]


def check(translator, sources, expected, what, **options):
    results = translator.translate_batch(sources, max_length=12, max_batch_size=8,
                                         **options)
    got = [[str(t) for t in r.hypotheses[0]] for r in results]
    if got != expected:
        sys.exit(f"{what}: {got} != the translator's {expected}")


def main():
    model, source, short, full = sys.argv[1:5]
    sources = [[int(t) for t in line.split()] for line in open(source).read().splitlines()]
    translator = tfmc.Translator(model)
    if len(sys.argv) > 5:
        assert not translator.has_vmap
        check(translator, sources, tokens_of(full), "without a vmap")
        try:
            translator.read_vmap(source)
            sys.exit("read_vmap took a file of ids")
        except ValueError as e:
            print(e)
        warning = translator.read_vmap(sys.argv[5])
        print("warning:", warning)
    assert translator.has_vmap
    check(translator, sources, tokens_of(short), "with the shortlist")
    check(translator, sources, tokens_of(full), "use_vmap=False", use_vmap=False)
    print("python shortlist: ok")


main()
