"""Checks the syntax of FILE with the include roots the build gives the
layer LAYER (build/include-views/LAYER/src, tfm_layer_includes in
CMakeLists.txt), the generated files of the build tree and the public
headers; exits with the compiler's status.

  compile_in_layer.py BUILD_DIR LAYER FILE"""
import os
import subprocess
import sys


def main():
    build, layer, source = sys.argv[1:4]
    view = os.path.join(build, "include-views", layer)
    if not os.path.isdir(view):
        sys.exit(f"compile_in_layer: no include view for layer '{layer}' in {build}")
    runtime_include = os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                   "runtime", "include")
    command = ["clang++-19", "-std=c++17", "-fsyntax-only",
               "-isystem", "/usr/lib/llvm-19/include",
               "-I", os.path.join(view, "src"), "-I", build,
               "-I", os.path.normpath(runtime_include), source]
    sys.exit(subprocess.run(command).returncode)


if __name__ == "__main__":
    main()
