#!/usr/bin/env bash
# The main job on the bundled default model: installs, builds, writes the
# tiny test model with the project's generator, compiles it with tfmc into a
# native translator, and translates its sample sentences (token ids; text
# I/O and a trained model come with issue 6), source and output side by side.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
MODEL="$BUILD_DIR/models/tiny"
OUT="$BUILD_DIR/models/tiny-translator"

/usr/bin/python3 test/models/make_test_model.py "$MODEL" --size tiny --untied --eos-bias 4.5
echo "== tfmc import $MODEL --summary"
"$BUILD_DIR/bin/tfmc" import "$MODEL" --summary | head -2
echo "== tfmc compile $MODEL -o $OUT"
time "$BUILD_DIR/bin/tfmc" compile "$MODEL" -o "$OUT" --tfm-pass-statistics
echo "== $OUT/translator -b 4 --max-length-ratio 1.5 (source ids => translation ids)"
head -5 "$MODEL/source.ids" > "$OUT/sample.ids"
"$OUT/translator" -b 4 --max-length-ratio 1.5 "$OUT/sample.ids" | paste -d '\t' "$OUT/sample.ids" - |
  sed 's/\t/   =>   /'
