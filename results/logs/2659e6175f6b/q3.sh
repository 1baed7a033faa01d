#!/usr/bin/env bash
# Publication call 3: the benchmarks of chapters 10-16, then the ladder (every executable's summary line).
set -u
O=$1
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p3 STAGES="build bench ladder" BENCH_CHAPTERS='^1[0-6]_' timeout 580 scripts/gpu_check.sh $O/c3 > $O/c3.log 2>&1
cat $O/c3/summary.md
