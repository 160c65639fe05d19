#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs lit + unit
# tests through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2
