#!/usr/bin/env bash
# Chapter 15 study: the persistent backward (one CTA per SM walking the key tiles). Build chapter 15, its GPU tests
# and sanitizers, the backward rows (two repetitions), Nsight Compute on the window's backward.
set -u
O=$1; mkdir -p $O
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/x3b STAGES="build" LADDER_ONLY="15_attention_variants" timeout 200 scripts/gpu_check.sh $O/c_build > $O/c_build.log 2>&1
echo "build done at $SECONDS s"; grep -E "^\| (configure|build)" $O/c_build.log
B=build-gpu/bin
timeout 150 $B/15_attention_variants_test --gtest_brief=1 > $O/test15.log 2>&1; echo "test rc=$?"; tail -3 $O/test15.log; grep -E "^\[  FAILED" $O/test15.log | head
timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^15_attention_variants\.' --output-on-failure > $O/san15.log 2>&1; echo "san rc=$?"
grep -hE "Test +#|tests passed|ERROR SUMMARY: [1-9]" $O/san15.log | head
echo "at $SECONDS s"
timeout 120 $B/15_attention_variants_bench --benchmark_filter='^(bwd|train):' --benchmark_repetitions=2 \
  --benchmark_report_aggregates_only=true 2>&1 | grep "_median" | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; sub("/manual_time_median","",$1); print $1, t}'
echo "bench done at $SECONDS s"
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__t_sector_hit_rate.pct
for row in bwd:window bwd:documents; do
  echo "== ncu $row"
  timeout 45 ncu --clock-control none --metrics $M --kernel-name regex:fa3_bwd_kernel --launch-count 1 $B/15_attention_variants_bench \
    --benchmark_filter="^$row/" 2>&1 | grep -E "duration|sm__|smsp__|lts__|ERR|rror" | sed -E 's/ +/ /g'
done
echo "all done at $SECONDS s"
