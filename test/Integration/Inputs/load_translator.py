"""Loads the compiled model in argv[1] with the Python module and prints
how many results a batch of one id sentence gives; a load that fails
raises (its message is what the test checks)."""
import sys

import tfmc

translator = tfmc.Translator(sys.argv[1])
print(len(translator.translate_batch([[5, 6, 0]])))
