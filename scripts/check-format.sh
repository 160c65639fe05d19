#!/usr/bin/env bash
# Checks that every C++ file of the tree is formatted as .clang-format (LLVM
# style) says, by the clang-format of the LLVM the project builds with (19).
# Prints the files and the diff clang-format wants, and fails if any.
#   scripts/check-format.sh         check
#   scripts/check-format.sh --fix   format them in place
set -euo pipefail
cd "$(dirname "$0")/.."

formatter=$(command -v clang-format-19 || true)
if [ -z "$formatter" ]; then
  echo "check-format: clang-format-19 not found (Debian: clang-format-19)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files dialects passes compiler runtime tools python fuzz bench \
  test/unit | grep -E '\.(cpp|h)$')
if [ "${1:-}" = --fix ]; then
  "$formatter" -i "${files[@]}"
  exit 0
fi
if ! "$formatter" --dry-run --Werror "${files[@]}" > /dev/null 2>&1; then
  for file in "${files[@]}"; do
    "$formatter" "$file" | diff -u --label "$file" --label "$file (formatted)" "$file" - || true
  done
  echo "check-format: format the files above (scripts/check-format.sh --fix)" >&2
  exit 1
fi
echo "check-format: the ${#files[@]} C++ files of the tree are formatted"
