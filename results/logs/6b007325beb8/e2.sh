#!/usr/bin/env bash
# Chapter 15's publication on e1.sh's build: every bench row (3 repetitions), the executable, FlexAttention's anchors.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R/anc15
pack() { tar -czf $O/e2.tgz -C $O r; }
B=build-gpu/bin
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=14_fa3_backward;15_attention_variants;16_attention_in_a_model" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build_e2.log 2>&1
timeout 260 cmake --build build-gpu -j 16 --target 15_attention_variants_bench 15_attention_variants 14_fa3_backward_bench 14_fa3_backward >> $R/build_e2.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -n 1 $R/build_e2.log
timeout 170 $B/15_attention_variants_bench --benchmark_repetitions=3 --benchmark_out=$R/bench15.json \
  --benchmark_out_format=json > $R/bench_15_attention_variants.log 2>&1
echo "bench15 rc=$? at $SECONDS s"
pack
timeout 45 $B/15_attention_variants > $R/exe15.log 2>&1; echo "exe15 rc=$?"; tail -n 4 $R/exe15.log
timeout 150 python3 scripts/anchors/torch_anchors.py $R/anc15 --only flex --flex-text $R/anc15/flex.txt > $R/anc15/anchors_flex.log 2>&1
echo "anchors15 rc=$? at $SECONDS s"
timeout 30 $B/15_attention_variants --flex $R/anc15/flex.txt > $R/exe15_flex.log 2>&1; echo "exe15 flex rc=$?"; tail -n 2 $R/exe15_flex.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi15.txt 2>&1
pack
echo "all done at $SECONDS s"
