#!/usr/bin/env bash
# Publication call 2: the benchmarks of chapters 01-09, then their executables' summary lines right after (the
# ladder's first half: a chapter's summary line and its benchmark table measured minutes apart, in one call).
set -u
O=$1
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p2 STAGES="build bench" BENCH_CHAPTERS='^0[1-9]_' timeout 470 scripts/gpu_check.sh $O/c2 > $O/c2.log 2>&1
cat $O/c2/summary.md
exes=build-gpu/bin/ladder_info
for d in 0[1-9]_*/; do n=${d%/}; [[ -x build-gpu/bin/$n ]] && exes+="|build-gpu/bin/$n"; done
t0=$SECONDS
timeout 110 cmake "-DLADDER_EXES=$exes" -P cmake/RunLadder.cmake > $O/ladder_01_09.log 2>&1
echo "ladder 01-09 rc=$? in $((SECONDS - t0)) s"; cat $O/ladder_01_09.log | cut -c1-160
