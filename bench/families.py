"""The model families of issue 39 in the benchmark harness (bench.py
--families marian,bart,mbart,m2m_100,t5): one model per family, of the
size's shapes with random but seeded weights, compiled at each precision and
backend, the same four cases as the Marian harness, every family's engines
taking turns run by run in one run of the harness, so that each family's
share of its memory bound stands beside Marian's measured at the same time.

Models (cached in --out as model-FAMILY-SIZE; Marian's is the default run's
model-SIZE):
  marian             bench/make_model.py (--quick: test/models/make_test_model.py)
  bart, mbart        test/models/make_family_model.py --size SIZE: base is
                     BART-base's shapes (6 + 6 layers, d_model 768, FFN 3072,
                     50265 tokens)
  m2m_100            the same; base is M2M-100-418M's shapes (12 + 12 layers,
                     d_model 1024, FFN 4096, 128112 tokens)
  t5                 the same with --feed-forward-proj gated-gelu --untied:
                     base is T5 v1.1 base (12 + 12 layers, d_model 768, 12
                     heads of 64, gated FFN 2048, 32128 tokens, own lm_head)
  marian-SIZE        bench/make_model.py --size SIZE, at --size base the
                     yardsticks of equal bytes (YARDSTICKS): base-wide (BART's
                     and mBART's 89 MB at int8), t5-base-bytes, m2m-418m-bytes;
                     at tiny Marian's own model weighs what BART's does
Every checkpoint holds one copy of the shared embeddings (--no-tied-copies).
A family whose generator is missing (make_family_model.py FAMILY --help
fails), whose model tfmc does not compile or whose translator or reference
fails is skipped with the reason in the notes; Marian's is required.

Per family: the bytes of weights a batch-1 decoder step reads at each
precision (bench.decoder_step_weights, from its config.json) and the bound
they set at the read bandwidth measured before, between and after the
cases; per engine the four cases (tokens/s, ratio to the PyTorch reference,
translations identical to it, the share of the memory bound for batch 1)
and what `translator --model-info` says runs each tfm.attention ("llvm": our
fused kernel; "decomposed, onednn": spelled out as oneDNN matmuls and
softmax, not fused), with the count of attention ops the model has
(encoder layers + 2 x decoder layers) so that attention the fusion missed
shows too.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

FAMILIES = ["marian", "bart", "mbart", "m2m_100", "t5"]
# Per size, the Marian model (bench/make_model.py --size) whose decoder step
# reads as many bytes as each family's: the family's share of the memory
# bound against Marian's at an equal bound (the bandwidth cancels; Marian
# base's 39 MB at int8 nearly fit the last-level cache, the families' do
# not). At tiny, BART's and mBART's steps weigh what Marian's does.
YARDSTICKS = {
    "base": {"bart": "base-wide", "mbart": "base-wide", "t5": "t5-base-bytes",
             "m2m_100": "m2m-418m-bytes"},
    "tiny": {"bart": "tiny", "mbart": "tiny"},
}
# Extra options of make_family_model.py per family: T5 as v1.1 at every
# size (the tiny model as the base one: gated-gelu, untied lm_head).
MAKER_OPTIONS = {"t5": ["--feed-forward-proj", "gated-gelu", "--untied"]}


class Skip(Exception):
    """A family that cannot be measured, and why."""


def parse(text):
    """The --families list, Marian first (its share of the memory bound is
    what the others are compared with; added if not named)."""
    wanted = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} "
                         f"{', '.join(unknown)}: expected some of {', '.join(FAMILIES)}")
    return ["marian"] + [f for f in FAMILIES[1:] if f in wanted]


def yardstick_of(family, size):
    """The family key of the Marian model that is `family`'s yardstick at
    `size` ("marian" itself or "marian-SIZE"), or None."""
    yard = YARDSTICKS.get(size, {}).get(family)
    if yard is None:
        return None
    return "marian" if yard == size else f"marian-{yard}"


def with_yardsticks(families, size):
    """`families` with the Marian models their yardsticks need, after them."""
    extra = [yardstick_of(f, size) for f in families]
    return families + sorted({y for y in extra if y and y not in families})


def family_maker(root):
    return os.path.join(root, "test", "models", "make_family_model.py")


def make_model(h, family, args, sentences):
    """The family's model directory in args.out, made unless it is there
    with enough sentences; raises Skip if this checkout cannot make it."""
    if family.startswith("marian"):
        size = family[len("marian-"):] or args.size
        model = os.path.join(args.out, f"model-{size}")
    else:
        model = os.path.join(args.out, f"model-{family}-{args.size}")
    source = os.path.join(model, "source.ids")
    if os.path.exists(os.path.join(model, "config.json")) and os.path.exists(source):
        with open(source) as f:
            if len(f.read().splitlines()) >= sentences:
                return model
        shutil.rmtree(model)
    if family.startswith("marian"):
        h.make_model(family[len("marian-"):] or args.size, model, args.quick)
        return model
    maker = family_maker(h.ROOT)
    probe = subprocess.run([h.PY, maker, family, "--help"], capture_output=True, text=True)
    if probe.returncode:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        raise Skip(f"test/models/make_family_model.py does not make it ({last})")
    print(f"{family}: making the {args.size} model", file=sys.stderr)
    cmd = ([h.PY, maker, family, model, "--size", args.size, "--no-tied-copies",
            "--sentences", str(max(sentences, 128))] + MAKER_OPTIONS.get(family, []))
    made = subprocess.run(cmd, capture_output=True, text=True)
    if made.returncode:
        shutil.rmtree(model, ignore_errors=True)
        last = (made.stderr.strip().splitlines() or ["no output"])[-1]
        raise Skip(f"make_family_model.py failed: {last}")
    return model


def model_info(translator):
    """(the model line, the tfm.attention backend lines) of
    `translator --model-info`."""
    out = subprocess.run([translator, "--model-info"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    shape = next((l[len("model: "):] for l in out if l.startswith("model: ")), "")
    return shape, [l for l in out if l.startswith("tfm.attention ")]


def attention_record(lines, config):
    """What runs the model's attention, from --model-info's lines: ops on
    our fused kernel, ops decomposed (any backend line with "decomposed"),
    and the attention ops the model has; fused when every one of them is a
    tfm.attention that is not decomposed."""
    fused = decomposed = 0
    for line in lines:
        count = int(line.rsplit("(", 1)[1].split()[0]) if line.endswith(")") else 1
        if "decomposed" in line.rsplit("->", 1)[-1]:
            decomposed += count
        else:
            fused += count
    if config.get("model_type") in ("t5", "mt5"):
        enc = config["num_layers"]
        dec = config.get("num_decoder_layers") or enc
    else:
        enc, dec = config["encoder_layers"], config["decoder_layers"]
    expected = enc + 2 * dec
    return {"lines": lines, "fused_ops": fused, "decomposed_ops": decomposed,
            "model_ops": expected, "fused": decomposed == 0 and fused == expected}


def attention_text(a):
    if a["fused"]:
        return f"fused ({a['fused_ops']}/{a['model_ops']})"
    parts = []
    if a["decomposed_ops"]:
        parts.append(f"{a['decomposed_ops']} decomposed")
    missing = a["model_ops"] - a["fused_ops"] - a["decomposed_ops"]
    if missing:
        parts.append(f"{missing} not a tfm.attention")
    return f"NOT fused ({a['fused_ops']}/{a['model_ops']} fused; {', '.join(parts)})"


def end_to_end(args, notes, h):
    """The families' measurement: results["families"] of results.json."""
    os.makedirs(args.out, exist_ok=True)
    sentences_needed = max(args.sentences, args.reference_sentences)
    tfmc = os.path.join(args.build, "bin", "tfmc")
    backends, has_flag = h.tfmc_backends(tfmc, args.backends.split(","), notes)
    if not backends:
        sys.exit("bench: none of the backends " + args.backends + " is in this tfmc")
    results = {"size": args.size, "threads": args.threads, "runs": args.runs,
               "tokens_per_sentence": h.TOKENS, "backends": backends,
               "precisions": args.precisions, "families": args.families,
               "skipped": {}, "models": {}}
    common = ["--suppress-eos", "--max-length", str(h.TOKENS), "--threads", str(args.threads)]

    # Models, compiled translators and their --model-info; a family that
    # fails here is skipped, Marian stops the run.
    engines = {}  # (family, name) -> (command, input path, sentences)
    models = {}
    for family in with_yardsticks(args.families, args.size):
        try:
            model = make_model(h, family, args, sentences_needed)
            with open(os.path.join(model, "config.json")) as f:
                config = json.load(f)
            lines = open(os.path.join(model, "source.ids")).read().splitlines()
            inputs = {}
            for n in {args.sentences, args.reference_sentences} - {0}:
                path = os.path.join(args.out, f"source-{family}-{n}.ids")
                with open(path, "w") as f:
                    f.write("\n".join(lines[:n]) + "\n")
                inputs[n] = path
            entry = {"model": model, "model_type": config.get("model_type", "marian"),
                     "shape": None, "memory_bound": {}, "engines": {}}
            family_engines = {}
            for backend, precision in [(b, p) for p in args.precisions for b in backends]:
                name = f"tfmc-{backend}" + ("" if precision == "fp32" else f"-{precision}")
                out_dir = os.path.join(args.out, f"{family}-{name}-{args.size}")
                shutil.rmtree(out_dir, ignore_errors=True)
                cmd = ([tfmc, "compile", model, "-o", out_dir]
                       + ([f"--backend={backend}"] if has_flag else []))
                if precision != "fp32":
                    cmd.append(f"--precision={precision}")
                start = time.perf_counter()
                done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True)
                compile_s = time.perf_counter() - start
                if done.returncode:
                    sys.stderr.write(done.stderr)
                    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                    raise Skip(f"`tfmc compile` ({name}) failed: {last}")
                translator = os.path.join(out_dir, "translator")
                shape, attention = model_info(translator)
                entry["shape"] = entry["shape"] or shape
                info = {"precision": precision, "backend": backend,
                        "compile_seconds": compile_s,
                        "translator_bytes": os.path.getsize(translator),
                        "weights_bytes": os.path.getsize(os.path.join(out_dir, "model.tfmw")),
                        "attention": attention_record(attention, config)}
                print(f"{family} {name}: compiled in {compile_s:.1f} s; attention "
                      f"{attention_text(info['attention'])}", file=sys.stderr)
                for line in attention:
                    print(f"  {line}", file=sys.stderr)
                family_engines[name] = (
                    lambda beam, batch, src, t=translator: [t, src, "-b", str(beam),
                                                            "--batch-size", str(batch)] + common,
                    inputs[args.sentences], args.sentences, info)
            if args.reference_sentences:
                family_engines["reference"] = (
                    lambda beam, batch, src, m=model: [
                        h.PY, os.path.join(h.ROOT, "test", "reference", "reference.py"), m, src,
                        "-b", str(beam), "--batch-size", str(batch)] + common,
                    inputs[args.reference_sentences], args.reference_sentences, {})
        except Skip as e:
            if family.startswith("marian"):
                sys.exit(f"bench: Marian, the families' yardstick, cannot be measured: {e}")
            results["skipped"][family] = str(e)
            notes.append(f"family '{family}' skipped: {e}")
            print(f"{family}: skipped: {e}", file=sys.stderr)
            continue
        models[family] = (entry, config)
        for name, engine in family_engines.items():
            engines[(family, name)] = engine

    env = h.micro.environment(args.threads)
    detected, core = h.micro.openblas_core()
    results["openblas_core"] = {"detected": detected, "used": core}
    # The read bandwidth before, between and after the cases; case by case,
    # run by run, every family's engines in turn, so that a slow spell of
    # the shared machine falls on all of them.
    # Beside the memory's, the bandwidth of reading each step's weights
    # again and again: Marian base's (39 MB at int8) nearly fit the last-level
    # cache (32 MB on these hosts), which serves part of them faster.
    sizes = sorted({h.step_weight_bytes(entry["model"], p)
                    for entry, _ in models.values() for p in args.precisions})
    measures = [h.read_bandwidths(args.build, args.threads, env, sizes)]
    outputs, timings = {}, {}
    failed = {}
    for case, beam, batch in args.cases:
        for _ in range(args.runs):
            for (family, name), (command, src, _, _) in engines.items():
                if family in failed:
                    continue
                out_path = os.path.join(args.out, f"{family}-{name}-{case}.ids")
                try:
                    timing = h.run(command(beam, batch, src), out_path, env)
                except SystemExit as e:
                    if family.startswith("marian"):
                        raise
                    failed[family] = f"{name} failed in {case}: {str(e).strip().splitlines()[0]}"
                    print(f"{family}: skipped: {failed[family]}", file=sys.stderr)
                    continue
                timings.setdefault((family, name, case), []).append(timing)
                outputs[(family, name, case)] = h.read_tokens(out_path)
        for (family, name) in engines:
            if family in failed:
                continue
            seconds = statistics.median(r[1] for r in timings[(family, name, case)])
            tokens = sum(len(t) for t in outputs[(family, name, case)])
            print(f"{family:8s} {name:18s} {case:10s} {tokens / seconds:9.1f} tokens/s",
                  file=sys.stderr)
        measures.append(h.read_bandwidths(args.build, args.threads, env, sizes))
    for family, reason in failed.items():
        results["skipped"][family] = reason
        notes.append(f"family '{family}' skipped: {reason}")
        del models[family]
    bandwidths = [m[0] for m in measures]
    bandwidth = sum(bandwidths) / len(bandwidths)
    results["read_bandwidth_gbs"] = bandwidths
    sized = {b: statistics.mean(m[1][b] for m in measures) for b in sizes}
    results["read_bandwidth_by_size"] = [{"bytes": b, "gbs": [m[1][b] for m in measures]}
                                         for b in sizes]

    for family, (entry, config) in models.items():
        model = entry["model"]
        entry["memory_bound"] = {
            p: {"step_weight_bytes": h.step_weight_bytes(model, p),
                "tokens_per_second": bandwidth * 1e9 / h.step_weight_bytes(model, p),
                "weights_read_again_gbs": sized[h.step_weight_bytes(model, p)],
                "weights_read_again_tokens_per_second":
                    sized[h.step_weight_bytes(model, p)] * 1e9 / h.step_weight_bytes(model, p)}
            for p in args.precisions}
        for (fam, name), (_, _, sentences, info) in engines.items():
            if fam != family:
                continue
            engine = {"sentences": sentences, **info, "cases": {}}
            runs_of = {}
            for case, _, _ in args.cases:
                runs = timings[(family, name, case)]
                seconds = statistics.median(r[1] for r in runs)
                tokens = sum(len(t) for t in outputs[(family, name, case)])
                engine["cases"][case] = {"seconds": seconds, "tokens": tokens,
                                         "tokens_per_second": tokens / seconds,
                                         "peak_rss_mib": max(r[2] for r in runs),
                                         "tokens_per_sentence": tokens / sentences}
                runs_of[case] = runs
            engine["load_seconds"] = statistics.median(
                r[0] for runs in runs_of.values() for r in runs)
            entry["engines"][name] = engine
        reference = entry["engines"].get("reference")
        for name, engine in entry["engines"].items():
            if name == "reference":
                continue
            for case, r in engine["cases"].items():
                if reference:
                    ours = outputs[(family, name, case)]
                    ref = outputs[(family, "reference", case)]
                    n = min(len(ours), len(ref))
                    r["compared_sentences"] = n
                    r["identical_to_reference"] = sum(a == b for a, b in zip(ours[:n], ref[:n]))
                    r["ratio_to_reference"] = (r["tokens_per_second"]
                                               / reference["cases"][case]["tokens_per_second"])
                if case.endswith("-b1"):
                    bound = entry["memory_bound"][engine["precision"]]
                    r["of_memory_bound"] = r["tokens_per_second"] / bound["tokens_per_second"]
                    r["weights_gbs"] = r["tokens_per_second"] * bound["step_weight_bytes"] / 1e9
                    r["of_weights_read_again"] = (
                        r["tokens_per_second"] / bound["weights_read_again_tokens_per_second"])
        results["models"][family] = entry

    # Each family's batch-1 greedy share of its bound beside Marian's
    # (issue 39: int8 within 10 points of Marian's, attention fused).
    comparison = []
    marian = results["models"]["marian"]["engines"]
    for family, entry in results["models"].items():
        for name, engine in entry["engines"].items():
            r = engine["cases"].get("greedy-b1")
            if name == "reference" or not r:
                continue
            row = {"family": family, "engine": name, "precision": engine["precision"],
                   "backend": engine["backend"],
                   "step_weight_bytes": entry["memory_bound"][engine["precision"]][
                       "step_weight_bytes"],
                   "tokens_per_second": r["tokens_per_second"],
                   "of_memory_bound": r["of_memory_bound"],
                   "attention_fused": engine["attention"]["fused"],
                   "of_weights_read_again": r["of_weights_read_again"]}
            if not family.startswith("marian") and name in marian:
                for bound in ("memory_bound", "weights_read_again"):
                    m = marian[name]["cases"]["greedy-b1"]["of_" + bound]
                    row[f"marian_of_{bound}"] = m
                    row[f"points_from_marian_{bound}"] = 100 * (r["of_" + bound] - m)
                    row[f"within_10_points_{bound}"] = r["of_" + bound] >= m - 0.10
            row.update(against_yardstick(results["models"], family, name, r, args.size))
            comparison.append(row)
    results["greedy_b1_against_marian"] = comparison
    return results


def against_yardstick(models, family, name, r, size):
    """The family's batch-1 greedy share of the memory bound against that
    of the Marian model whose step reads as many bytes (YARDSTICKS), with
    the same engine in the same run: its key, tokens/s, the ratio of bytes
    per second (free of the bandwidth measured), the points between the
    shares and whether the family is at most 10 points below."""
    key = yardstick_of(family, size)
    yard = models.get(key, {}).get("engines", {}).get(name) if key else None
    if not yard:
        return {}
    y = yard["cases"]["greedy-b1"]
    bytes_of = lambda m: models[m]["memory_bound"][yard["precision"]]["step_weight_bytes"]
    ratio = (r["tokens_per_second"] * bytes_of(family)
             / (y["tokens_per_second"] * bytes_of(key)))
    points = 100 * (r["of_memory_bound"] - y["of_memory_bound"])
    return {"yardstick": key, "yardstick_tokens_per_second": y["tokens_per_second"],
            "yardstick_of_memory_bound": y["of_memory_bound"],
            "bytes_per_second_vs_yardstick": ratio, "points_from_yardstick": points,
            "within_10_points_yardstick": points >= -10}


def yardstick_table(comparison):
    """Markdown: each family beside the Marian model of its step's bytes."""
    rows = [r for r in comparison if "yardstick" in r]
    if not rows:
        return ""
    lines = ["| family | engine | tokens/s | Marian of the same bytes | its tokens/s | "
             "bytes/s vs it | of memory bound | its | points | within 10 points |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['family']} | {r['engine']} | {r['tokens_per_second']:.1f} | "
                     f"{r['yardstick']} | {r['yardstick_tokens_per_second']:.1f} | "
                     f"{r['bytes_per_second_vs_yardstick']:.3f} | {r['of_memory_bound']:.0%} | "
                     f"{r['yardstick_of_memory_bound']:.0%} | {r['points_from_yardstick']:+.1f} | "
                     + ("yes" if r["within_10_points_yardstick"] else "**no**") + " |")
    return ("\n\n**Against a Marian model whose step reads the same bytes** (bench/make_model.py "
            "sizes; the same bound, so the bandwidth cancels: issue 39's comparison where "
            "Marian base's 39 MB would sit in the cache)\n\n" + "\n".join(lines))


def tables(results):
    """Markdown of the families' measurement."""
    models = results["models"]
    first = next(iter(models.values()))
    tfmc_sentences = next(e["sentences"] for n, e in first["engines"].items() if n != "reference")
    ref = first["engines"].get("reference")
    bw = results["read_bandwidth_gbs"]
    text = (f"Families, {results['size']} models ({', '.join(models)}): tfmc on "
            f"{tfmc_sentences} sentences"
            + (f", reference on {ref['sentences']}" if ref else ", no reference")
            + f", {results['tokens_per_sentence']} tokens each (EOS suppressed), "
            f"{results['threads']} threads, median of {results['runs']} run(s), every "
            f"family's engines in turn run by run. Memory bound of batch-1 decoding: the "
            f"decoder layers' and the output projection's weights per target token at "
            f"the read bandwidth measured before, between and after the cases ("
            + ", ".join(f"{b:.1f}" for b in bw)
            + f" GB/s, {results['threads']} threads; mean {sum(bw) / len(bw):.1f}).")
    for family, reason in results["skipped"].items():
        text += f" Skipped: {family} ({reason})."

    rows = ["| family | model | " + " | ".join(
        f"{p} MB per token | {p} bound (tokens/s) | {p} read again (GB/s, tokens/s)"
        for p in results["precisions"]) + " |",
        "|---|---|" + "---|---|---|" * len(results["precisions"])]
    for family, entry in models.items():
        rows.append(f"| {family} | {entry['shape']} | " + " | ".join(
            f"{entry['memory_bound'][p]['step_weight_bytes'] / 1e6:.1f} | "
            f"{entry['memory_bound'][p]['tokens_per_second']:.0f} | "
            f"{entry['memory_bound'][p]['weights_read_again_gbs']:.1f}, "
            f"{entry['memory_bound'][p]['weights_read_again_tokens_per_second']:.0f}"
            for p in results["precisions"]) + " |")
    text += ("\n\n" + "\n".join(rows) + "\n\n*Read again*: the bandwidth of reading an array "
             "of the step's weight bytes again and again (tfm-bench --read-bytes), measured "
             "with the memory's: weights that nearly fit the last-level cache are partly "
             "read from it, so their bound is higher than the memory's.")

    def against_marian(r, bound):
        """Share of the bound, Marian's, the points between, within 10."""
        if f"marian_of_{bound}" not in r:
            return (f"{r['of_' + bound]:.0%} | "
                    + ("(the yardstick) | - | -" if r["family"] == "marian" else "- | - | -"))
        return (f"{r['of_' + bound]:.0%} | {r[f'marian_of_{bound}']:.0%} | "
                f"{r[f'points_from_marian_{bound}']:+.1f} | "
                + ("yes" if r[f"within_10_points_{bound}"] else "**no**"))

    rows = ["| family | engine | tokens/s | of memory bound | Marian's | points from Marian's "
            "| within 10 points | of weights read again | Marian's | points | within 10 "
            "| attention |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["greedy_b1_against_marian"]:
        engine = models[r["family"]]["engines"][r["engine"]]
        rows.append(f"| {r['family']} | {r['engine']} | {r['tokens_per_second']:.1f} | "
                    f"{against_marian(r, 'memory_bound')} | "
                    f"{against_marian(r, 'weights_read_again')} | "
                    f"{attention_text(engine['attention'])} |")
    text += ("\n\n**Batch-1 greedy against each family's memory bound**, Marian's in the "
             "same run beside it (issue 39: each family's int8 within 10 points of "
             "Marian's, `auto` keeping attention fused), against the memory's bandwidth "
             "and against the bandwidth of its weights read again\n\n" + "\n".join(rows))
    text += yardstick_table(results["greedy_b1_against_marian"])

    cases = list(next(iter(first["engines"].values()))["cases"])
    rows = ["| family | engine | " + " | ".join(cases) + " |", "|---|---|" + "---|" * len(cases)]
    for family, entry in models.items():
        for name, engine in entry["engines"].items():
            rows.append(f"| {family} | {name} | " + " | ".join(
                f"{engine['cases'][c]['tokens_per_second']:.1f}" for c in cases) + " |")
    text += "\n\n**Tokens/s per case**\n\n" + "\n".join(rows)

    rows = ["| case | family | engine | tokens/s | vs reference | of memory bound | identical "
            "to reference | peak RSS (MiB) | load (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for case in cases:
        for family, entry in models.items():
            for name, engine in entry["engines"].items():
                r = engine["cases"][case]
                ratio = (f"{r['ratio_to_reference']:.2f}x" if "ratio_to_reference" in r
                         else "1" if name == "reference" else "-")
                same = (f"{r['identical_to_reference']}/{r['compared_sentences']}"
                        if "identical_to_reference" in r else "-")
                bound = (f"{r['of_memory_bound']:.0%} ({r['weights_gbs']:.1f} GB/s)"
                         if "of_memory_bound" in r else "-")
                rows.append(f"| {case} | {family} | {name} | {r['tokens_per_second']:.1f} | "
                            f"{ratio} | {bound} | {same} | {r['peak_rss_mib']:.0f} | "
                            f"{engine['load_seconds']:.2f} |")
    text += "\n\n**Per case and engine**\n\n" + "\n".join(rows)

    rows = ["| family | engine | compile (s) | translator (MB) | weights (MB) |",
            "|---|---|---|---|---|"]
    attention = []
    for family, entry in models.items():
        for name, engine in entry["engines"].items():
            if name == "reference":
                continue
            rows.append(f"| {family} | {name} | {engine['compile_seconds']:.1f} | "
                        f"{engine['translator_bytes'] / 1e6:.1f} | "
                        f"{engine['weights_bytes'] / 1e6:.1f} |")
            a = engine["attention"]
            attention.append(f"- {family} {name}: {attention_text(a)}")
            attention.extend(f"  - `{line}`" for line in a["lines"])
    text += "\n\n" + "\n".join(rows)
    text += ("\n\n**Attention** (`translator --model-info`: \"llvm\" is our fused kernel, "
             "\"decomposed\" spelled out, not fused)\n\n" + "\n".join(attention))
    return text
