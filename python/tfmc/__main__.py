"""python -m tfmc translate MODEL_DIR [options] < input > output

The compiled translator's common options, for a Python that has tfmc but
no translator binary at hand: each line of stdin is a sentence, each of
its translations a line of stdout, in the translator's formats (--n-best:
"INDEX ||| TRANSLATION ||| SCORE"; --with-scores: "SCORE<TAB>TRANSLATION");
with --format html, stdin is one HTML document, written translated with
its markup kept. The options keep the translator's names and defaults; their values are
judged by tfmc.Translator, as the translator's by the runtime.
"""

import argparse
import os
import re
import sys
import warnings

PROG = "python -m tfmc"

# (flags, keyword of translate_batch, argparse type, metavar, help): the
# options given go to translate_batch, the others keep its defaults, which
# are the translator's.
SEARCH_OPTIONS = [
    (("-b", "--beam-size"), "beam_size", int, "N", "beam width (1: greedy; default 1)"),
    (("-n", "--n-best"), "n_best", int, "N",
     'print the N best hypotheses of each sentence as "INDEX ||| TRANSLATION ||| SCORE" lines'),
    (("--batch-size",), "max_batch_size", int, "N", "sentences decoded together (default 32)"),
    (("--max-length",), "max_length", int, "N", "at most N target tokens, EOS included (default 256)"),
    (("--max-length-ratio",), "max_length_ratio", float, "R",
     "also at most R * source tokens + 5 (0: off; default 3)"),
    (("--min-length",), "min_length", int, "N", "no EOS before N tokens (default 0)"),
    (("--length-penalty",), "length_penalty", float, "A",
     "scores are sum(log p) / length^A, EOS counted (default 1)"),
    (("--repetition-penalty",), "repetition_penalty", float, "R",
     "penalize tokens already in the hypothesis (1: off; default: the checkpoint's)"),
    (("--no-repeat-ngram-size",), "no_repeat_ngram_size", int, "N",
     "no n-gram of N tokens twice in a hypothesis (0: off; default: the checkpoint's)"),
    (("--sampling-topk",), "sampling_topk", int, "K",
     "sample instead of searching: keep the K most probable tokens (0: all)"),
    (("--sampling-topp",), "sampling_topp", float, "P",
     "sampling: keep the fewest most probable tokens whose probabilities sum to P"),
    (("--sampling-temperature",), "sampling_temperature", float, "T",
     "sampling: divide the logits by T first"),
    (("--seed",), "seed", int, "S", "sampling's seed; each line draws from its own streams"),
    (("--source-lang",), "source_lang", str, "CODE",
     "the source language (de, or the model's code: __de__, deu_Latn, de_DE)"),
    (("--target-lang",), "target_lang", str, "CODE",
     "the target language: its token is forced first in every translation"),
]


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog=PROG, description="Translation with models compiled by tfmc.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    translate = commands.add_parser(
        "translate", help="translate stdin to stdout, a sentence a line",
        description="Translates each line of stdin to a line of stdout, as "
                    "MODEL_DIR/translator does with the same options.")
    translate.add_argument("model_dir", metavar="MODEL_DIR",
                           help="a directory `tfmc compile -o` wrote")
    for flags, keyword, kind, metavar, text in SEARCH_OPTIONS:
        translate.add_argument(*flags, dest=keyword, type=kind, metavar=metavar, help=text)
    translate.add_argument("--target-prefix", metavar="TOKENS",
                           help="start every translation with these space-separated "
                                "target vocabulary pieces")
    translate.add_argument("--with-scores", action="store_true",
                           help="print each translation after its score and a TAB")
    translate.add_argument("--token-scores", action="store_true",
                           help="also print each token's log-probability (EOS's last)")
    translate.add_argument("--vmap", metavar="FILE",
                           help="a vocabulary shortlist instead of the model's")
    translate.add_argument("--no-vmap", action="store_true",
                           help="the whole target vocabulary, not the shortlist")
    translate.add_argument("--threads", type=int, default=2, metavar="N",
                           help="worker threads (default 2)")
    translate.add_argument("-q", "--quiet", action="store_true",
                           help="no warnings")
    translate.add_argument("--format", choices=("text", "html"), default="text",
                           help="html: stdin is one HTML document or fragment, "
                                "written translated with its markup kept "
                                "(default text: a sentence a line)")
    arguments = parser.parse_args(argv)
    if arguments.format == "html":
        check_html_options(translate, arguments)
    if arguments.vmap is not None and arguments.no_vmap:
        translate.error("--vmap and --no-vmap exclude each other")
    if arguments.target_prefix is not None and not arguments.target_prefix.split():
        translate.error("--target-prefix expects target tokens, found only blanks")
    return arguments


def check_html_options(parser, arguments):
    """--format html writes one translated document: the options of one
    sentence a line are refused, named as the translator names them."""
    if (arguments.n_best or 1) > 1:
        parser.error("--format html writes one translation of each document: "
                     f"it takes no --n-best {arguments.n_best}")
    for option, given in (("--with-scores", arguments.with_scores),
                          ("--token-scores", arguments.token_scores),
                          ("--target-prefix", arguments.target_prefix is not None)):
        if given:
            parser.error(f"--format html writes translated documents: it takes no "
                         f"{option} (an option of one sentence a line)")


def read_lines(stream):
    """stdin's lines without their '\\n', as the translator cuts them; bytes
    that are not UTF-8 become lone surrogates, which the module replaces
    by U+FFFD with a warning, as the translator does."""
    data = stream.read()
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [line.decode("utf-8", "surrogateescape") for line in lines]


def keyword_options(arguments, count):
    """translate_batch's keywords for `count` sentences."""
    options = {keyword: getattr(arguments, keyword)
               for _, keyword, _, _, _ in SEARCH_OPTIONS
               if getattr(arguments, keyword) is not None}
    options["return_scores"] = True
    options["return_token_scores"] = arguments.token_scores
    if arguments.no_vmap:
        options["use_vmap"] = False
    if arguments.target_prefix is not None:
        options["target_prefix"] = [arguments.target_prefix.split()] * count
    return options


def show(score):
    """A score as the translator prints it (C's %g)."""
    return format(score, "g")


def format_results(results, arguments):
    """The translator's output lines for `results`, in input order."""
    n_best = arguments.n_best or 1
    out = []
    for index, result in enumerate(results):
        hypotheses = result.hypotheses or [""]
        scores = result.scores or [0.0]
        token_scores = result.token_scores or [[]] * len(hypotheses)
        for hypothesis, score, tokens in zip(hypotheses, scores, token_scores):
            if n_best > 1:
                line = f"{index} ||| {hypothesis} ||| {show(score)}"
            elif arguments.with_scores or arguments.token_scores:
                line = f"{show(score)}\t{hypothesis}"
            else:
                line = hypothesis
            if arguments.token_scores:
                line += (" ||| " if n_best > 1 else "\t") + " ".join(map(show, tokens))
            out.append(line + "\n")
    return "".join(out)


def report_warning(message, category, filename, lineno, file=None, line=None):
    """A warning as the translator words it: the module's "sentence I"
    (from 0) is stdin's line I + 1."""
    where = re.match(r"sentence (\d+): ", str(message))
    if where:
        message = f"stdin:{int(where.group(1)) + 1}: {str(message)[where.end():]}"
    sys.stderr.write(f"{PROG}: warning: {message}\n")


def translate(arguments):
    import tfmc

    translator = tfmc.Translator(arguments.model_dir, threads=arguments.threads)
    if arguments.vmap is not None:
        skipped = translator.read_vmap(arguments.vmap)
        if skipped and not arguments.quiet:
            report_warning(skipped, UserWarning, None, 0)
    if arguments.format == "html":
        translate_document(translator, arguments)
        return
    lines = read_lines(sys.stdin.buffer)
    # One call: sentence i is seeded from its index, as the translator
    # seeds a line from its number, so samples match the translator's.
    results = translator.translate_batch(lines, **keyword_options(arguments, len(lines)))
    sys.stdout.buffer.write(format_results(results, arguments).encode("utf-8", "surrogateescape"))
    sys.stdout.flush()


def translate_document(translator, arguments):
    """stdin as one HTML document (bytes that are not UTF-8 replaced, as
    the translator replaces them), translated to stdout."""
    document = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    options = keyword_options(arguments, 1)
    for keyword in ("return_scores", "return_token_scores"):
        del options[keyword]
    result = translator.translate_batch([document], format="html", **options)
    sys.stdout.buffer.write(result[0].hypotheses[0].encode("utf-8"))
    sys.stdout.flush()


def main(argv=None):
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    warnings.showwarning = report_warning
    if arguments.quiet:
        warnings.simplefilter("ignore")
    else:
        warnings.simplefilter("always")
    try:
        translate(arguments)
    except BrokenPipeError:
        # A reader that went away (`| head`) ends us as quietly as SIGPIPE
        # ends the translator.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except (TypeError, ValueError, RuntimeError, OSError) as error:
        sys.exit(f"{PROG}: error: {error}")
    except KeyboardInterrupt:
        sys.exit(130)
    return 0


if __name__ == "__main__":
    sys.exit(main())
