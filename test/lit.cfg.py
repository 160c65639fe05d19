# -*- Python -*-
# lit configuration of the tfm regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TFM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "models", "unit", "reference", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfm_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.tfm_python))
# The project's Python scripts, run with the Python that has numpy and torch:
#   %make_model OUT_DIR [options]      a deterministic test checkpoint
#   %corrupt_model MODEL_DIR MODE ...  one precise damage, for bad-input tests
#   %damage_weights WEIGHTS OUT        NaNs over a tfmc weights file's first panels
#   %reference MODEL_DIR INPUT [...]   the reference implementation
#   %compare MODE EXPECTED ACTUAL      outputs compared with the reference's
#   %metrics HYP REF                   corpus BLEU (13a) and chrF2
#   %bench [options]                   the benchmark harness (bench/bench.py)
for name, script in [("%make_model", "models/make_test_model.py"),
                     ("%corrupt_model", "models/corrupt_model.py"),
                     ("%damage_weights", "models/damage_weights.py"),
                     ("%reference", "reference/reference.py"),
                     ("%compare", "reference/compare.py"),
                     ("%metrics", "reference/metrics.py")]:
    path = os.path.join(config.tfm_src_root, "test", *script.split("/"))
    config.substitutions.append((name, "%s %s" % (config.tfm_python, path)))
config.substitutions.append(("%bench", "%s %s" % (
    config.tfm_python, os.path.join(config.tfm_src_root, "bench", "bench.py"))))
#   %layer_compile LAYER FILE          FILE compiled with LAYER's include roots
config.substitutions.append(("%layer_compile", "%s %s %s" % (
    config.tfm_python,
    os.path.join(config.tfm_src_root, "test", "Layering", "Inputs",
                 "compile_in_layer.py"),
    config.tfm_obj_root)))
config.substitutions.append(("%tfm_src_root", config.tfm_src_root))
config.substitutions.append(("%tfm_obj_root", config.tfm_obj_root))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.tfm_tools_dir, config.llvm_tools_dir]
tools = ["tfm-opt", "tfm-run", "tfmc", "tfm-bench", "tfm-serve"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.tfm_tools_dir, append_path=True)

# A sanitized build (scripts/test.sh --sanitize): the Python module and
# libtranslator.so need the sanitizers' runtime loaded before Python starts.
if config.tfm_sanitize.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("sanitize")
    # Sanitized, a test runs 3-6x as long, and CI runs this suite after the
    # normal one within its 90 minutes (docs/Development.md). Left out here, and run by the normal suite: the
    # benchmark harness (timings mean nothing under the sanitizers) and the
    # slowest end-to-end tests, each over 2 minutes sanitized, whose code
    # paths cheaper tests also run (Conversion, Numerics, Compiler,
    # translate.test, translator-*, Serve): every family's known answers,
    # the invariance matrix, the en-de model and the reference comparisons
    # at each precision and backend, the generation rules, the config
    # variants, the torch and Marian checkpoints end to end (their readers
    # are fuzzed, sanitized, in the normal suite).
    config.excludes += ["Bench", "families-bart.test", "families-mbart.test",
                        "families-m2m100.test", "families-t5.test",
                        "invariance.test", "en-de-bf16.test",
                        "en-de-int8.test", "en-de-int4.test",
                        "generation.test",
                        "translate-configs.test", "translate-backends.test",
                        "translate-bf16.test", "translate-int8.test",
                        "torch-checkpoint.test", "marian-checkpoint.test",
                        # every family 24 + 24 layers deep: the layer calls
                        # run in each end-to-end test left in
                        "deep-layers.test",
                        # a cluster's scheduling, not our code, is its time
                        "slurm.test"]
    # And the tests with lines in Python that import the module, which a
    # sanitized build cannot load into Debian's unsanitized Python (as the
    # python-*.test files say for themselves).
    config.excludes += ["languages.test", "runtime-api-version.test",
                        "sampling.test", "target-prefix.test",
                        "tokenizer-t5.test"]

# The Slurm test starts a one-node cluster (scripts/slurm/local-cluster.sh):
# it needs Debian's slurm-wlm and munge, and root for slurmd.
import shutil  # noqa: E402
sbin_path = os.environ.get("PATH", "") + ":/usr/sbin"
if all(shutil.which(p, path=sbin_path) for p in ("munged", "slurmctld", "slurmd", "sbatch")) \
        and os.geteuid() == 0:
    config.available_features.add("slurm")
else:
    lit_config.note("Slurm (slurm-wlm, munge) or root missing: "
                    "Integration/slurm.test is unsupported")
