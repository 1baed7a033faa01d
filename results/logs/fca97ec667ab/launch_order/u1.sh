#!/usr/bin/env bash
# The launch order of chapter 14's fast step, three ways, on one H200: head by head (--heads-per-section 1), in the
# sections of heads that fit in the L2 (0, the default), and one section over the whole grid (64: longest first
# everywhere). The executable's timing table (checks first) at the causal main shape and at chapter 16's training
# shape, then Nsight Compute on one launch of each at the main shape: duration, DRAM bytes read, L2 hit rate.
set -u
O=$1
WORK_DIR=/tmp/u1 STAGES="build" LADDER_ONLY="14_fa3_backward" timeout 200 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
echo "build done at $SECONDS s"; tail -3 $O/build/summary.md
B=build-gpu/bin
export LADDER_WARMUP_MS=300
for shape in "--B 4 --H 16 --N 4096" "--B 2 --H 6 --N 8192"; do
  for h in 1 0 64; do
    echo "== $shape --mask causal --heads-per-section $h"
    timeout 45 $B/14_fa3_backward $shape --mask causal --heads-per-section $h 2>&1 | grep -E "step |train|cuDNN backward|FA3 bwd"
  done
done 2>&1 | tee $O/exe.log
echo "timing done at $SECONDS s"
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for h in 1 0 64; do
  echo "== ncu causal main shape --heads-per-section $h"
  timeout 40 ncu --metrics $M --kernel-name regex:fa3_bwd_kernel --launch-count 1 $B/14_fa3_backward --mask causal \
    --profile bulk --heads-per-section $h 2>&1 | grep -E "duration|dram__bytes|hit_rate|hmma|ERR|error"
done 2>&1 | tee $O/ncu.log
echo "ncu done at $SECONDS s"
