#!/usr/bin/env bash
# Chapter 12's publication figures: every bench row (3 repetitions, medians), the executable, SDPA anchors.
set -u
export LADDER_COMMIT=d957ea7ca48e
O=$1; R=$O/r; mkdir -p $R/anc12
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p3b STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 240 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $R/c_build/summary.md
B=build-gpu/bin
timeout 330 $B/12_fa3_hopper_bench --benchmark_repetitions=3 --benchmark_out=$R/bench12.json \
  --benchmark_out_format=json > $R/bench_12_fa3_hopper.log 2>&1
echo "bench12 rc=$? at $SECONDS s"
timeout 40 $B/12_fa3_hopper > $R/exe12.log 2>&1; echo "exe12 rc=$?"; tail -1 $R/exe12.log
timeout 100 python3 scripts/anchors/torch_anchors.py $R/anc12 --only sdpa,gqa > $R/anc12/anchors.log 2>&1
echo "anchors12 rc=$? at $SECONDS s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
cp $R/c_build/summary.md $R/summary_build.md; rm -rf $R/c_build
tar -czf $O/p4.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
