"""tfmc's build backend (PEP 517): `pip install .` in the repository.

It compiles the module (python/*.cpp) for the Python that runs pip, with
that Python's headers and extension suffix, and packs it with python/tfmc/
into a wheel tagged for that Python. It uses the standard library alone,
so a venv without setuptools or wheel, and pip without network (with or
without build isolation), can build it; the compiler is $CXX, else the
one the Python was built with, else c++. The C++ it needs is in this
repository (the runtime's header-only client, the tools' text helpers,
HTML library and language detection) and pybind11's headers (Debian's
pybind11-dev, or a pybind11 installed into the building Python): no
CMake build tree. The module dlopens each model directory's
libtranslator.so, so it links nothing of tfmc; it links Gumbo (format
"html") and CLD2 (source_lang "auto"), Debian's libgumbo-dev and
libcld2-dev, whose shared libraries it then needs at run time.

Run as a script it writes the wheel into a directory, for pip to install
elsewhere:   python3 python/build-backend/tfmc_build.py DIR
"""
import base64
import concurrent.futures
import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "tfmc"
SUMMARY = "Translation with models compiled by tfmc (tfmc compile MODEL_DIR -o OUT_DIR)"
EXTENSION = "_ext"
# Beside python/*.cpp: the tools' sources the module compiles in.
TOOL_SOURCES = ["tools/common/Html.cpp", "tools/common/LanguageDetector.cpp",
                "tools/translator/SourceDetection.cpp"]
# The system libraries they need: (header, library, Debian's package).
SYSTEM_LIBRARIES = [("gumbo.h", "gumbo", "libgumbo-dev"),
                    ("cld2/public/compact_lang_det.h", "cld2", "libcld2-dev")]
CXX_FLAGS = ["-std=c++17", "-O2", "-DNDEBUG", "-fPIC", "-fvisibility=hidden",
             "-fexceptions"]


class BuildError(Exception):
    """A build that cannot go on, with what to do about it."""


def version():
    """The project's version, as CMakeLists.txt's project() gives it."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        found = re.search(r"project\(\s*tfmc\s+VERSION\s+([0-9.]+)", f.read())
    if not found:
        raise BuildError("no `project(tfmc VERSION ...)` in " +
                         os.path.join(ROOT, "CMakeLists.txt"))
    return found.group(1)


def wheel_tag():
    """interpreter-abi-platform of the running Python, as pip matches it."""
    major, minor = sys.version_info[:2]
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if sys.implementation.name != "cpython":
        # PyPy and others: their SOABI ("pypy310-pp73-x86_64-linux-gnu").
        soabi = (sysconfig.get_config_var("SOABI") or "").split("-")
        if len(soabi) < 2:
            raise BuildError(f"{sys.implementation.name} has no SOABI to tag a wheel with")
        abi = "_".join(soabi[:2]).replace(".", "_")
        interpreter = {"pypy": "pp"}.get(sys.implementation.name,
                                        sys.implementation.name) + f"{major}{minor}"
        return f"{interpreter}-{abi}-{platform}"
    flags = ""
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        flags += "t"
    if sysconfig.get_config_var("Py_DEBUG"):
        flags += "d"
    if (major, minor) < (3, 8) and sysconfig.get_config_var("WITH_PYMALLOC"):
        flags += "m"
    return f"cp{major}{minor}-cp{major}{minor}{flags}-{platform}"


def compiler():
    """The C++ compiler's command: $CXX, the Python's own, or c++."""
    if os.environ.get("CXX"):
        command = shlex.split(os.environ["CXX"])
        if not shutil.which(command[0]):
            raise BuildError(f"CXX={os.environ['CXX']}: {command[0]} not found")
        return command
    for candidate in (sysconfig.get_config_var("CXX"), "c++", "g++", "clang++"):
        command = shlex.split(candidate or "")
        if command and shutil.which(command[0]):
            return command
    raise BuildError("no C++ compiler found: set CXX, or install one "
                     "(Debian: g++ or clang)")


def include_dirs():
    """The repository's roots, this Python's headers and pybind11's."""
    python = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(python, "Python.h")):
        raise BuildError(f"no Python.h in {python}: install the headers of "
                         f"{sys.executable} (Debian: python3-dev)")
    dirs = [ROOT, os.path.join(ROOT, "runtime", "include"), python]
    platform = sysconfig.get_paths().get("platinclude")
    if platform and platform != python:
        dirs.append(platform)
    dirs += pybind11_include()
    return dirs


def pybind11_include():
    """pybind11's headers: the building Python's pybind11 if it has one,
    else the system's (/usr/include, which the compiler searches)."""
    try:
        import pybind11
        return [pybind11.get_include()]
    except ImportError:
        pass
    for system in ("/usr/include", "/usr/local/include"):
        if os.path.isfile(os.path.join(system, "pybind11", "pybind11.h")):
            return []
    raise BuildError("pybind11's headers not found: install pybind11-dev "
                     "(Debian) or pybind11 into " + sys.executable)


def system_libraries():
    """-l flags of Gumbo and CLD2, after checking that their headers are
    where the compiler looks (/usr/include, /usr/local/include)."""
    flags = []
    for header, library, package in SYSTEM_LIBRARIES:
        if not any(os.path.isfile(os.path.join(d, header))
                   for d in ("/usr/include", "/usr/local/include")):
            raise BuildError(f"{header} not found: install {package} (Debian)")
        flags.append("-l" + library)
    return flags


def compile_one(command, source, objects_dir):
    """One source to an object file; the compiler's messages on failure."""
    target = os.path.join(objects_dir, os.path.basename(source) + ".o")
    run = subprocess.run(command + ["-c", source, "-o", target],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    if run.returncode != 0:
        raise BuildError(f"compiling {source} failed:\n"
                         f"{' '.join(map(shlex.quote, command))}\n{run.stdout}")
    return target


def build_extension(out_dir):
    """python/*.cpp compiled in parallel and linked into out_dir; returns
    the module's file name (its suffix this Python's)."""
    cxx = compiler()
    command = cxx + CXX_FLAGS + ["-I" + d for d in include_dirs()]
    libraries = system_libraries()
    sources = sorted(glob.glob(os.path.join(ROOT, "python", "*.cpp")))
    sources += [os.path.join(ROOT, *path.split("/")) for path in TOOL_SOURCES]
    with tempfile.TemporaryDirectory(prefix="tfmc-build-") as objects_dir:
        workers = max(1, min(len(sources), os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            objects = list(pool.map(lambda s: compile_one(command, s, objects_dir),
                                    sources))
        name = EXTENSION + sysconfig.get_config_var("EXT_SUFFIX")
        # -s: no symbol tables, as CMake's release build of the module.
        link = (cxx + ["-shared", "-s", "-o", os.path.join(out_dir, name)] +
                objects + libraries + ["-ldl"])
        run = subprocess.run(link, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        if run.returncode != 0:
            raise BuildError("linking the module failed:\n" + run.stdout)
    return name


def dist_info_name():
    return f"{NAME}-{version()}.dist-info"


def metadata_files():
    """The dist-info's METADATA and WHEEL, as {name: text}."""
    metadata = (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version()}\n"
                f"Summary: {SUMMARY}\nRequires-Python: >=3.7\n")
    wheel = (f"Wheel-Version: 1.0\nGenerator: tfmc_build\n"
             f"Root-Is-Purelib: false\nTag: {wheel_tag()}\n")
    return {"METADATA": metadata, "WHEEL": wheel}


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{path},sha256={digest.decode()},{len(data)}\n"


def write_wheel(path, files):
    """A wheel of {archive path: bytes}, with its RECORD."""
    record_path = dist_info_name() + "/RECORD"
    record = "".join(record_line(name, data) for name, data in files.items())
    record += record_path + ",,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in list(files.items()) + [(record_path, record.encode())]:
            wheel.writestr(name, data)


def package_files(extension_dir, extension):
    """python/tfmc/*.py and the module, under tfmc/."""
    files = {}
    for source in sorted(glob.glob(os.path.join(ROOT, "python", NAME, "*.py"))):
        with open(source, "rb") as f:
            files[f"{NAME}/{os.path.basename(source)}"] = f.read()
    with open(os.path.join(extension_dir, extension), "rb") as f:
        files[f"{NAME}/{extension}"] = f.read()
    return files


# The PEP 517 hooks.

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = os.path.join(metadata_directory, dist_info_name())
    os.makedirs(dist_info, exist_ok=True)
    for name, text in metadata_files().items():
        with open(os.path.join(dist_info, name), "w", encoding="utf-8") as f:
            f.write(text)
    return dist_info_name()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory(prefix="tfmc-wheel-") as build_dir:
        files = package_files(build_dir, build_extension(build_dir))
    for name, text in metadata_files().items():
        files[f"{dist_info_name()}/{name}"] = text.encode()
    wheel_name = f"{NAME}-{version()}-{wheel_tag()}.whl"
    write_wheel(os.path.join(wheel_directory, wheel_name), files)
    return wheel_name


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} WHEEL_DIR")
    os.makedirs(sys.argv[1], exist_ok=True)
    try:
        print(os.path.join(sys.argv[1], build_wheel(sys.argv[1])))
    except BuildError as e:
        sys.exit(f"tfmc_build: {e}")
