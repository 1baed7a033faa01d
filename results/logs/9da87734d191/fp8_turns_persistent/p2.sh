#!/usr/bin/env bash
# Chapter 12: the pipes microbenchmark (with f16x2 exponentials); FP8 consumers without the turns at the GEMMs:
# FP8 persistent; tests of chapter 12, then the FP8 rows (3 repetitions, medians), then 12's sanitizers.
set -u
O=$1; R=$O/r; mkdir -p $R
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p2b STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 300 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $R/c_build/summary.md
B=build-gpu/bin
timeout 60 $B/12_fa3_hopper_pipes > $R/pipes.md 2>&1; echo "pipes rc=$? at $SECONDS s"; cat $R/pipes.md
( timeout 200 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "rc=$?" >> $R/test12.log )
echo "tests done at $SECONDS s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]|^rc=' $R/test12.log | tr '\n' ' ')"; grep -E "^\[  FAILED  \] [A-Z]" $R/test12.log | head
timeout 200 $B/12_fa3_hopper_bench --benchmark_filter='^(fwd|fp8|anchor:cudnn/fp8|tune:fp8_keys(128|192).*)/d=128/' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true > $R/bench_fp8.log 2>&1
echo "bench rc=$? at $SECONDS s"
grep -E "_median" $R/bench_fp8.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
if [[ $SECONDS -lt 390 ]]; then
  timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' --output-on-failure > $R/san12.log 2>&1
  echo "san rc=$? at $SECONDS s"; grep -E "Test +#|tests passed" $R/san12.log
fi
cp $R/c_build/summary.md $R/summary_build.md; rm -rf $R/c_build
tar -czf $O/p2.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
