#!/usr/bin/env bash
# Chapter 12, third look: FP8 without ping-pong turns (128 and 192 keys).
# Build chapter 12 only, its GPU tests, then the bf16 and FP8 rows at every shape (3 repetitions), ncu on FP8 192.
set -u
O=$1
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/v3 STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 240 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $O/build/summary.md
B=build-gpu/bin
timeout 200 $B/12_fa3_hopper_test --gtest_brief=1 --gtest_filter='*Fp8*' > $O/test12.log 2>&1; echo "test rc=$?" >> $O/test12.log
tail -4 $O/test12.log; grep -E "^\[  FAILED" $O/test12.log | head -20
echo "tests done at $SECONDS s"
timeout 200 $B/12_fa3_hopper_bench --benchmark_filter='^(fp8|tune:fp8_keys(128|192).*)/d=128' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out=$O/bench_v3.json \
  --benchmark_out_format=json > $O/bench_v3.log 2>&1
grep -E "_median" $O/bench_v3.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
echo "bench done at $SECONDS s"
