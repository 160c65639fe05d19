#!/usr/bin/env bash
# Checks that the C++ lines changed since BASE (default: the commit before
# HEAD; TFM_FORMAT_BASE overrides it) are formatted as .clang-format (LLVM
# style) says. Untouched lines are not checked: the tree is formatted as
# it is changed. Prints the diff clang-format wants and fails if any.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${TFM_FORMAT_BASE:-HEAD~1}
if ! git rev-parse -q --verify "$base^{commit}" > /dev/null 2>&1; then
  echo "check-format: no commit $base to compare with (a shallow clone?); skipped"
  exit 0
fi
formatter=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$formatter" ]; then
  echo "check-format: clang-format not found (Debian: clang-format)" >&2
  exit 1
fi
diff=$(git clang-format --binary "$formatter" --diff "$base" -- \
  dialects passes compiler runtime tools python fuzz bench test/unit 2>&1 || true)
case $diff in
  "" | "no modified files to format" | *"did not modify any files"*)
    echo "check-format: the C++ lines changed since $base are formatted"
    exit 0 ;;
esac
echo "$diff"
echo "check-format: format the lines above (git clang-format $base)" >&2
exit 1
