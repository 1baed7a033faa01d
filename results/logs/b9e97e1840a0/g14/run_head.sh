#!/usr/bin/env bash
# Builds and tests the committed tree packed in .deps/head.tgz (not the working copy), in /tmp/head.
set -u
O=$1; PHASE=$2; SRC=$PWD
mkdir -p /tmp/head && cd /tmp/head
[ -f CMakeLists.txt ] || tar -xzf $SRC/.deps/head.tgz
mkdir -p .deps && { [ -e .deps/cudnn_frontend ] || cp -r $SRC/.deps/cudnn_frontend .deps/; }
bash $SRC/.deps/${SCRIPT:-g10.sh} $O $PHASE
