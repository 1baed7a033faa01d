#!/usr/bin/env bash
# Build 12 + 15; the pipes microbenchmark; chapter 15's publication figures (bench, exe, flex anchors).
set -u
O=$1; R=$O/r; mkdir -p $R/anc
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p1b STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 240 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -3 $R/c_build/summary.md
ninja -C build-gpu 12_fa3_hopper_pipes > $R/pipes_build.log 2>&1 || cmake --build build-gpu --target 12_fa3_hopper_pipes >> $R/pipes_build.log 2>&1
P=$(find build-gpu -name 12_fa3_hopper_pipes -type f | head -1); echo "pipes at $P"
timeout 120 $P > $R/pipes.md 2>&1; echo "pipes rc=$? at $SECONDS s"; cat $R/pipes.md
timeout 60 $P --cycles 1600000 > $R/pipes_long.md 2>&1; echo "pipes long rc=$? at $SECONDS s"; tail -10 $R/pipes_long.md
WORK_DIR=/tmp/p1c STAGES="bench" BENCH_CHAPTERS='^15_' timeout 200 scripts/gpu_check.sh $R/c_bench > $R/c_bench.log 2>&1
echo "bench done at $SECONDS s"; tail -2 $R/c_bench/summary.md
cp /tmp/p1c/bench/15_attention_variants.json $R/bench15.json; cp /tmp/p1c/logs/bench_15_attention_variants.log $R/ 2>/dev/null
grep -E "^(fwd|bwd|train|anchor)" $R/bench_15_attention_variants.log | sed -E 's/\/manual_time//' | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
timeout 60 build-gpu/bin/15_attention_variants > $R/exe15.log 2>&1; echo "exe rc=$?"; tail -3 $R/exe15.log
timeout 200 python3 scripts/anchors/torch_anchors.py $R/anc --only flex --flex-text $R/anc/flex.txt > $R/anc/anchors_flex.log 2>&1
echo "anchors rc=$? at $SECONDS s"; grep flex_bf16 $R/anc/anchors_flex.log | cut -c1-300
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
cp $R/c_build/summary.md $R/summary_build.md; cp $R/c_bench/summary.md $R/summary_bench.md; rm -rf $R/c_build $R/c_bench
tar -czf $O/p1.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
