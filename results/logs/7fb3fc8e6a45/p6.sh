#!/usr/bin/env bash
# Nsight Compute on one launch each of chapter 12's default FP8 forward (persistent, 128 keys, FA4's max rule) and the
# bf16 intrawg step, B4 H16 N4096 d128 dense, unlocked clocks.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?}
O=$1; R=$O/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper" > $R/build.log 2>&1
timeout 150 cmake --build build-gpu -j 16 --target 12_fa3_hopper >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -n 1 $R/build.log
M="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats"
for v in fp8 intrawg; do
  timeout 45 ncu --clock-control none $M --page details --print-details all -k regex:fa3_kernel -c 1 \
    build-gpu/bin/12_fa3_hopper --profile $v > $R/ncu_$v.log 2>&1; echo "ncu $v rc=$? at $SECONDS s"
done
grep -E "Duration|Issue Slots Busy|Tensor|Pipe Xu|Warp Cycles Per Issued" $R/ncu_*.log | head -20
