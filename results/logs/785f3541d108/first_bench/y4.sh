#!/usr/bin/env bash
# Chapter 12's publication figures: its benchmarks (every row), its executable's summary line, PyTorch's SDPA
# anchors (groups sdpa, gqa) in the same session.
set -u
O=$1; R=$O/r; mkdir -p $R
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/y4 STAGES="build bench" LADDER_ONLY="12_fa3_hopper" BENCH_CHAPTERS='^12_' timeout 400 scripts/gpu_check.sh $R/c_bench > $R/c_bench.log 2>&1
echo "bench done at $SECONDS s"; tail -3 $R/c_bench/summary.md; cp $R/c_bench/summary.md $R/summary_bench.md; rm -rf $R/c_bench
cp /tmp/y4/bench/12_fa3_hopper.json $R/bench12.json; cp /tmp/y4/logs/bench_12_fa3_hopper.log $R/ 2>/dev/null; cp /tmp/y4/logs/env.log $R/ 2>/dev/null
grep -E "^(fwd|fp8|tune:fp8|anchor:cudnn)" $R/bench_12_fa3_hopper.log | grep "d=128/N=4096/B=4/H=16/" | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
timeout 60 build-gpu/bin/12_fa3_hopper > $R/exe12.log 2>&1; echo "exe rc=$?"; tail -1 $R/exe12.log
timeout 150 python3 scripts/anchors/torch_anchors.py $R/anc --only sdpa,gqa > $R/anchors.log 2>&1
echo "anchors rc=$? at $SECONDS s"; tail -3 $R/anchors.log | cut -c1-300
tar -czf $O/y4.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
