#!/usr/bin/env bash
# Fails if any C++/CUDA source differs from .clang-format. Fix with: scripts/check_format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked files and new ones not yet added (ignored ones aside), that exist in the working tree.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.h' '*.cpp' '*.cu' '*.cuh' |
  sort -u | while read -r f; do [[ -f $f ]] && echo "$f"; done)
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
  echo "format check: ${#files[@]} files clean"
fi
