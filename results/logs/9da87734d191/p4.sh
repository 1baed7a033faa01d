#!/usr/bin/env bash
# Chapter 15's publication figures: every bench row (3 repetitions, medians), the executable, FlexAttention anchors.
set -u
O=$1; R=$O/r; mkdir -p $R/anc15
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p4b STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 200 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $R/c_build/summary.md
B=build-gpu/bin
timeout 150 $B/15_attention_variants_bench --benchmark_repetitions=3 --benchmark_out=$R/bench15.json \
  --benchmark_out_format=json > $R/bench_15_attention_variants.log 2>&1
echo "bench15 rc=$? at $SECONDS s"
grep "_median" $R/bench_15_attention_variants.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}' | grep -E "window|softcap|documents/"
timeout 40 $B/15_attention_variants > $R/exe15.log 2>&1; echo "exe15 rc=$?"; tail -1 $R/exe15.log
timeout 120 python3 scripts/anchors/torch_anchors.py $R/anc15 --only flex --flex-text $R/anc15/flex.txt > $R/anc15/anchors_flex.log 2>&1
echo "anchors15 rc=$? at $SECONDS s"; grep flex_bf16 $R/anc15/anchors_flex.log | cut -c1-60,200-330
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
cp $R/c_build/summary.md $R/summary_build.md; rm -rf $R/c_build
tar -czf $O/p4.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
