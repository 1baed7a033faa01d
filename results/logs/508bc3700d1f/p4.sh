#!/usr/bin/env bash
# Chapter 15's publication figures (every bench row, 3 repetitions; the executable; FlexAttention anchors) and chapter
# 12's FP8 accuracy study, on the build p3.sh left.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R/anc15
pack() { tar -czf $O/p4.tgz -C $O r; }
B=build-gpu/bin
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper;15_attention_variants" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 200 cmake --build build-gpu -j 16 --target 15_attention_variants_bench 15_attention_variants \
  12_fa3_hopper_fp8_study >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -n 1 $R/build.log
timeout 150 $B/15_attention_variants_bench --benchmark_repetitions=3 --benchmark_out=$R/bench15.json \
  --benchmark_out_format=json > $R/bench_15_attention_variants.log 2>&1
echo "bench15 rc=$? at $SECONDS s"
timeout 40 $B/15_attention_variants > $R/exe15.log 2>&1; echo "exe15 rc=$?"; tail -n 1 $R/exe15.log
pack
timeout 130 python3 scripts/anchors/torch_anchors.py $R/anc15 --only flex --flex-text $R/anc15/flex.txt > $R/anc15/anchors_flex.log 2>&1
echo "anchors15 rc=$? at $SECONDS s"
pack
timeout 170 $B/12_fa3_hopper_fp8_study --csv $R/fp8.csv > $R/fp8_study.log 2>&1; echo "fp8_study rc=$? at $SECONDS s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi15.txt 2>&1
pack
echo "all done at $SECONDS s"
