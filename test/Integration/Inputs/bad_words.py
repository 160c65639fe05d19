#!/usr/bin/env python3
"""Bad words for a test checkpoint, chosen from what it translates.

  bad_words.py choose TRANSLATIONS MODEL_DIR
      Sets bad_words_ids in MODEL_DIR/config.json to [[a], [b, c]]: a is the
      first token of the first translation, (b, c) the first pair of
      neighbouring tokens without a in the other translations; prints them.
  bad_words.py check TRANSLATIONS MODEL_DIR
      Exits 1, naming the line, if a translation holds a bad word of
      MODEL_DIR/config.json (the decoder start token counts as the token
      before the first).
"""
import json
import os
import sys


def read(path):
    return [[int(t) for t in line.split()] for line in open(path)]


def main():
    mode, translations, model = sys.argv[1:4]
    config_path = os.path.join(model, "config.json")
    config = json.load(open(config_path))
    lines = read(translations)
    if mode == "choose":
        a = lines[0][0]
        pair = next([x, y] for line in lines[1:] for x, y in zip(line, line[1:])
                    if a not in (x, y))
        config["bad_words_ids"] = [[a], pair]
        json.dump(config, open(config_path, "w"), indent=2)
        print(json.dumps(config["bad_words_ids"]))
        return
    start = config["decoder_start_token_id"]
    for n, line in enumerate(lines, 1):
        tokens = [start] + line
        for word in config.get("bad_words_ids", []):
            for end in range(1, len(tokens)):  # each generated token
                begin = end - len(word) + 1
                if begin >= 0 and tokens[begin:end + 1] == word:
                    sys.exit(f"line {n} holds the bad word {word}: {' '.join(map(str, line))}")


if __name__ == "__main__":
    main()
