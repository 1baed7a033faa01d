#!/usr/bin/env bash
# Verification of d957ea7ca48e: build 12+15, tests, sanitizers, the d=64 A/B of the loop.
set -u
O=$1; R=$O/r; mkdir -p $R
WORK_DIR=/tmp/p3b STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 200 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -1 $R/c_build/summary.md; cp $R/c_build/summary.md $R/summary_build.md; rm -rf $R/c_build
B=build-gpu/bin
timeout 60 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$? at $SECONDS s"; tail -3 $R/test12.log
timeout 90 $B/15_attention_variants_test --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$? at $SECONDS s"; tail -3 $R/test15.log
for v in 0 1; do bash .run/exp/build.sh build-gpu $v > $R/exp_build$v.log 2>&1 || echo "build $v failed"; done
for rep in 1 2; do for v in 0 1; do timeout 60 $B/fa3_exp$v v$v >> $R/exp_times.txt 2>&1; done; done
echo "exp at $SECONDS s"; grep "_d64" $R/exp_times.txt | sort -k2,3
timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' > $R/san12.log 2>&1; echo "san12 rc=$? at $SECONDS s"; grep -E "Passed|Failed|tests passed" $R/san12.log | tail -5
timeout 150 ctest --test-dir build-gpu -L sanitizer -R '^15_attention_variants\.' > $R/san15.log 2>&1; echo "san15 rc=$? at $SECONDS s"; grep -E "Passed|Failed|tests passed" $R/san15.log | tail -5
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $R/smi.txt 2>&1
tar -czf $O/p3.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
