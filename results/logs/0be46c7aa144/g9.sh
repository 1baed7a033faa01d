#!/usr/bin/env bash
# This commit on a GPU, in two calls on one warm machine:
#   g9.sh OUT build   the whole build (native arch, cuDNN anchor), then every GPU CTest entry of 09-16
#   g9.sh OUT san     compute-sanitizer over the GPU tests of 09, 10, 12, 14, 15 and 16 (small sizes):
#                     memcheck for each, synccheck for 12 (mbarrier/TMA), racecheck for 15
# The kernels' SASS is identical to the last tested commits (stored beside the commits that moved
# them), so this checks the host side: the launchers, the refusals and the launches.
set -u
O=$1; R=$O/r; mkdir -p $R
case $2 in
build)
  cmake --preset default -B build-gpu -DCMAKE_CUDA_ARCHITECTURES=native \
    -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
  timeout 330 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
  echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log; grep -E " error" $R/build.log | head -5
  nvidia-smi --query-gpu=name,driver_version --format=csv > $R/smi.txt 2>&1; cat $R/smi.txt
  timeout 200 ctest --test-dir build-gpu -L gpu -R '^(09|10|11|12|13|14|15|16)_' -j 6 --output-on-failure \
    > $R/ctest_gpu.log 2>&1
  echo "ctest gpu rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout|Passed|Skipped" $R/ctest_gpu.log | head -40
  tar -czf $O/g9_build.tgz -C $O r ;;
san)
  timeout 540 ctest --test-dir build-gpu -L sanitizer \
    -R '^(09_[a-z_]+\.memcheck|10_[a-z_0-9]+\.memcheck|12_[a-z_0-9]+\.(memcheck|synccheck)|14_[a-z_0-9]+\.memcheck|15_[a-z_]+\.(memcheck|racecheck)|16_[a-z_]+\.memcheck)$' \
    -j 8 --output-on-failure > $R/ctest_san.log 2>&1
  echo "ctest sanitizer rc=$? at $SECONDS s"; grep -E "tests passed|Test +#|ERROR SUMMARY|RACECHECK SUMMARY" $R/ctest_san.log | head -40
  tar -czf $O/g9_san.tgz -C $O r ;;
esac
