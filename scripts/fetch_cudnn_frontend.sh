#!/usr/bin/env bash
# Puts the cuDNN frontend's headers (header-only C++: cudnn_frontend.h and its graph API) in
# .deps/cudnn_frontend/include, where cmake/Cudnn.cmake looks for them: chapters 10 and 12
# then time cuDNN's attention in their own process. They come from PyPI's
# nvidia-cudnn-frontend wheel, which ships them under include/ (the wheel's Python module is
# not used). cuDNN itself (libcudnn.so.9) is not fetched: it comes with the CUDA toolkit or
# with PyTorch's nvidia-cudnn-cu* wheel.
#
#   scripts/fetch_cudnn_frontend.sh [VERSION]     e.g. 1.32.0; default: the newest
#
# A machine without network: run it where there is one and copy .deps/ along.
set -euo pipefail

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h | --help) usage && exit 0 ;;
  -*) echo "unknown option: $1" >&2 && usage >&2 && exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.deps/cudnn_frontend"
spec="nvidia-cudnn-frontend${1:+==$1}"

command -v python3 > /dev/null || { echo "fetch_cudnn_frontend: python3 (with pip) is needed" >&2 && exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! python3 -m pip download --quiet --no-deps "$spec" -d "$tmp" >&2; then
  echo "fetch_cudnn_frontend: pip could not download $spec (no network? copy .deps/ from a machine that has it)" >&2
  exit 1
fi
wheel=$(ls "$tmp"/*.whl)
python3 - "$wheel" "$tmp/unpacked" << 'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.startswith("include/")]
    if "include/cudnn_frontend.h" not in names:
        sys.exit(f"fetch_cudnn_frontend: {sys.argv[1]} has no include/cudnn_frontend.h")
    z.extractall(sys.argv[2], names)
EOF

rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/unpacked/include" "$dest/include"
version=$(sed -n 's/^#define CUDNN_FRONTEND_\(MAJOR\|MINOR\|PATCH\)_VERSION \([0-9][0-9]*\).*/\2/p' \
  "$dest/include/cudnn_frontend_version.h" | paste -sd.)
echo "cuDNN frontend $version headers in $dest/include"
echo "configure with -DCUDNN_FRONTEND_INCLUDE_DIR=$dest/include (found there by default)"
