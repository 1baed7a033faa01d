#!/usr/bin/env bash
# Publication call 2: the benchmarks of chapters 01-09.
set -u
O=$1
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p2 STAGES="build bench" BENCH_CHAPTERS='^0[1-9]_' timeout 580 scripts/gpu_check.sh $O/c2 > $O/c2.log 2>&1
cat $O/c2/summary.md
