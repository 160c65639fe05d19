"""A vocabulary map for a model's vocab.json, made up deterministically:
each piece maps to two others (by id: 7i and 13i + 5, modulo the
vocabulary), some bigrams to one more, and the first 6 pieces are always
included. Far fewer target tokens than the vocabulary, so that a shortlist
changes what a random model translates."""
import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    vocab = json.load(f)
piece = {i: p for p, i in vocab.items()}
size = len(piece)
usable = [i for i in sorted(piece) if " " not in piece[i] and "\t" not in piece[i]]
print("\t" + " ".join(piece[i] for i in usable[:6]))
for i in usable:
    targets = {(7 * i) % size, (13 * i + 5) % size}
    print(piece[i] + "\t" + " ".join(piece[t] for t in sorted(targets) if t in piece))
for i in usable[::5]:
    j = usable[(usable.index(i) + 1) % len(usable)]
    print(piece[i] + " " + piece[j] + "\t" + piece[(i + j) % size])
