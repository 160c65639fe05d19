#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

Seeds come from the repository's own inputs (examples/en-de, the lit tests'
IR, the test corpora) and from the bad inputs the lit tests build with
test/models/corrupt_model.py, re-made here small so that mutations run
fast. Deterministic; run it again after changing a format:

    /usr/bin/python3 fuzz/make_seeds.py
"""
import io
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
sys.path.insert(0, os.path.join(ROOT, "test", "models"))


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(header, data=b""):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    t = lambda dt, shape, b, e: {"dtype": dt, "shape": shape, "data_offsets": [b, e]}
    good = {"a": t("F32", [2, 3], 0, 24), "b": t("F16", [4], 24, 32),
            "c": t("BF16", [1, 2], 32, 36), "z": t("F32", [0, 5], 36, 36),
            "__metadata__": {"format": "pt"}}
    put("Safetensors", "good", safetensors(good, bytes(range(36))))
    put("Safetensors", "all-dtypes", safetensors(
        {d: t(d, [2], 8 * i, 8 * i + 2 * s) for i, (d, s) in enumerate(
            [("F64", 8), ("F32", 4), ("F16", 2), ("BF16", 2), ("I64", 8),
             ("I32", 4), ("I16", 2), ("I8", 1), ("U8", 1), ("BOOL", 1)])},
        bytes(160)))
    # The damage of test/Compiler/bad-input/safetensors.test, small.
    put("Safetensors", "header-too-long", struct.pack("<Q", 1 << 40) + b"{}")
    put("Safetensors", "header-not-json", struct.pack("<Q", 5) + b"{abc,")
    put("Safetensors", "short", b"\x03\x00")
    put("Safetensors", "outside", safetensors({"a": t("F32", [4], 0, 16)}, bytes(8)))
    put("Safetensors", "overlap", safetensors(
        {"a": t("F32", [4], 0, 16), "b": t("F32", [4], 8, 24)}, bytes(24)))
    put("Safetensors", "dtype", safetensors({"a": t("Q4", [4], 0, 2)}, bytes(2)))
    put("Safetensors", "shape-mismatch", safetensors({"a": t("F32", [3], 0, 16)}, bytes(16)))
    put("Safetensors", "huge-shape", safetensors(
        {"a": t("F32", [1 << 62, 1 << 62], 0, 16)}, bytes(16)))
    put("Safetensors", "not-object", safetensors([1, 2, 3]))


def config_seeds(micro):
    with open(os.path.join(ROOT, "examples", "en-de", "config.json"), "rb") as f:
        put("ModelConfig", "en-de", f.read())
    with open(os.path.join(micro, "config.json"), "rb") as f:
        base = json.load(f)
    put("ModelConfig", "micro", json.dumps(base, indent=1))
    # The damage of test/Compiler/bad-input/config.test.
    put("ModelConfig", "garbage", b"{\"d_model\": 16,,")
    for name, key, value in [
            ("bad-type", "encoder_layers", "six"),
            ("activation", "activation_function", "gelu_new"),
            ("model-type", "model_type", "bart"),
            ("heads", "encoder_attention_heads", 3),
            ("positions", "position_encoding", "rotary"),
            ("interleaved", "position_encoding", "sinusoidal_interleaved"),
            ("eos-outside", "eos_token_id", 1 << 40),
            ("decoder-vocab", "decoder_vocab_size", 7),
            ("float", "d_model", 16.5),
            ("negative", "pad_token_id", -1)]:
        c = dict(base)
        c[key] = value
        put("ModelConfig", name, json.dumps(c))
    c = dict(base)
    del c["d_model"]
    put("ModelConfig", "no-dmodel", json.dumps(c))
    put("ModelConfig", "array", b"[]")


def weights_seeds():
    # The compact form WeightsFileFuzzer.cpp expands: flags, the header's
    # 64 bytes, then data and table. FuzzModelStub.cpp's model has 256
    # bytes of data.
    def table(regions):
        out = b""
        for offset, size, name in regions:
            n = name.encode()
            out += struct.pack("<4Q", offset, size, 0, len(n))
            out += n + b"\0" * (-len(n) % 8)
        return out
    header = b"\0" * 64
    data = bytes(range(256))
    good = table([(0, 64, "model.shared.weight"), (64, 192, "final_logits_bias")])
    put("WeightsFile", "good", bytes([7]) + header + data + good)
    put("WeightsFile", "embedded", bytes([15 | 0x30]) + header + data + good)
    put("WeightsFile", "no-table", bytes([7]) + header + data)
    put("WeightsFile", "region-outside", bytes([7]) + header + data +
        table([(200, 100, "x")]))
    put("WeightsFile", "name-too-long", bytes([7]) + header + data +
        struct.pack("<4Q", 0, 8, 0, 1 << 40))
    put("WeightsFile", "truncated", bytes([7]) + header + data[:100])
    put("WeightsFile", "bad-header-checksum", bytes([3]) + header + data + good)
    put("WeightsFile", "bad-table-checksum", bytes([5]) + header + data + good)
    put("WeightsFile", "bad-magic", bytes([0]) + b"TFMWGT00" + header[8:] + data)
    magic = b"TFMWGT01" + struct.pack("<7Q", 2, 0x5eed5eed, 256, 0, 0, 0, 0)
    put("WeightsFile", "old-version", bytes([0]) + magic + data)


def tokenizer_seeds():
    import sentencepiece as spm
    text = ("Hello world .\nThe house is small .\nOpen the file .\n"
            "Das Haus ist klein .\nÖffne die Datei .\n")
    protos = []
    for seed in range(2):
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(text.splitlines()), model_writer=model,
            vocab_size=30 + seed, hard_vocab_limit=False,
            character_coverage=1.0, model_type="unigram", num_threads=1,
            # No normalization table: it is most of a model's bytes.
            normalization_rule_name="identity", minloglevel=2)
        protos.append(model.getvalue())
    from make_test_model import marian_vocab
    vocab = marian_vocab(*protos)
    sep = b"\n==tfm-fuzz==\n"
    vj = json.dumps(vocab, ensure_ascii=False).encode()
    n = len(vocab)
    sentence = "Öffne das Haus , world !".encode()
    for mode in range(3):
        put("Tokenizer", "mode%d" % mode, bytes([mode]) + struct.pack("<H", n) +
            protos[0] + sep + protos[1] + sep + vj + sep + sentence)
    base = bytes([0]) + struct.pack("<H", n) + protos[0] + sep + protos[1] + sep
    put("Tokenizer", "vocab-size", bytes([0]) + struct.pack("<H", n + 1) +
        protos[0] + sep + protos[1] + sep + vj + sep + sentence)
    put("Tokenizer", "vocab-escapes", base +
        b'{"\\u00d6": 0, "\\ud83d\\ude00": 1, "a\\"b": 2}' + sep + b"x")
    put("Tokenizer", "vocab-garbage", base + b'{"</s>": 0, "<unk>": 1.5' + sep)
    put("Tokenizer", "vocab-duplicate", base + b'{"</s>": 0, "</s>": 0}' + sep)
    put("Tokenizer", "spm-garbage", bytes([0]) + struct.pack("<H", n) +
        b"\x0a\x05hello" + sep + protos[1] + sep + vj + sep + sentence)
    put("Tokenizer", "missing", bytes([0, 3, 0]) + protos[0])


def lines_seeds():
    with open(os.path.join(ROOT, "examples", "en-de", "test.en"), "rb") as f:
        put("Lines", "test-en", b"".join(f.readlines()[:20]))
    put("Lines", "invalid-utf8",
        b"caf\xc3\xa9\n\xff\xfe bad\n\xe2\x82\n\xed\xa0\x80 surrogate\n"
        b"\xf4\x90\x80\x80 past U+10FFFF\n\xc0\xaf overlong\n\xf0\x9f\x98")
    put("Lines", "ids", b"12 7 0\n  5\t9 0  \n\n-1 0\n99999999999999999999 0\n")
    put("Lines", "blank", b" \t\r\n\n\x0b\x0c\n")
    put("Lines", "nul", b"a\0b\n\0\n")
    put("Lines", "overlong", b"word " * 40000 + b"\n\xe2\x82\xac" * 1000)


def vmap_compact(vocab, always, rules):
    """The compact vmap form (tfm/abi/Vmap.h's serializeVmap): magic, the
    vocabulary size, counts, the always-included ids, then per rule its
    n-gram length, target count, n-gram and targets, and an FNV-1a
    checksum of everything before it."""
    body = b"TFMVMAP1" + struct.pack("<III", vocab, len(always), len(rules))
    body += struct.pack(f"<{len(always)}i", *always)
    for key, targets in rules:
        body += struct.pack("<II", len(key), len(targets))
        body += struct.pack(f"<{len(key)}I{len(targets)}i", *key, *targets)
    h = 0xcbf29ce484222325
    for c in body:
        h = ((h ^ c) * 0x100000001b3) % (1 << 64)
    return body + struct.pack("<Q", h)


def vmap_seeds():
    # VmapFuzzer's vocabulary: pieces of one to three bytes (64 ids).
    put("Vmap", "text", "\ta b c\nx\ty z\nx y\tq\n\r\nab cd\tef\n")
    put("Vmap", "bad-line", "no tab here\n")
    put("Vmap", "unknown-pieces", "a\tlongpiece another\n")
    with open(os.path.join(ROOT, "examples", "en-de", "vmap.txt"),
              encoding="utf-8") as f:
        put("Vmap", "en-de-head", "".join(f.readline() for _ in range(20)))
    put("Vmap", "compact", vmap_compact(64, [0, 1, 5], [([3], [2, 9]), ([3, 4], [7])]))
    put("Vmap", "compact-other-vocab", vmap_compact(32000, [0], [([1], [2])]))


def serve_request_seeds():
    """Request bodies of tfm-serve after the byte choosing their
    Content-Type (ServeRequestFuzzer.cpp): 0 JSON, 1 a form, 2 JSON with
    parameters, 3 text/plain; +4 small limits. LibreTranslate's requests,
    /v1/translate's options, and test/Serve/serve-hostile.test's bad ones
    made small."""
    ok = {"q": "Open the file.", "source": "en", "target": "de"}
    def js(name, value, mode=0):
        body = value if isinstance(value, bytes) else json.dumps(value, ensure_ascii=False).encode()
        put("ServeRequest", name, bytes([mode]) + body)
    js("translate", ok)
    js("translate-params", dict(ok, alternatives=2, api_key="k", format="text"), 2)
    js("batch", dict(ok, q=["Open the file.", "", "Schließe sie.\nZwei Zeilen."]))
    js("batch-small-limits", dict(ok, q=["a", "b", "c", "d", "e"], alternatives=3), 4)
    js("long-item-small-limits", dict(ok, q="ö" * 20), 4)
    js("escapes", b'{"q": "\\u00d6\\ud83d\\ude00\\n", "source": "auto", "target": "de", '
                  b'"alternatives": "-1", "api_key": null}')
    js("native", {"source": ["a", "b"], "source_lang": "en", "target_lang": "de",
                  "beam_size": 4, "n_best": 2, "return_scores": True, "max_length": 64,
                  "max_length_ratio": 3, "min_length": 0, "length_penalty": 1.0,
                  "target_prefix": [["\u2581Die", 5], None]})
    js("native-numbers", {"source": ["a"], "target_lang": "de", "beam_size": 2.0,
                          "max_length": 1e300, "length_penalty": -0.5})
    form = ("q=Open+the%20file.&source=en&target=de&alternatives=1&api_key=k%26"
            "&q=second").encode()
    js("form", form, 1)
    js("form-small-limits", b"q=" + b"%C3%A9" * 20 + b"&source=en&target=de&alternatives=-3", 5)
    js("text-plain", ok, 3)
    # The bad requests of test/Serve/serve-hostile.test.
    for name, value in [
            ("bad-json", b'{"q": "a", '), ("not-object", b"[1, 2]"),
            ("q-number", dict(ok, q=5)), ("q-array-number", dict(ok, q=["a", 3])),
            ("q-empty-array", dict(ok, q=[])), ("format-html", dict(ok, format="html")),
            ("alternatives-x", dict(ok, alternatives="x")),
            ("alternatives-many", dict(ok, alternatives=100)),
            ("deep", b'{"q": ' + b"[" * 40 + b"]" * 40 + b"}"),
            ("invalid-utf8", b'{"q": "\xff\xfe", "source": "en", "target": "de"}'),
            ("lone-surrogate", b'{"q": "\\udc80", "source": "en", "target": "de"}'),
            ("native-unknown", {"source": ["a"], "target_lang": "de", "beamsize": 2}),
            ("native-prefix", {"source": ["a"], "target_lang": "de",
                               "target_prefix": [["</s>", -1, 1 << 40]]})]:
        js(name, value)
    js("form-invalid-utf8", b"q=%FF%FE&source=en&target=de", 1)


def ir_seeds():
    n = 0
    for d in ["test/Dialect/Tfm", "test/Transforms"]:
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if not name.endswith(".mlir"):
                continue
            with open(os.path.join(ROOT, d, name)) as f:
                text = f.read()
            for i, part in enumerate(text.split("// -----")):
                # The RUN and CHECK lines are comments: dropped, they only
                # make the inputs longer.
                body = "\n".join(l for l in part.splitlines()
                                 if not l.lstrip().startswith("//"))
                if body.strip():
                    put("TfmIR", "%s-%d" % (name[:-5], i), body.strip() + "\n")
                    n += 1


def checkpoint_seeds(micro, tmp):
    """pytorch_model.bin and Marian .npz files of the micro model, as the
    format tests make them, and hostile pickles."""
    import shutil
    import subprocess
    import zipfile
    models = os.path.join(ROOT, "test", "models")
    for name, flags in (("plain", []), ("views", ["--views", "--parameters"]),
                        ("evil", ["--foreign-global"])):
        d = os.path.join(tmp, "torch-" + name)
        shutil.copytree(micro, d)
        subprocess.check_call([sys.executable, os.path.join(models, "torch_checkpoint.py"), d] + flags)
        put("TorchCheckpoint", name, open(os.path.join(d, "pytorch_model.bin"), "rb").read())
    for name, pickle in (("deep", b"\x80\x02)" + b"\x85" * 100 + b"."),
                         ("memo", b"\x80\x02(K\x01K\x02tq\x00h\x00h\x00t.")):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            z.writestr("archive/data.pkl", pickle)
        put("TorchCheckpoint", name, out.getvalue())
    hf = os.path.join(tmp, "marian-hf")
    subprocess.check_call([sys.executable, os.path.join(models, "make_test_model.py"), hf,
                           "--size", "micro", "--positions", "sinusoidal"], stdout=subprocess.DEVNULL)
    marian = os.path.join(tmp, "marian")
    subprocess.check_call([sys.executable, os.path.join(models, "marian_checkpoint.py"), hf, marian])
    put("MarianCheckpoint", "model", open(os.path.join(marian, "model.npz"), "rb").read())


def main():
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        micro = os.path.join(tmp, "micro")
        subprocess.check_call([sys.executable, os.path.join(
            ROOT, "test", "models", "make_test_model.py"), micro,
            "--size", "micro"], stdout=subprocess.DEVNULL)
        # Everything but the inputs that once crashed a target (crash-*),
        # which stay as regression seeds.
        for target in ["Safetensors", "ModelConfig", "TorchCheckpoint",
                       "MarianCheckpoint", "WeightsFile", "Tokenizer", "Lines",
                       "TfmIR", "ServeRequest", "Vmap"]:
            d = os.path.join(CORPUS, target)
            for name in os.listdir(d) if os.path.isdir(d) else []:
                if not name.startswith("crash-"):
                    os.remove(os.path.join(d, name))
        safetensors_seeds()
        config_seeds(micro)
        checkpoint_seeds(micro, tmp)
    weights_seeds()
    tokenizer_seeds()
    lines_seeds()
    ir_seeds()
    serve_request_seeds()
    vmap_seeds()


if __name__ == "__main__":
    main()
