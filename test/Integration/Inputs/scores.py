"""Checks of the translator's scored output on its own terms.

  scores.py sums FILE PENALTY   each "SCORE<TAB>TOKENS<TAB>TOKEN SCORES" line:
                                SCORE = sum / length^PENALTY, the tokens'
                                scores one per token (and one for EOS)
  scores.py first-zero FILE     every line's first token score is 0 (forced)
  scores.py python MODEL SOURCE FILE [OPTIONS_JSON]
                                the Python API's scores (return_scores,
                                return_token_scores) are the translator's
                                FILE (--token-scores output, 1-best)
  scores.py python-score MODEL SOURCE TARGET FILE
                                score_batch gives translator --score
                                --token-scores's FILE
"""
import json
import sys


def lines(path):
    for n, line in enumerate(open(path).read().splitlines(), 1):
        score, tokens, token_scores = line.split("\t")
        yield n, float(score), tokens.split(), [float(x) for x in token_scores.split()]


def sums(path, penalty):
    for n, score, tokens, token_scores in lines(path):
        if len(token_scores) not in (len(tokens), len(tokens) + 1):
            sys.exit(f"line {n}: {len(token_scores)} token scores for {len(tokens)} tokens")
        expected = sum(token_scores) / len(token_scores) ** penalty
        if abs(expected - score) > 1e-4 * max(1.0, abs(score)):
            sys.exit(f"line {n}: score {score}, token scores give {expected}")
    print("sums: ok")


def first_zero(path):
    for n, _, tokens, token_scores in lines(path):
        if token_scores[0] != 0.0:
            sys.exit(f"line {n}: the forced first token scores {token_scores[0]}")
    print("first-zero: ok")


def python_api(model, source, path, options):
    import tfmc
    sources = [[int(t) for t in line.split()] for line in open(source)]
    results = tfmc.Translator(model).translate_batch(
        sources, return_scores=True, return_token_scores=True, max_batch_size=3, **options)
    for (n, score, tokens, token_scores), r in zip(lines(path), results):
        if [str(t) for t in r.hypotheses[0]] != tokens:
            sys.exit(f"line {n}: {r.hypotheses[0]}, the translator printed {tokens}")
        found = [r.scores[0]] + r.token_scores[0]
        if len(found) != len(token_scores) + 1 or any(
                abs(x - y) > 1e-5 * max(1.0, abs(y)) for x, y in zip(found, [score] + token_scores)):
            sys.exit(f"line {n}: scores {found}, the translator printed {[score] + token_scores}")
    print("python: ok")


def python_score(model, source, target, path):
    import tfmc
    ids = lambda f: [[int(t) for t in line.split()] for line in open(f).read().splitlines()]
    results = tfmc.Translator(model).score_batch(ids(source), ids(target), max_batch_size=3)
    expected = [line.split("\t") for line in open(path).read().splitlines()]
    if len(results) != len(expected):
        sys.exit(f"{len(results)} results for {len(expected)} lines")
    for n, (r, (score, token_scores)) in enumerate(zip(results, expected), 1):
        want = [float(score)] + [float(x) for x in token_scores.split()]
        found = [r.score] + r.token_scores
        if len(found) != len(want) or any(abs(x - y) > 1e-5 * max(1.0, abs(y))
                                          for x, y in zip(found, want)):
            sys.exit(f"line {n}: {r}, the translator printed {want}")
    # Mismatched lists are refused by name.
    try:
        tfmc.Translator(model).score_batch(ids(source), ids(target)[:-1])
        sys.exit("a target list one short was accepted")
    except ValueError as e:
        print(f"ValueError: {e}")
    print("python score_batch: ok")


if __name__ == "__main__":
    if sys.argv[1] == "python-score":
        python_score(*sys.argv[2:6])
        sys.exit(0)
    if sys.argv[1] == "sums":
        sums(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1] == "python":
        python_api(sys.argv[2], sys.argv[3], sys.argv[4],
                   json.loads(sys.argv[5]) if len(sys.argv) > 5 else {})
    else:
        first_zero(sys.argv[2])
