#!/usr/bin/env bash
# Chapter 12's FP8 accuracy study (its model columns now with FA2's max beside FA4's).
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?}
O=$1; R=$O/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper" > $R/build.log 2>&1
timeout 200 cmake --build build-gpu -j 16 --target 12_fa3_hopper_fp8_study >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -n 1 $R/build.log
timeout 170 build-gpu/bin/12_fa3_hopper_fp8_study --csv $R/fp8.csv > $R/fp8_study.log 2>&1; echo "fp8_study rc=$? at $SECONDS s"
tail -n 12 $R/fp8_study.log
