#!/usr/bin/env bash
# The pictures of the model graph (docs/Usage.md): a model of the base
# benchmark shape (6 + 6 layers, d_model 512, 32000 tokens; random weights, the graph
# does not depend on them) drawn by `tfmc graph` as imported, after fusion,
# and with the backends `auto` chooses.
#   scripts/graph-pictures.sh [OUT_DIR] [SIZE]     (default: docs/images base)
# Needs the build (scripts/build.sh) and Graphviz (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-docs/images}
size=${2:-base}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 test/models/make_test_model.py "$tmp/$size" --size "$size" --sentences 1 > /dev/null
mkdir -p "$out"
for stage in imported fused backends; do
  "${BUILD_DIR:-build}/bin/tfmc" graph "$tmp/$size" --stage="$stage" -o "$out/$size-$stage.svg"
  echo "graph-pictures: $out/$size-$stage.svg"
done
