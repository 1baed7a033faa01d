#!/usr/bin/env bash
# Chapter 12 FP8: where do the consumer warps wait? Nsight Compute's per-instruction stall sampling (SASS) of one
# launch of the FP8 forward (192 keys) and of the bf16 intra-warpgroup forward, B4 H16 N4096 d128 dense.
set -u
O=$1
WORK_DIR=/tmp/y1 STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 300 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $O/build/summary.md
B=build-gpu/bin
ncu --version | tail -1
for prof in fp8 intrawg; do
  timeout 150 ncu --set full --import-source no --kernel-name regex:fa3_kernel --launch-count 1 -f -o /tmp/r_$prof \
    $B/12_fa3_hopper --profile $prof > $O/ncu_$prof.log 2>&1
  echo "ncu $prof rc=$? at $SECONDS s"
  ncu -i /tmp/r_$prof.ncu-rep --page source --csv --print-source sass > $O/src_$prof.csv 2> $O/src_$prof.err
  echo "source rc=$? $(wc -c < $O/src_$prof.csv) bytes"; head -c 600 $O/src_$prof.csv; echo; head -3 $O/src_$prof.err
  ncu -i /tmp/r_$prof.ncu-rep --page details --print-details all > $O/details_$prof.txt 2>&1
  ncu -i /tmp/r_$prof.ncu-rep --page raw --csv > $O/raw_$prof.csv 2>&1
done
rm -rf $O/build
echo "all done at $SECONDS s"
