"""Text in and out for the reference implementation, in Marian's layout and
independent of the runtime's C++: python3-sentencepiece for the pieces,
Python's own UTF-8 decoder for invalid bytes.

  source.spm   source text -> pieces
  vocab.json   pieces <-> ids (shared; a piece not in it is <unk>)
  target.spm   output pieces -> text

The conventions the translator follows too: lines end at b"\\n" only; a line
of nothing but " \\t\\r\\v\\f" is blank (an empty output line, not
translated); invalid UTF-8 is replaced by U+FFFD, one per maximal invalid
subsequence (Python's errors="replace"); EOS ends every source, and a source
longer than the model's positions keeps its first max_positions - 1 pieces
and EOS.
"""
import json
import os

BLANK = " \t\r\v\f"


def has_tokenizer(model_dir):
    return all(os.path.exists(os.path.join(model_dir, f))
               for f in ("source.spm", "target.spm", "vocab.json"))


def read_lines(data):
    """The lines of `data` (bytes): split at b"\\n", a last line without one
    counts."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def truncate(ids, max_positions, eos):
    """At most max_positions ids; a sentence that ends in EOS keeps it."""
    if len(ids) <= max_positions:
        return ids
    return ids[: max_positions - 1] + [eos] if ids[-1] == eos else ids[:max_positions]


class Tokenizer:
    def __init__(self, model_dir, eos_id, pad_id):
        import sentencepiece as spm
        self.source = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
        self.target = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "target.spm"))
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        self.pieces = {i: p for p, i in self.vocab.items()}
        self.unk = self.vocab["<unk>"]
        self.eos, self.pad = eos_id, pad_id

    def encode(self, line):
        """Bytes of one line -> source ids ending in EOS, or [] if blank."""
        text = line.decode("utf-8", errors="replace")
        if text.strip(BLANK) == "":
            return []
        pieces = self.source.encode(text, out_type=str)
        return [self.vocab.get(p, self.unk) for p in pieces] + [self.eos]

    def encode_target(self, line):
        """Bytes of one target line -> the ids of its target pieces (no EOS),
        to score it."""
        text = line.decode("utf-8", errors="replace")
        pieces = self.target.encode(text, out_type=str)
        return [self.vocab.get(p, self.unk) for p in pieces]

    def decode(self, ids):
        pieces = [self.pieces[i] for i in ids if i not in (self.eos, self.pad)]
        return self.target.decode_pieces(pieces)
