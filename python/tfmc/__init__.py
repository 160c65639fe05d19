"""Translation with models compiled by tfmc (tfmc compile MODEL_DIR -o OUT_DIR).

    import tfmc
    translator = tfmc.Translator("out", threads=2)
    translator.translate_batch(["Open file"], beam_size=4)[0].hypotheses

The classes are those of the compiled module tfmc._ext (python/*.cpp);
`python -m tfmc translate MODEL_DIR` translates stdin to stdout.
"""

try:
    from tfmc._ext import ScoringResult, TranslationResult, Translator
except ImportError as error:
    # This directory alone (the repository's python/ on sys.path), or a
    # module built for another Python: say how to get the right one.
    raise ImportError(
        f"tfmc's compiled module cannot be loaded ({error}); install tfmc "
        "into this Python with `python -m pip install .` in tfmc's "
        "repository (docs/Usage.md, Python)") from error

__all__ = ["ScoringResult", "TranslationResult", "Translator"]

# help() and repr() name them tfmc.Translator, where users find them.
for _cls in (ScoringResult, TranslationResult, Translator):
    _cls.__module__ = __name__
del _cls
