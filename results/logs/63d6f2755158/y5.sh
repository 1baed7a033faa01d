#!/usr/bin/env bash
# Chapter 12's publication figures, medians of 3: its benchmarks (every row, 3 repetitions), its executable's summary
# line, PyTorch's SDPA anchors (groups sdpa, gqa), all in one call.
set -u
O=$1; R=$O/r; mkdir -p $R
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/y5 STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 200 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -1 $R/c_build/summary.md; rm -rf $R/c_build
timeout 300 build-gpu/bin/12_fa3_hopper_bench --benchmark_repetitions=3 --benchmark_out=$R/bench12.json \
  --benchmark_out_format=json > $R/bench_12_fa3_hopper.log 2>&1
echo "bench rc=$? at $SECONDS s"
grep -E "^(fwd|fp8|tune:fp8|anchor:cudnn)" $R/bench_12_fa3_hopper.log | grep "d=128/N=4096/B=4/H=16/" | grep -v "_mean\|_median\|_stddev\|_cv" \
  | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
timeout 60 build-gpu/bin/12_fa3_hopper > $R/exe12.log 2>&1; echo "exe rc=$?"; tail -1 $R/exe12.log
timeout 150 python3 scripts/anchors/torch_anchors.py $R/anc --only sdpa,gqa > $R/anchors.log 2>&1
echo "anchors rc=$? at $SECONDS s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
tar -czf $O/y5.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
