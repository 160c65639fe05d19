"""Helpers of tokenizer-t5.test: T5's tokenizer as Hugging Face's
T5Tokenizer applies it (tokenization_t5.py), computed here from its rules
and SentencePiece's own Python module, never by tfmc.

  t5_tokenizer.py train OUT [--languages de,fr,en,es] [--first-pieces P]
        a spiece.model trained here (unigram, single-threaded, unshuffled:
        the same bytes every run) with T5's ids (--pad_id=0 --eos_id=1
        --unk_id=2 --bos_id=-1) and MADLAD-400's language pieces <2xx> as
        user-defined symbols (none with --languages ""); --first-pieces
        fairseq trains SentencePiece's default ids instead (<unk> 0, <s> 1,
        </s> 2), which T5's ids cannot use
  t5_tokenizer.py text OUT
        the test's source sentences, one a line (one has a character the
        model never saw: SentencePiece's <unk>)
  t5_tokenizer.py ids SPM TEXT [--lang L] [--extra-ids N]
        each line's source ids: T5Tokenizer(spm, extra_ids=N)(line), the
        line given as MADLAD-400 is given it ("<2L> " + line) with --lang
  t5_tokenizer.py sentinel SPM K [--extra-ids N]
        the id T5Tokenizer gives <extra_id_K>
  t5_tokenizer.py decode SPM IDS [--extra-ids N]
        each line of output ids as text: decode(skip_special_tokens=True),
        with tfmc's two documented differences (below)
  t5_tokenizer.py python MODEL_OUT TEXT EXPECTED SPM [--extra-ids N]
        the Python API's target_lang="de" gives the lines of EXPECTED, and
        a target prefix <extra_id_0> T5Tokenizer's id of it
"""
import argparse
import io
import re
import sys

PAD, EOS, UNK = 0, 1, 2

CORPUS = """\
Open the file and save the document.
Close the window before you leave.
The quick brown fox jumps over the lazy dog.
Please restart the computer to finish the update.
Where is the nearest train station?
Öffne die Datei und speichere das Dokument.
Schließe das Fenster, bevor du gehst.
Der schnelle braune Fuchs springt über den faulen Hund.
Bitte starte den Computer neu, um das Update abzuschließen.
Wo ist der nächste Bahnhof?
Ouvrez le fichier et enregistrez le document.
Fermez la fenêtre avant de partir.
Le renard brun rapide saute par-dessus le chien paresseux.
Veuillez redémarrer l'ordinateur pour terminer la mise à jour.
Où est la gare la plus proche ?
Abra el archivo y guarde el documento.
Cierre la ventana antes de salir.
El rápido zorro marrón salta sobre el perro perezoso.
Reinicie el ordenador para terminar la actualización.
¿Dónde está la estación de tren más cercana?
"""

# Sentences to translate: words seen in training, words cut into smaller
# pieces, and "€", which SentencePiece never saw (<unk>).
SOURCES = """\
Open the document.
Where is the window?
Der Fuchs springt über den Hund.
Reinicie la ventana, por favor.
The train costs 5 € today.
Fermez le fichier.
"""


def train(out, languages, first_pieces):
    import sentencepiece as spm
    corpus = out + ".txt"
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(CORPUS)
    ids = dict(pad_id=PAD, eos_id=EOS, unk_id=UNK, bos_id=-1)
    if first_pieces == "fairseq":
        ids = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    model = io.BytesIO()
    options = dict(input=corpus, model_writer=model, vocab_size=100,
                   hard_vocab_limit=False, character_coverage=1.0,
                   model_type="unigram", num_threads=1,
                   shuffle_input_sentence=False, input_sentence_size=0,
                   minloglevel=2, **ids)
    if languages:
        options["user_defined_symbols"] = [f"<2{code}>" for code in languages]
    spm.SentencePieceTrainer.train(**options)
    with open(out, "wb") as f:
        f.write(model.getvalue())


def processor(path):
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=path)


def token_to_id(sp, token, extra_ids):
    """T5Tokenizer._convert_token_to_id: a sentinel <extra_id_K> counts down
    from the tokenizer's last id (its vocab_size is the pieces +
    extra_ids), any other token is SentencePiece's piece id."""
    match = re.fullmatch(r"<extra_id_(\d+)>", token)
    if match:
        return sp.get_piece_size() + extra_ids - int(match.group(1)) - 1
    return sp.piece_to_id(token)


def source_ids(sp, line, lang, extra_ids):
    """T5Tokenizer(line).input_ids. tokenize() puts "▁" before the text and
    _tokenize() gives the rest to SentencePiece (with the model's own
    normalizer and its dummy prefix); build_inputs_with_special_tokens()
    appends </s>. MADLAD-400's target language is text before the line."""
    if lang:
        line = f"<2{lang}> {line}"
    pieces = sp.encode(line, out_type=str)
    return [token_to_id(sp, p, extra_ids) for p in pieces] + [EOS]


def is_language(piece):
    return re.fullmatch(r"<2[A-Za-z][A-Za-z0-9_-]*>", piece) is not None


def text_of(sp, ids, extra_ids):
    """decode(ids, skip_special_tokens=True): T5Tokenizer's special tokens
    are <pad>, </s>, <unk> and the sentinels; the rest goes to
    SentencePiece's decoder, and the text is stripped. tfmc also leaves out
    the language tokens <2xx> (plain pieces to T5Tokenizer, which would
    print them) and ids past the tokenizer's (which T5Tokenizer would call
    <extra_id_-1> ...): the model's rows no piece has."""
    pieces = sp.get_piece_size()
    size = pieces + extra_ids
    special = {PAD, EOS, UNK} | set(range(pieces, size))
    kept = [i for i in ids if i not in special and i < size
            and not is_language(sp.id_to_piece(i))]
    return sp.decode(kept).strip()


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def python_api(out, text, expected, spm, extra_ids):
    """The Python API on the translator's text and T5Tokenizer's sentinel."""
    import tfmc
    sentinel = token_to_id(processor(spm), "<extra_id_0>", extra_ids)
    t = tfmc.Translator(out)
    got = [r.hypotheses[0] for r in
           t.translate_batch(lines(text), target_lang="de", max_length=8)]
    want = lines(expected)
    assert got == want, f"{got} != {want}"
    forced = t.translate_batch([[5, 6, 1]], target_prefix=[["<extra_id_0>"]],
                               max_length=3)
    assert forced[0].hypotheses[0][0] == sentinel, forced[0].hypotheses
    try:
        t.translate_batch(lines(text), target_lang="xx")
        raise AssertionError("target_lang xx was accepted")
    except ValueError as e:
        assert "target_lang: 'xx' is not a language of this model" in str(e), e
    print("python: ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--languages", default="de,fr,en,es")
    ap.add_argument("--first-pieces", default="t5")
    ap.add_argument("--lang")
    ap.add_argument("--extra-ids", type=int, default=100)
    a = ap.parse_args()
    sys.stdout.reconfigure(encoding="utf-8")
    if a.command == "train":
        train(a.args[0], [c for c in a.languages.split(",") if c],
              a.first_pieces)
    elif a.command == "text":
        sys.stdout.write(SOURCES)
    elif a.command == "ids":
        sp = processor(a.args[0])
        for line in lines(a.args[1]):
            print(" ".join(map(str, source_ids(sp, line, a.lang, a.extra_ids))))
    elif a.command == "sentinel":
        sp = processor(a.args[0])
        print(token_to_id(sp, f"<extra_id_{a.args[1]}>", a.extra_ids))
    elif a.command == "decode":
        sp = processor(a.args[0])
        for line in lines(a.args[1]):
            print(text_of(sp, [int(t) for t in line.split()], a.extra_ids))
    elif a.command == "python":
        python_api(*a.args, a.extra_ids)
    else:
        sys.exit(f"unknown command {a.command}")


if __name__ == "__main__":
    main()
