"""A vocabulary map for a model's vocab.json (or, with --spm, the pieces
of a SentencePiece model whose ids are the model's, as T5's), made up
deterministically: each piece maps to two others (by id: 7i and 13i + 5,
modulo the vocabulary), some bigrams to one more, and the first 6 pieces
are always included. Far fewer target tokens than the vocabulary, so that
a shortlist changes what a random model translates.

  make_vmap.py VOCAB_JSON | make_vmap.py --spm SPIECE_MODEL"""
import json
import sys

if sys.argv[1] == "--spm":
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[2])
    piece = {i: sp.id_to_piece(i) for i in range(sp.get_piece_size())}
else:
    with open(sys.argv[1], encoding="utf-8") as f:
        piece = {i: p for p, i in json.load(f).items()}
size = len(piece)
usable = [i for i in sorted(piece) if " " not in piece[i] and "\t" not in piece[i]]
print("\t" + " ".join(piece[i] for i in usable[:6]))
for i in usable:
    targets = {(7 * i) % size, (13 * i + 5) % size}
    print(piece[i] + "\t" + " ".join(piece[t] for t in sorted(targets) if t in piece))
for i in usable[::5]:
    j = usable[(usable.index(i) + 1) % len(usable)]
    print(piece[i] + " " + piece[j] + "\t" + piece[(i + j) % size])
