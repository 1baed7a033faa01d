#!/usr/bin/env bash
# Chapter 14's publication on e1.sh's build: every bench row (one time_gpu call each, as before), the executable,
# the SDPA anchors (groups sdpa, gqa) for its "cuDNN two ways" table.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R/anc14
pack() { tar -czf $O/e3.tgz -C $O r; }
B=build-gpu/bin
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=14_fa3_backward;15_attention_variants;16_attention_in_a_model" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build_e3.log 2>&1
timeout 260 cmake --build build-gpu -j 16 --target 14_fa3_backward_bench 14_fa3_backward >> $R/build_e3.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -n 1 $R/build_e3.log
timeout 230 $B/14_fa3_backward_bench --benchmark_out=$R/bench14.json --benchmark_out_format=json > $R/bench_14_fa3_backward.log 2>&1
echo "bench14 rc=$? at $SECONDS s"
pack
timeout 60 $B/14_fa3_backward > $R/exe14.log 2>&1; echo "exe14 rc=$?"; tail -n 2 $R/exe14.log
timeout 150 python3 scripts/anchors/torch_anchors.py $R/anc14 --only sdpa,gqa > $R/anc14/anchors.log 2>&1
echo "anchors14 rc=$? at $SECONDS s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi14.txt 2>&1
pack
echo "all done at $SECONDS s"
