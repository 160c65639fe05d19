"""Helpers of languages.test.

  languages.py spm OUT FIRST LAST      a SentencePiece model (unigram) whose
                                       pieces are <unk>, <s>, </s>, then the
                                       words \u2581wFIRST..\u2581wLAST: fairseq's
                                       alignment gives them ids 4, 5, ...
  languages.py text IDS                the words of each line of source ids
                                       (w<id>; the language token first and
                                       </s> last left out)
  languages.py words IDS               each line of output ids as text: the
                                       language token first left out
  languages.py python MODEL_OUT DIR    the Python API's source_lang /
                                       target_lang on the trained m2m_100
                                       model (DIR: its directory in
                                       test/models/families)
"""
import sys


def varint(n):
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def field(number, payload):
    """A length-delimited protobuf field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def spm(out, pieces):
    """A serialized sentencepiece ModelProto, written by hand (Debian's
    python3-sentencepiece has no protobuf module for its _pb2): pieces
    (field 1: text 1, score 2, type 3: NORMAL 1, UNKNOWN 2, CONTROL 3), a
    unigram trainer spec (field 2: model_type 3) and the identity
    normalizer (field 3: name 1)."""
    import struct
    entries = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    entries += [(text, -1.0 - i / 100, 1) for i, text in enumerate(pieces)]
    model = b""
    for text, score, kind in entries:
        piece = field(1, text.encode()) + varint(2 << 3 | 5) + \
            struct.pack("<f", score) + varint(3 << 3) + varint(kind)
        model += field(1, piece)
    model += field(2, varint(3 << 3) + varint(1))
    model += field(3, field(1, b"identity"))
    with open(out, "wb") as f:
        f.write(model)


def lines(path):
    return [[int(t) for t in line.split()] for line in open(path)]


def python(out, family):
    import tfmc
    t = tfmc.Translator(out)
    sources = lines(f"{family}/source.ids")
    expected = {lang: lines(f"{family}/expected-{lang}.ids")
                for lang in ("de", "fr")}

    def translate(**options):
        return [r.hypotheses[0] for r in t.translate_batch(sources, **options)]

    assert translate(target_lang="de") == expected["de"]
    assert translate(target_lang="__fr__", source_lang="it") == expected["fr"]
    assert translate(target_lang="fr", target_prefix=[[5]] * len(sources)) == \
        translate(target_prefix=[[48, 5]] * len(sources))
    for options, message in [
            ({"target_lang": "xx"}, "target_lang: 'xx' is not a language of this model"),
            ({"source_lang": "deu_Latn"}, "source_lang: 'deu_Latn' is not a language")]:
        try:
            translate(**options)
            raise AssertionError(f"{options} was accepted")
        except ValueError as e:
            assert message in str(e), str(e)
    try:
        translate(target_lang=b"de")
        raise AssertionError("bytes were accepted")
    except TypeError as e:
        assert "target_lang must be a str" in str(e), str(e)
    print("python: ok")


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "spm":
        spm(args[0], [f"\u2581w{i}" for i in range(int(args[1]), int(args[2]) + 1)])
    elif command == "text":
        for ids in lines(args[0]):
            print(" ".join(f"w{i}" for i in ids[1:-1]))
    elif command == "words":
        for ids in lines(args[0]):
            print(" ".join(f"w{i}" for i in ids[1:]))
    elif command == "python":
        python(*args)


if __name__ == "__main__":
    main()
