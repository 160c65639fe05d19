#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in build/ and runs them:
#   scripts/fuzz.sh [TARGET] [SECONDS]
# TARGET: Safetensors, ModelConfig, WeightsFile, Tokenizer, Lines, TfmIR,
# ServeRequest, or all (the default); SECONDS per target (default 60). Each run starts from
# the seeds in fuzz/corpus/TARGET and keeps what it finds new in
# build/fuzz/corpus/TARGET; a crash leaves its input in build/fuzz/ and
# makes the script fail. libFuzzer's last lines ("Done N runs", cov:, ft:)
# are the figures fuzz/README.md records. Extra libFuzzer flags can come in
# FUZZ_FLAGS (e.g. FUZZ_FLAGS=-runs=1000000).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(Safetensors ModelConfig WeightsFile Tokenizer Lines TfmIR ServeRequest ServeFile Html)
TARGET=${1:-all}
SECONDS_PER_TARGET=${2:-60}
BUILD_DIR=${BUILD_DIR:-build}
if [ "$TARGET" != all ]; then
  case " ${TARGETS[*]} " in
    *" $TARGET "*) TARGETS=("$TARGET") ;;
    *) echo "fuzz.sh: unknown target '$TARGET' (one of: ${TARGETS[*]}, all)" >&2
       exit 2 ;;
  esac
fi

bash scripts/build.sh -j2 "${TARGETS[@]/%/Fuzzer}"
for t in "${TARGETS[@]}"; do
  work="$BUILD_DIR/fuzz/corpus/$t"
  mkdir -p "$work"
  echo "== $t: ${SECONDS_PER_TARGET}s"
  # Inputs up to 64 KiB; the reading of lines costs per byte, and at 64 KiB
  # it runs at ~200 inputs/s: 4 KiB there (CTest runs its 200 KB seed).
  max_len=65536
  [ "$t" = Lines ] && max_len=4096
  TFM_FUZZ_QUIET=1 "$BUILD_DIR/fuzz/${t}Fuzzer" \
    -max_total_time="$SECONDS_PER_TARGET" -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/fuzz/$t-" \
    ${FUZZ_FLAGS:-} "$work" "fuzz/corpus/$t"
done
