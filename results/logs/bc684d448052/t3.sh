#!/usr/bin/env bash
# Publication call 3: the benchmarks of chapters 10-15, then their executables' summary lines (the ladder's
# second half; chapter 16's line is its model stage's, call 4).
set -u
O=$1
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p3 STAGES="build bench" BENCH_CHAPTERS='^1[0-6]_' timeout 440 scripts/gpu_check.sh $O/c3 > $O/c3.log 2>&1
cat $O/c3/summary.md
exes=build-gpu/bin/ladder_info
for n in 10_fa2_tensor_cores 11_flash_decoding 12_fa3_hopper 13_ring_attention 14_fa3_backward 15_attention_variants; do
  [[ -x build-gpu/bin/$n ]] && exes+="|build-gpu/bin/$n"
done
t0=$SECONDS
timeout 130 cmake "-DLADDER_EXES=$exes" -P cmake/RunLadder.cmake > $O/ladder_10_15.log 2>&1
echo "ladder 10-15 rc=$? in $((SECONDS - t0)) s"; cat $O/ladder_10_15.log | cut -c1-160
