#!/usr/bin/env bash
# The main job on the bundled default model: installs, builds, writes the
# tiny test model with the project's generator, imports it with tfmc and
# prints an overview of the IR and its first lines.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
MODEL="$BUILD_DIR/models/tiny"

/usr/bin/python3 test/models/make_test_model.py "$MODEL" --size tiny
echo "== tfmc import $MODEL --summary"
"$BUILD_DIR/bin/tfmc" import "$MODEL" --summary
"$BUILD_DIR/bin/tfmc" import "$MODEL" -o "$BUILD_DIR/models/tiny.mlir"
echo "== $BUILD_DIR/models/tiny.mlir (the model in primitive tfm IR), decode_step:"
sed -n '/func.func @decode_step/,/tfm.softmax/p' "$BUILD_DIR/models/tiny.mlir" |
  grep -v 'tfm.weight' | cut -c1-160
