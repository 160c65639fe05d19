#!/usr/bin/env bash
# Writes the code tfmc generates for the test models, one LLVM-dialect file
# per model, precision and backend, to OUT_DIR, so that a change meant to
# keep the generated code as it was (a refactoring) can show it did:
#
#   scripts/codegen-snapshot.sh /tmp/before        # on the old commit
#   scripts/codegen-snapshot.sh /tmp/after         # on the new one
#   diff -r /tmp/before /tmp/after && echo byte-identical
#
# The models: the Marian test model (post- and pre-norm) and each family's
# micro model (bart, mbart, m2m_100, t5, mt5), built by test/models' makers
# into OUT_DIR/models; precisions fp32, bf16, int8; backends llvm, onednn,
# auto. TFMC overrides the compiler (default build/bin/tfmc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: codegen-snapshot.sh OUT_DIR}
tfmc=${TFMC:-$root/build/bin/tfmc}
python=/usr/bin/python3
mkdir -p "$out/models"

make_model() { # name maker args...
  local name=$1; shift
  [ -f "$out/models/$name/config.json" ] || "$python" "$@" "$out/models/$name" > /dev/null
}
make_model marian "$root/test/models/make_test_model.py" --size tiny
make_model marian-prenorm "$root/test/models/make_test_model.py" --size tiny --pre-norm
for family in bart mbart m2m_100 t5 mt5; do
  make_model "$family" "$root/test/models/make_family_model.py" "$family" --size micro
done

for model in "$out"/models/*/; do
  name=$(basename "$model")
  for precision in fp32 bf16 int8; do
    for backend in llvm onednn auto; do
      "$tfmc" compile "$model" --compile-to=llvm --precision="$precision" \
        --backend="$backend" -o "$out/$name-$precision-$backend.mlir"
    done
  done
done
echo "codegen-snapshot: $(ls "$out"/*.mlir | wc -l) files in $out"
