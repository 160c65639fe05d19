#!/usr/bin/env bash
# The main job on the bundled model: installs, builds (as root, puts the
# tools in /usr/local too), compiles the trained English -> German model in
# examples/en-de with tfmc into a native translator, and translates sample
# sentences, source and German side by side.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# The tools on PATH (/usr/local/bin), as the README's commands use them.
if [ "$(id -u)" -eq 0 ]; then
  cmake --install "$BUILD_DIR" --component tools > /dev/null
  echo "== installed: $(command -v tfmc) $(command -v tfm-serve)"
fi
MODEL=examples/en-de
OUT="$BUILD_DIR/models/en-de"

echo "== tfmc compile $MODEL -o $OUT"
time "$BUILD_DIR/bin/tfmc" compile "$MODEL" -o "$OUT"
"$OUT/translator" --model-info | head -1

SAMPLES="$OUT/samples.en"
cat > "$SAMPLES" <<'TEXT'
Open file
Save the document
The file could not be found.
Print the current page
Do you want to quit?
Delete the selected items
No network connection
Show hidden files
TEXT
echo "== $OUT/translator -b 4 (English => German)"
"$OUT/translator" -b 4 "$SAMPLES" | paste -d '\t' "$SAMPLES" - |
  awk -F '\t' '{ printf "%-28s => %s\n", $1, $2 }'
