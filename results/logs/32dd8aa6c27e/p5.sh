#!/usr/bin/env bash
# Pipes microbenchmark with the max kinds; Nsight Compute source-level samples of the default FP8 forward.
set -u
O=$1; R=$O/r; mkdir -p $R
WORK_DIR=/tmp/p5b STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 200 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -1 $R/c_build/summary.md; cp $R/c_build/summary.md $R/summary_build.md; rm -rf $R/c_build
B=build-gpu/bin
timeout 120 $B/12_fa3_hopper_pipes > $R/pipes.md 2> $R/pipes.err; echo "pipes rc=$? at $SECONDS s"; cat $R/pipes.md | head -60
ncu --version | tail -1 > $R/ncu_version.txt
timeout 200 ncu --set full --import-source no --kernel-name regex:fa3_kernel --launch-count 1 -f -o /tmp/r_fp8 \
  $B/12_fa3_hopper --profile fp8 > $R/ncu_fp8.log 2>&1
echo "ncu rc=$? at $SECONDS s"
ncu -i /tmp/r_fp8.ncu-rep --page source --csv --print-source sass > $R/src_fp8.csv 2> $R/src_fp8.err
ncu -i /tmp/r_fp8.ncu-rep --page details --print-details all > $R/details_fp8.txt 2>&1
grep -E "Duration|Pipe Tensor Cycles|Issue Slots Busy|Inst Executed Pipe Xu|Pipe Alu Cycles|Warp Cycles Per Issued" $R/details_fp8.txt | head -12
gzip $R/src_fp8.csv $R/details_fp8.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/smi.txt 2>&1
tar -czf $O/p5.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
