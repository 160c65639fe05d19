#!/usr/bin/env python3
"""Corpus BLEU and chrF of a translation against one reference.

  metrics.py HYP REF [--bleu-only | --chrf-only] [--score-only]
             [--min-bleu B] [--min-chrf C]
             [--baseline HYP0 --max-bleu-drop D --min-identical F]
  metrics.py --tokenize FILE     prints FILE in the 13a tokenization

HYP and REF are text files of the same number of lines (detokenized text,
one sentence a line). Prints

  BLEU = 23.41 55.1/30.2/18.0/11.1 (BP = 1.000 ratio = 1.012 hyp_len = 9012 ref_len = 8905)
  chrF2 = 48.77

With --baseline (another system's translation of the same lines, e.g. the
fp32 translator's when HYP is bf16's) it also prints the fraction of lines
identical to the baseline and the BLEU change, and exits 1 when fewer than
F of the lines are identical or BLEU fell by more than D.

The definitions are the usual ones for comparable scores (those of
sacreBLEU's defaults), written here from the papers and the mteval-v13a
tokenizer's rules:

BLEU (Papineni et al., 2002), corpus level: both sides in the 13a
tokenization, case kept; for n = 1..4 the n-gram matches of each sentence,
clipped by the reference's counts, summed over the corpus and divided by the
hypothesis' n-gram count summed over the corpus; the geometric mean of the
four precisions times the brevity penalty exp(1 - r/c) when the hypothesis
length c (tokens, whole corpus) is below the reference's r, else 1. No
smoothing: an order without a single match gives 0. (sacreBLEU's default
'exp' smoothing differs only in that case, which a real test set of some
size never meets.)

13a tokenization (mteval-v13a.pl): the entities &quot; &amp; &lt; &gt;
become their characters, then ASCII punctuation other than the period, the
comma, the apostrophe and the hyphen becomes a token of its own; a period or
comma does too unless it stands between digits ("3.14" and "1,000" stay); a
hyphen after a digit is split off ("3-4" -> "3 - 4"); tokens are what
whitespace separates.

chrF (Popović, 2015), beta = 2, character n-grams n = 1..6 of each sentence
with all whitespace removed: per order n, the matches (clipped counts) and
the hypothesis' and reference's n-gram counts summed over the corpus;
precision and recall averaged over the orders that have n-grams on both
sides; chrF = (1 + b²) P R / (b² P + R), times 100.
"""
import argparse
import collections
import math
import re
import sys

# mteval-v13a's punctuation class: ASCII symbols except . , ' -
_PUNCT = re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])")
_PERIOD_COMMA_AFTER = re.compile(r"([^0-9])([\.,])")
_PERIOD_COMMA_BEFORE = re.compile(r"([\.,])([^0-9])")
_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")


def tokenize_13a(line):
    """The tokens of one line, as mteval-v13a.pl (with its defaults) has them."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (line.replace("&quot;", '"').replace("&amp;", "&")
                .replace("&lt;", "<").replace("&gt;", ">"))
    line = " " + line + " "
    line = _PUNCT.sub(r" \1 ", line)
    line = _PERIOD_COMMA_AFTER.sub(r"\1 \2 ", line)
    line = _PERIOD_COMMA_BEFORE.sub(r" \1 \2", line)
    line = _DASH_AFTER_DIGIT.sub(r"\1 \2 ", line)
    return line.split()


def ngram_counts(items, n):
    return collections.Counter(tuple(items[i:i + n]) for i in range(len(items) - n + 1))


class Bleu:
    def __init__(self, score, precisions, bp, hyp_len, ref_len):
        self.score, self.precisions, self.bp = score, precisions, bp
        self.hyp_len, self.ref_len = hyp_len, ref_len

    def __str__(self):
        ratio = self.hyp_len / self.ref_len if self.ref_len else 0.0
        precisions = "/".join(f"{p:.1f}" for p in self.precisions)
        return (f"BLEU = {self.score:.2f} {precisions} (BP = {self.bp:.3f} ratio = {ratio:.3f} "
                f"hyp_len = {self.hyp_len} ref_len = {self.ref_len})")


def corpus_bleu(hyps, refs, max_order=4):
    matches, totals = [0] * max_order, [0] * max_order
    hyp_len = ref_len = 0
    for hyp, ref in zip(hyps, refs):
        h, r = tokenize_13a(hyp), tokenize_13a(ref)
        hyp_len += len(h)
        ref_len += len(r)
        for n in range(1, max_order + 1):
            hc, rc = ngram_counts(h, n), ngram_counts(r, n)
            matches[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            totals[n - 1] += max(0, len(h) - n + 1)
    precisions = [100.0 * m / t if t else 0.0 for m, t in zip(matches, totals)]
    if hyp_len == 0:
        bp = 0.0
    elif hyp_len < ref_len:
        bp = math.exp(1.0 - ref_len / hyp_len)
    else:
        bp = 1.0
    if min(matches) == 0:
        score = 0.0
    else:
        score = bp * math.exp(sum(math.log(p / 100.0) for p in precisions) / max_order) * 100.0
    return Bleu(score, precisions, bp, hyp_len, ref_len)


def char_ngrams(text, n):
    return ngram_counts(list("".join(text.split())), n)


def corpus_chrf(hyps, refs, max_order=6, beta=2.0):
    hyp_total, ref_total, match = [0] * max_order, [0] * max_order, [0] * max_order
    for hyp, ref in zip(hyps, refs):
        for n in range(1, max_order + 1):
            hc, rc = char_ngrams(hyp, n), char_ngrams(ref, n)
            hyp_total[n - 1] += sum(hc.values())
            ref_total[n - 1] += sum(rc.values())
            match[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
    precision = recall = 0.0
    orders = 0
    for h, r, m in zip(hyp_total, ref_total, match):
        if h > 0 and r > 0:
            precision += m / h
            recall += m / r
            orders += 1
    if orders == 0:
        return 0.0
    precision, recall = precision / orders, recall / orders
    if precision + recall == 0:
        return 0.0
    b2 = beta * beta
    return 100.0 * (1 + b2) * precision * recall / (b2 * precision + recall)


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hyp", nargs="?")
    ap.add_argument("ref", nargs="?")
    ap.add_argument("--tokenize", metavar="FILE")
    ap.add_argument("--bleu-only", action="store_true")
    ap.add_argument("--chrf-only", action="store_true")
    ap.add_argument("--score-only", action="store_true",
                    help="print the bare numbers, BLEU then chrF")
    ap.add_argument("--min-bleu", type=float, help="exit 1 when BLEU is below this")
    ap.add_argument("--min-chrf", type=float, help="exit 1 when chrF is below this")
    ap.add_argument("--baseline", metavar="HYP0", help="compare HYP with this translation")
    ap.add_argument("--max-bleu-drop", type=float, default=float("inf"),
                    help="exit 1 when BLEU is this much below the baseline's")
    ap.add_argument("--min-identical", type=float, default=0.0,
                    help="exit 1 when fewer than this fraction of lines equal the baseline's")
    a = ap.parse_args()
    if a.tokenize:
        for line in read_lines(a.tokenize):
            print(" ".join(tokenize_13a(line)))
        return 0
    if not a.hyp or not a.ref:
        ap.error("HYP and REF are needed")
    hyps, refs = read_lines(a.hyp), read_lines(a.ref)
    if len(hyps) != len(refs):
        print(f"metrics.py: {a.hyp} has {len(hyps)} lines, {a.ref} has {len(refs)}",
              file=sys.stderr)
        return 1
    status = 0
    if not a.chrf_only:
        bleu = corpus_bleu(hyps, refs)
        print(f"{bleu.score:.2f}" if a.score_only else bleu)
        if a.min_bleu is not None and bleu.score < a.min_bleu:
            print(f"metrics.py: BLEU {bleu.score:.2f} is below {a.min_bleu}", file=sys.stderr)
            status = 1
    if not a.bleu_only:
        chrf = corpus_chrf(hyps, refs)
        print(f"{chrf:.2f}" if a.score_only else f"chrF2 = {chrf:.2f}")
        if a.min_chrf is not None and chrf < a.min_chrf:
            print(f"metrics.py: chrF2 {chrf:.2f} is below {a.min_chrf}", file=sys.stderr)
            status = 1
    if a.baseline:
        base = read_lines(a.baseline)
        if len(base) != len(hyps):
            print(f"metrics.py: {a.baseline} has {len(base)} lines, {a.hyp} has {len(hyps)}",
                  file=sys.stderr)
            return 1
        identical = sum(x == y for x, y in zip(hyps, base)) / len(hyps)
        change = corpus_bleu(hyps, refs).score - corpus_bleu(base, refs).score
        print(f"identical to the baseline: {100 * identical:.1f}%; BLEU change {change:+.2f}")
        if identical < a.min_identical:
            print(f"metrics.py: {100 * identical:.1f}% of the lines equal the baseline's, "
                  f"fewer than {100 * a.min_identical:g}%", file=sys.stderr)
            status = 1
        if change < -a.max_bleu_drop:
            print(f"metrics.py: BLEU fell by {-change:.2f}, more than {a.max_bleu_drop}",
                  file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
