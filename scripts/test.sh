#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs lit + unit
# tests through CTest.
#   scripts/test.sh              build/, the normal build
#   scripts/test.sh --sanitize   build-sanitize/: compiler, runtime, tools and
#                                every translator the tests compile built with
#                                AddressSanitizer + UndefinedBehaviorSanitizer
#                                (TFM_SANITIZE); any report fails its test
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --sanitize ]; then
  export BUILD_DIR=${BUILD_DIR:-build-sanitize}
  # The fuzz targets are sanitized in every build and run in the normal
  # suite; building them again here would only cost time.
  export TFM_CMAKE_ARGS="-DTFM_SANITIZE=ON -DTFM_FUZZ=OFF ${TFM_CMAKE_ARGS:-}"
  # Reports abort the process, with the stack: an exit status of 1 would
  # pass the tests that expect a failure (`not tfmc ...`). Leaks are
  # reported, but for the one kind scripts/lsan-suppressions.txt explains.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan-suppressions.txt:print_suppressions=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
  shift
fi

bash scripts/setup.sh
bash scripts/check-format.sh
bash scripts/build.sh
# The npm clients of test/Serve/serve-npm-clients.test, from their lockfile
# (the npm registry); without them that test is unsupported, not failed.
npm_dir="${BUILD_DIR:-build}/test/Serve/npm"
if command -v npm > /dev/null && [ ! -d "$npm_dir/node_modules" ]; then
  mkdir -p "$npm_dir"
  cp test/Serve/Inputs/npm/package*.json "$npm_dir/"
  npm ci --prefix "$npm_dir" --no-audit --no-fund --loglevel=error ||
    echo "test: npm ci failed: serve-npm-clients.test will be unsupported" >&2
fi
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2 "$@"
