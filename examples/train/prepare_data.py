#!/usr/bin/env python3
"""English -> German parallel text from the gettext catalogs installed on Debian.

  prepare_data.py [--out-train DIR] [--out-test DIR] [--seed S]
                  [--test N] [--dev N] [--list-sources]

Reads every German catalog (*.mo under a .../de/LC_MESSAGES/ folder) below
/usr/share and /usr/lib (the latter for LibreOffice's
/usr/lib/libreoffice/program/resource/de/LC_MESSAGES), takes the English
msgid and German msgstr of each entry, cleans and deduplicates them, and
writes:

  examples/train/data/train.tsv.xz   training pairs, "english<TAB>german"
  examples/train/data/dev.tsv        development pairs (best checkpoint)
  examples/train/data/sources.tsv    catalog, Debian package, version, pairs
  examples/en-de/test.en, test.de    the held-out test set

The committed outputs are the training data of the bundled model: packages
and their versions change, so re-running this may give a slightly different
corpus; training reads the committed files. Which packages were installed
for the committed corpus is in examples/en-de/README.md.

Cleaning, in order:
  - entries: the header (empty msgid) is skipped; "context\\x04msgid" loses
    its context; plural entries "singular\\0plural" / "form0\\0form1..." give
    the singular pair; catalogs in another charset than UTF-8 are decoded with
    theirs.
  - text: newlines and tabs become spaces, runs of whitespace one space;
    simple markup (<b>, <i>, <u>, <big>, <small>, <tt>, <span ...>) is
    removed; a mnemonic marker (_ & ~ before a letter, as GTK, Qt and
    LibreOffice mark access keys) is removed from both sides when neither
    has more than one of that kind.
  - filters: both sides need a letter; at most 200 characters a side; a
    German side identical to the English is kept only when short (<= 30
    characters: names, "OK", "Status"); a German side 4x longer or shorter
    than the English (in characters, beyond 20) is dropped as misaligned;
    the ISO code-name catalogs iso_639-3 and iso_3166-2 (thousands of proper
    names of languages and regions) are left out.
  - duplicates: one pair per English source, with the German translation
    that most catalogs give (ties: the alphabetically first).
  - split: English sources are grouped by a key (lower case, letters and
    digits only) so that "Open File", "Open file" and "Open file..." fall
    on the same side; the groups are shuffled with a fixed seed and the
    first ones give the test set, the next the development set, the rest
    training. Test and training therefore share no English source, not even
    up to case and punctuation.
"""
import argparse
import collections
import lzma
import os
import random
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SEARCH_ROOTS = ["/usr/share", "/usr/lib"]
EXCLUDED_CATALOGS = {"iso_639-3", "iso_639_3", "iso_3166-2", "iso_3166_2"}
MAX_CHARS = 200


def find_catalogs():
    found = []
    for top in SEARCH_ROOTS:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            if not dirpath.endswith("/de/LC_MESSAGES"):
                continue
            for name in sorted(filenames):
                if name.endswith(".mo") and name[:-3] not in EXCLUDED_CATALOGS:
                    found.append(os.path.join(dirpath, name))
    return sorted(set(os.path.realpath(p) for p in found))


def read_mo(path):
    """[(msgid bytes, msgstr bytes)] of a GNU .mo file (either byte order)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0x950412DE:
        order = "<"
    elif magic == 0xDE120495:
        order = ">"
    else:
        return []
    _, count, orig_table, trans_table = struct.unpack(order + "4I", data[4:20])
    entries = []
    for i in range(count):
        olen, ooff = struct.unpack(order + "2I", data[orig_table + 8 * i: orig_table + 8 * i + 8])
        tlen, toff = struct.unpack(order + "2I", data[trans_table + 8 * i: trans_table + 8 * i + 8])
        entries.append((data[ooff: ooff + olen], data[toff: toff + tlen]))
    return entries


def charset_of(entries):
    for msgid, msgstr in entries:
        if msgid == b"":
            m = re.search(rb"charset=([A-Za-z0-9_.:-]+)", msgstr)
            if m:
                return m.group(1).decode("ascii")
    return "utf-8"


MARKUP = re.compile(r"</?(?:b|i|u|big|small|tt|span)(?:\s[^<>]*)?>", re.I)
MNEMONICS = {"_": re.compile(r"_(?=\w)"), "&": re.compile(r"&(?=\w)(?!\w+;)"),
             "~": re.compile(r"~(?=\w)")}


def clean_text(s):
    s = MARKUP.sub("", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s


def strip_mnemonics(en, de):
    """Removes the access-key marker of each side (at most one a side; a
    side with several of a kind, like an identifier a_b_c, is left as is)."""
    for pattern in MNEMONICS.values():
        if len(pattern.findall(en)) <= 1 and len(pattern.findall(de)) <= 1:
            en, de = pattern.sub("", en), pattern.sub("", de)
    return en, de


def has_letter(s):
    return any(ch.isalpha() for ch in s)


def pair_of(msgid, msgstr):
    """The cleaned (english, german) of one catalog entry, or None."""
    if not msgid or not msgstr:
        return None
    if "\x04" in msgid:
        msgid = msgid.split("\x04", 1)[1]
    en = msgid.split("\x00")[0]
    de = msgstr.split("\x00")[0]
    en, de = clean_text(en), clean_text(de)
    if not en or not de:
        return None
    if "\t" in en or "\t" in de:
        return None
    en, de = (clean_text(s) for s in strip_mnemonics(en, de))
    if not has_letter(en) or not has_letter(de):
        return None
    if len(en) > MAX_CHARS or len(de) > MAX_CHARS:
        return None
    if en == de and len(en) > 30:
        return None
    le, ld = len(en), len(de)
    if max(le, ld) > 20 and (ld > 4 * le or le > 4 * ld):
        return None
    return en, de


def owning_packages(paths):
    """{path: (package, version)} from dpkg's file lists."""
    owner = {}
    info = "/var/lib/dpkg/info"
    wanted = set(paths)
    for name in sorted(os.listdir(info)):
        if not name.endswith(".list"):
            continue
        with open(os.path.join(info, name), errors="replace") as f:
            for line in f:
                p = line.rstrip("\n")
                if p in wanted:
                    owner[p] = name[:-5].split(":")[0]
    versions = {}
    pkgs = sorted(set(owner.values()))
    if pkgs:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Version}\n"] + pkgs,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            pkg, ver = line.split(" ", 1)
            versions[pkg] = ver
    return {p: (owner.get(p, "?"), versions.get(owner.get(p, ""), "?")) for p in paths}


def split_key(en):
    return "".join(ch for ch in en.lower() if ch.isalnum())


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-train", default=os.path.join(HERE, "data"))
    ap.add_argument("--out-test", default=os.path.join(ROOT, "examples", "en-de"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--dev", type=int, default=1000)
    args = ap.parse_args()

    catalogs = find_catalogs()
    counts = collections.defaultdict(collections.Counter)  # en -> Counter(de)
    per_catalog = {}
    for path in catalogs:
        entries = read_mo(path)
        charset = charset_of(entries)
        n = 0
        for raw_id, raw_str in entries:
            try:
                msgid = raw_id.decode(charset)
                msgstr = raw_str.decode(charset)
            except (UnicodeDecodeError, LookupError):
                continue
            pair = pair_of(msgid, msgstr)
            if pair:
                counts[pair[0]][pair[1]] += 1
                n += 1
        per_catalog[path] = n

    pairs = []
    for en in sorted(counts):
        de = sorted(counts[en].items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        pairs.append((en, de))

    groups = collections.defaultdict(list)
    for en, de in pairs:
        groups[split_key(en)].append((en, de))
    keys = sorted(groups)
    random.Random(args.seed).shuffle(keys)
    test, dev, train = [], [], []
    for key in keys:
        if len(test) < args.test:
            test.append(groups[key][0])  # one sentence a group keeps the test set varied
        elif len(dev) < args.dev:
            dev.append(groups[key][0])
        else:
            train.extend(groups[key])
    random.Random(args.seed + 1).shuffle(train)

    os.makedirs(args.out_train, exist_ok=True)
    os.makedirs(args.out_test, exist_ok=True)
    with lzma.open(os.path.join(args.out_train, "train.tsv.xz"), "wt", encoding="utf-8",
                   preset=9 | lzma.PRESET_EXTREME) as f:
        for en, de in train:
            f.write(f"{en}\t{de}\n")
    with open(os.path.join(args.out_train, "dev.tsv"), "w", encoding="utf-8") as f:
        for en, de in dev:
            f.write(f"{en}\t{de}\n")
    with open(os.path.join(args.out_test, "test.en"), "w", encoding="utf-8") as fe, \
            open(os.path.join(args.out_test, "test.de"), "w", encoding="utf-8") as fd:
        for en, de in test:
            fe.write(en + "\n")
            fd.write(de + "\n")
    owners = owning_packages(catalogs)
    with open(os.path.join(args.out_train, "sources.tsv"), "w", encoding="utf-8") as f:
        f.write("catalog\tpackage\tversion\tpairs\n")
        for path in catalogs:
            pkg, ver = owners[path]
            f.write(f"{path}\t{pkg}\t{ver}\t{per_catalog[path]}\n")
    print(f"{len(catalogs)} catalogs, {sum(per_catalog.values())} usable entries, "
          f"{len(pairs)} unique English sources: {len(train)} train, {len(dev)} dev, "
          f"{len(test)} test", file=sys.stderr)


if __name__ == "__main__":
    main()
