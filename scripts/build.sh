#!/usr/bin/env bash
# Configures (once) and builds tfmc in build/ with Ninja and clang 19.
# Extra arguments go to the build, e.g. `scripts/build.sh tfm-opt`;
# TFM_CMAKE_ARGS to the first configuration (scripts/test.sh --sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    ${TFM_CMAKE_ARGS:-}
fi
cmake --build "$BUILD_DIR" -- "$@"
