#!/usr/bin/env bash
# Publication call 1: build every chapter (cuDNN anchor on), every CTest test (cpu|gpu). Beside the tests, the
# sanitizers this commit owes: chapter 12's kernel changed (FP8 key tiles of 192 and 224, the K descales loaded
# ahead, O rescaled between the two issues of a turn) and chapter 15 instantiates it: their CTest sanitizer
# entries (memcheck, racecheck, synccheck on every Gpu* test, small sizes). Then 12's summary line.
set -u
O=$1; S=$O/san; mkdir -p $S
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p1b STAGES="build" timeout 300 scripts/gpu_check.sh $O/c1_build > $O/c1_build.log 2>&1
echo "build done at $SECONDS s"; tail -4 $O/c1_build/summary.md
( timeout 400 ctest --test-dir build-gpu -L sanitizer -R '^(12_fa3_hopper|15_attention_variants)\.' --output-on-failure > $S/san12_15.log 2>&1; echo "ctest rc=$?" >> $S/san12_15.log ) &
WORK_DIR=/tmp/p1t STAGES="test" timeout 360 scripts/gpu_check.sh $O/c1_test > $O/c1_test.log 2>&1
echo "tests done at $SECONDS s"; tail -2 $O/c1_test/summary.md
tar -xzf $O/c1_test/evidence.tgz -C $O/c1_test logs/test.log 2>/dev/null
grep -hE "^\[  FAILED|tests passed|\*\*\*Failed|Failed  " $O/c1_test/logs/test.log | head -20
wait
echo "sanitizers done at $SECONDS s"
grep -hE "Test +#|tests passed|rc=" $S/san12_15.log
for r in 1 2; do echo "12 exe: $(timeout 90 build-gpu/bin/12_fa3_hopper 2>&1 | tail -1)"; done | tee $O/first_look.log
echo "at $SECONDS s"
