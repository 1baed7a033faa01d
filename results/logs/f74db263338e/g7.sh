#!/usr/bin/env bash
# This commit on a GPU: the whole build, the GPU CTest entries of 09-16 (16's
# pytest with the accuracy matrix included; 13 left out for time) (the host kit,
# the namespaces, the variant contract and the row math moved around the kernels; their SASS is
# identical, so this checks the host side and the launches).
set -u
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/g7.tgz -C $O r; }
cmake --preset default -B build-gpu -DCMAKE_CUDA_ARCHITECTURES=native \
  -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 120 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log; grep -E " error" $R/build.log | head -5
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/smi.txt 2>&1; cat $R/smi.txt
timeout 90 ctest --test-dir build-gpu -L gpu -R '^(09|10|11|12|14|15|16)_' -j 6 --output-on-failure > $R/ctest_gpu.log 2>&1
echo "ctest gpu rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout|Passed" $R/ctest_gpu.log | head -20
pack
pack
