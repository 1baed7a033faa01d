#!/usr/bin/env bash
# Publication call 1: build every chapter (cuDNN anchor on), every CTest test (cpu|gpu). Beside the tests, the
# sanitizers this commit owes: chapter 14's launch order and dense deterministic order changed (memcheck and
# synccheck on every small GPU test, racecheck on all of them in four shards); chapter 15 instantiates the kernel
# (its CTest sanitizer entries). Then a first look: 14's rows at the main shape, dense and causal, with the new
# order:head_by_head rows, and 14's summary line (go / no-go).
set -u
O=$1; S=$O/san; mkdir -p $S
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p1b STAGES="build" timeout 300 scripts/gpu_check.sh $O/c1_build > $O/c1_build.log 2>&1
echo "build done at $SECONDS s"; tail -4 $O/c1_build/summary.md
B=build-gpu/bin; CS="compute-sanitizer --error-exitcode 1"
F='Gpu*:*/Gpu*'
export LADDER_SMALL=1
( timeout 330 ctest --test-dir build-gpu -L sanitizer -R '^15_attention_variants\.' --output-on-failure > $S/san15.log 2>&1; echo "ctest rc=$?" >> $S/san15.log ) &
for t in memcheck synccheck; do
  ( timeout 300 $CS --tool $t $B/14_fa3_backward_test --gtest_filter="$F" > $S/san14_$t.log 2>&1; echo "rc=$?" >> $S/san14_$t.log ) &
done
for k in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$k timeout 330 $CS --tool racecheck $B/14_fa3_backward_test --gtest_filter="$F" > $S/san14_racecheck_$k.log 2>&1; echo "rc=$?" >> $S/san14_racecheck_$k.log ) &
done
unset LADDER_SMALL
WORK_DIR=/tmp/p1t STAGES="test" timeout 330 scripts/gpu_check.sh $O/c1_test > $O/c1_test.log 2>&1
echo "tests done at $SECONDS s"; tail -2 $O/c1_test/summary.md
grep -E "Failed|\*\*\*Failed|tests passed" $O/c1_test/logs/test.log | head -20
tar -xzf $O/c1_test/evidence.tgz -C $O/c1_test logs/test.log 2>/dev/null
grep -hE "^\[  FAILED|DenseDeterministic|TheLaunchOrder" $O/c1_test/logs/test.log | head -20
wait
echo "sanitizers done at $SECONDS s"
for f in $S/*.log; do echo "$(basename $f): $(grep -hE 'rc=|tests passed|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|PASSED|FAILED' $f | tr '\n' ' ')"; done
tb() { awk '/TFLOP/{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/ || $i ~ /^ms=/) printf "%s ", $i; print $1}'; }
{
  timeout 200 $B/14_fa3_backward_bench --benchmark_filter='^(bwd|step:.*|order:.*|anchor:cudnn/bwd)/d=128/N=4096/B=4/H=16/' 2>/dev/null | tb
  for r in 1 2; do echo "14 exe: $(timeout 90 $B/14_fa3_backward 2>&1 | tail -1)"; done
  echo "at $SECONDS s"
} 2>&1 | tee $O/quick.log
