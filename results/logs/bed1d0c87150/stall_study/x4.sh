#!/usr/bin/env bash
# Chapter 15 study: why a window's backward (and the 10% tile set's forward) runs slower per tile than the dense one.
# Nsight Compute on one launch each: the warps' stall reasons per issued instruction, instructions, tensor pipe.
set -u
O=$1; mkdir -p $O
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/x4b STAGES="build" LADDER_ONLY="15_attention_variants" timeout 200 scripts/gpu_check.sh $O/c_build > $O/c_build.log 2>&1
echo "build done at $SECONDS s"; grep -E "^\| (configure|build)" $O/c_build.log
B=build-gpu/bin/15_attention_variants_bench
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,smsp__issue_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
for row in bwd:window bwd:dense bwd:tiles10 fwd:tiles10 fwd:dense; do
  k=fa3_kernel; [[ $row == bwd:* ]] && k=fa3_bwd_kernel
  echo "== ncu $row"
  timeout 60 ncu --clock-control none --metrics "$M" --kernel-name regex:"$k" --launch-count 1 $B \
    --benchmark_filter="^$row/" 2>&1 | grep -E "duration|inst_executed|hmma|warps_active|issue_active|stalled|ERR|rror" |
    sed -E 's/ +/ /g; s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | awk '$NF+0 >= 0.05 || !/ratio/' | tee -a $O/ncu_stalls.log
done
echo "all done at $SECONDS s"
