#!/usr/bin/env python3
"""A fresh venv with tfmc pip-installed into it (python-venv.test).

  python_venv.py make VENV REPO
  VENV/bin/python python_venv.py translate MODEL_DIR SOURCE OUT

make: makes VENV (a plain venv: no system site-packages, so neither Debian's
setuptools nor its pybind11 module) with the first Python 3 on PATH that
is not Debian's (pyenv's, python.org's: its base prefix is not /usr) and
can make a venv with pip and build an extension (ensurepip, Python.h),
else with Debian's /usr/bin/python3; then installs REPO with the venv's
pip, offline, as docs/Usage.md does. Prints which Python and what pip
installed; exits 1 naming the step that failed.

translate: imports tfmc (printing where from) and writes the greedy
translation of each line of SOURCE to OUT, a line each, as the
translator does.
"""
import os
import re
import subprocess
import sys

DEBIAN_PYTHON = "/usr/bin/python3"

# What a candidate Python says about itself: its executable, version, base
# prefix, and whether it can make a venv with pip and compile a module.
PROBE = """
import importlib.util, os, sys, sysconfig
headers = os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
usable = headers and all(importlib.util.find_spec(m) for m in ("venv", "ensurepip"))
print(sys.executable, sys.version.split()[0], sys.base_prefix, usable)
"""


def fail(message):
    sys.exit("python_venv.py: " + message)


def candidates():
    """Every python3 and python3.N on PATH, in PATH's order."""
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = sorted(n for n in os.listdir(directory)
                           if re.fullmatch(r"python3(\.\d+)?", n))
        except OSError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            if os.access(path, os.X_OK):
                yield path


def probe(python):
    """(executable, version, base prefix, usable), or None if it fails to run
    (a pyenv shim of a version not selected, say)."""
    try:
        run = subprocess.run([python, "-c", PROBE], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = run.stdout.split()
    if run.returncode != 0 or len(words) != 4:
        return None
    return words[0], words[1], words[2], words[3] == "True"


def pick_python():
    """The first usable non-Debian Python 3 on PATH, else Debian's."""
    for python in candidates():
        found = probe(python)
        if found and found[3] and found[2] != "/usr":
            return "a non-Debian", found
    found = probe(DEBIAN_PYTHON)
    if not found or not found[3]:
        fail(f"{DEBIAN_PYTHON} cannot make a venv and build a module: "
             "install python3-venv and python3-dev")
    return "Debian's", found


def run_step(what, command, env):
    run = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True)
    if run.returncode != 0:
        fail(f"{what} failed ({' '.join(command)}):\n{run.stdout}")
    return run.stdout


def make(venv, repo):
    kind, (executable, version, _, _) = pick_python()
    print(f"venv of {kind} Python {version}: {executable}")
    # The user's environment, without what would point pip or Python
    # elsewhere than the venv.
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("PIP_")}
    run_step("making the venv", [executable, "-m", "venv", venv], env)
    python = os.path.join(venv, "bin", "python")
    log = run_step("pip install", [python, "-m", "pip", "install", "--no-index",
                                   "--no-build-isolation", "--no-cache-dir",
                                   "--disable-pip-version-check", repo], env)
    installed = [line for line in log.splitlines() if line.startswith("Successfully installed")]
    if not installed:
        fail("pip did not say it installed tfmc:\n" + log)
    print(installed[0])


def translate(model_dir, source, out):
    import tfmc
    print("imported tfmc from", tfmc.__file__)
    with open(source, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines[-1] == "":
        lines.pop()
    results = tfmc.Translator(model_dir, threads=2).translate_batch(lines)
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(r.hypotheses[0] + "\n" for r in results)


if __name__ == "__main__":
    if sys.argv[1:2] == ["make"] and len(sys.argv) == 4:
        make(*sys.argv[2:])
    elif sys.argv[1:2] == ["translate"] and len(sys.argv) == 5:
        translate(*sys.argv[2:])
    else:
        fail("usage: python_venv.py make VENV REPO | translate MODEL_DIR SOURCE OUT")
