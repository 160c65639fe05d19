"""translate_batch refuses bad sampling options by name: prints each
option set and the error it raised (or "accepted")."""
import sys

import tfmc

translator = tfmc.Translator(sys.argv[1])
for options in ({"sampling_topk": -1}, {"sampling_topp": 0.0}, {"sampling_topp": 1.5},
                {"sampling_temperature": 0}, {"seed": "a"}, {"seed": -1},
                {"seed": 1, "beam_size": 2}, {"seed": 2**64 - 1}):
    try:
        translator.translate_batch([[5, 2]], max_length=3, **options)
        print(options, "accepted")
    except (TypeError, ValueError) as e:
        print(options, f"{type(e).__name__}: {e}")
