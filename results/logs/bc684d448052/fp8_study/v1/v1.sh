#!/usr/bin/env bash
# Chapter 12's FP8 forward with wider key tiles (192, 224) beside 128 and the software exponential:
# build chapter 12 only, its GPU tests, the sanitizers on the FP8 tuned tests (small), then the FP8 rows of the
# benchmark at every d = 128 shape (3 repetitions), then Nsight Compute on one launch of each key tile.
set -u
O=$1; S=$O/san; mkdir -p $S
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/v1 STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 240 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
echo "build done at $SECONDS s"; tail -3 $O/build/summary.md
B=build-gpu/bin; CS="compute-sanitizer --error-exitcode 1"
timeout 200 $B/12_fa3_hopper_test --gtest_brief=1 > $O/test12.log 2>&1; echo "test rc=$?" >> $O/test12.log
tail -4 $O/test12.log; grep -E "^\[  FAILED" $O/test12.log | head -20
echo "tests done at $SECONDS s"
F='*GpuFp8TunedForward*:*GpuFp8Forward*N17*'
export LADDER_SMALL=1
for t in memcheck racecheck synccheck; do
  ( timeout 240 $CS --tool $t $B/12_fa3_hopper_test --gtest_filter="$F" > $S/san12_$t.log 2>&1; echo "rc=$?" >> $S/san12_$t.log ) &
done
wait
unset LADDER_SMALL
echo "sanitizers done at $SECONDS s"
for f in $S/*.log; do echo "$(basename $f): $(grep -hE 'rc=|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|PASSED|FAILED' $f | tr '\n' ' ')"; done
timeout 200 $B/12_fa3_hopper_bench --benchmark_filter='^(fwd|fp8|tune:fp8_.*|anchor:cudnn/fp8)/d=128/' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out=$O/bench_fp8.json \
  --benchmark_out_format=json > $O/bench_fp8.log 2>&1
grep -E "_median" $O/bench_fp8.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
echo "bench done at $SECONDS s"
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for k in 128 192 224; do
  echo "== ncu fp8 dense main shape --key-tile $k"
  timeout 60 ncu --clock-control none --metrics $M --kernel-name regex:fa3_kernel --launch-count 1 $B/12_fa3_hopper \
    --profile fp8 --key-tile $k 2>&1 | grep -E "duration|hmma|pipe_xu|inst_issued|inst_executed.sum|ERR|rror"
done 2>&1 | tee $O/ncu.log
echo "ncu done at $SECONDS s"
