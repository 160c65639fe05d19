#!/usr/bin/env bash
# Installs every Debian 12 package tfmc needs to build, test and benchmark.
# Idempotent and non-interactive: run it as root on a fresh machine.
set -euo pipefail

packages=(
  # compiler toolchain and build
  build-essential cmake ninja-build pkg-config
  # the format check of the tree (scripts/check-format.sh), with the
  # clang-format of the LLVM the project builds with
  clang-format-19 git
  # LLVM/MLIR 19: headers and static libraries, mlir-opt & co, lit + FileCheck
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools clang-19 lld-19
  libomp-19-dev libclang-rt-19-dev zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev libffi-dev
  # runtime libraries
  libdnnl-dev libfmt-dev libsentencepiece-dev sentencepiece libopenblas-dev
  # the translator's command line (CLI11, header-only)
  libcli11-dev
  # Marian's .npz models carry a YAML config
  libyaml-cpp-dev
  # tfm-serve: HTTP (cpp-httplib), JSON (nlohmann), the load benchmark (wrk)
  libcpp-httplib-dev nlohmann-json3-dev wrk
  # tfm-serve's language detection (CLD2) and HTML translation (Gumbo)
  libcld2-dev libgumbo-dev
  # replicas behind a load balancer (test/Serve's rolling restart)
  nginx
  # tfm-serve's page in a real browser (test/Serve/serve-page.test)
  chromium chromium-driver python3-selenium
  # the Python API (import tfmc), pictures of the graph (tfmc graph)
  pybind11-dev python3-dev graphviz
  # pip install . into any Python 3 (and the test's fresh venv)
  python3-venv python3-pip python3-setuptools python3-wheel
  # corpus translation on a Slurm cluster (and its test's one-node cluster)
  slurm-wlm munge
  # unit tests
  libgtest-dev googletest
  # reference implementation, golden data and test models
  python3 python3-numpy python3-torch python3-sentencepiece
  # the benchmark harness's plot (bench/bench.py --plot)
  python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node and npm for the LibreTranslate clients from npm that test/Serve runs
# against tfm-serve: Debian's, unless a node is on PATH already.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  for p in nodejs npm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run this script as root to install them" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
