#!/usr/bin/env bash
# Chapter 12, second look: K's descales loaded before the waits, O rescaled between the issues of S and P V.
# Build chapter 12 only, its GPU tests, then the bf16 and FP8 rows at every shape (3 repetitions), ncu on FP8 192.
set -u
O=$1
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/v2 STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 240 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $O/build/summary.md
B=build-gpu/bin
timeout 200 $B/12_fa3_hopper_test --gtest_brief=1 > $O/test12.log 2>&1; echo "test rc=$?" >> $O/test12.log
tail -4 $O/test12.log; grep -E "^\[  FAILED" $O/test12.log | head -20
echo "tests done at $SECONDS s"
timeout 200 $B/12_fa3_hopper_bench --benchmark_filter='^(fwd|step:intrawg|fp8|tune:fp8_keys.*)/' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out=$O/bench_v2.json \
  --benchmark_out_format=json > $O/bench_v2.log 2>&1
grep -E "_median" $O/bench_v2.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
echo "bench done at $SECONDS s"
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for k in 192; do
  echo "== ncu fp8 dense main shape --key-tile $k"
  timeout 60 ncu --clock-control none --metrics $M --kernel-name regex:fa3_kernel --launch-count 1 $B/12_fa3_hopper \
    --profile fp8 --key-tile $k 2>&1 | grep -E "duration|hmma|pipe_xu|inst_issued|inst_executed.sum|ERR|rror"
done 2>&1 | tee $O/ncu.log
echo "ncu done at $SECONDS s"
