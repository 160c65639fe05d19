#!/usr/bin/env python3
"""The Python package as `cmake --install` puts it (python-install.test).

  python_install.py DESTDIR PREFIX MODEL_OUT WORKDIR

DESTDIR holds one install with prefix PREFIX. Checks that the package
(tfmc/: __init__.py, __main__.py and the compiled _ext) went where this
Python looks for modules installed under PREFIX (one of
site.getsitepackages(), which site adds to sys.path), and that it imports
and translates from there alone: PYTHONPATH names only that directory, the
working directory is WORKDIR. Exits 1 naming the first difference.
"""
import glob
import os
import subprocess
import sys


def fail(message):
    sys.exit("python_install.py: " + message)


def main():
    destdir, prefix, model_out, workdir = sys.argv[1:5]
    destdir = os.path.abspath(destdir)
    found = glob.glob(os.path.join(destdir, "**", "tfmc", "_ext*.so"), recursive=True)
    if len(found) != 1:
        fail(f"installed modules {found}, expected one")
    package = os.path.dirname(found[0])
    for name in ("__init__.py", "__main__.py"):
        if not os.path.isfile(os.path.join(package, name)):
            fail(f"{name} is not installed beside {found[0]}")
    site_dir = os.path.dirname(package)[len(destdir):]
    if not site_dir.startswith(prefix.rstrip("/") + "/"):
        fail(f"installed in {site_dir}, outside the prefix {prefix}")

    # This Python (the one the module is built for), started as a user
    # would: no PYTHONPATH, another directory.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    site_dirs = subprocess.run(
        [sys.executable, "-c", "import site; print('\\n'.join(site.getsitepackages()))"],
        env=env, cwd=workdir, check=True, capture_output=True, text=True).stdout.split("\n")
    if site_dir not in site_dirs:
        fail(f"installed in {site_dir}, which {sys.executable} does not search: {site_dirs}")

    env["PYTHONPATH"] = destdir + site_dir
    script = ("import sys, tfmc\n"
              "print(tfmc.__file__)\n"
              "t = tfmc.Translator(sys.argv[1], threads=1)\n"
              "print(t.translate_batch([[5, 6, 7]])[0].hypotheses)\n")
    run = subprocess.run([sys.executable, "-c", script, os.path.abspath(model_out)],
                         env=env, cwd=workdir, capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"import from {site_dir}: {run.stderr}")
    module, hypotheses = run.stdout.splitlines()[:2]
    if module != os.path.join(package, "__init__.py"):
        fail(f"imported {module}, not the package installed in {package}")
    print(f"{site_dir}: imported from {workdir}, translated {hypotheses}")


if __name__ == "__main__":
    main()
