#!/usr/bin/env bash
# flash-attention's accuracy matrix over chapters 10, 12 (every step, FA2's and FA4's max rules) and 14,
# the chapter-10 workspace mended (bindings); then chapter 12's bf16 forward at d128 N4096 with either
# max rule beside cuDNN, 3 repetitions; on an H200 also chapter 15's forward rows (the walk changed).
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/g2.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=10_fa2_tensor_cores;12_fa3_hopper;14_fa3_backward;15_attention_variants;16_attention_in_a_model" \
  -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 300 cmake --build build-gpu -j 16 --target _C 12_fa3_hopper_bench 15_attention_variants_bench >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/smi.txt 2>&1; cat $R/smi.txt
( cd 16_attention_in_a_model && PYTHONPATH=../build-gpu/python LADDER_ACCURACY_JSON=$R/accuracy.json \
    timeout 200 python3 -m pytest -q -rs tests/test_chapters_accuracy.py > $R/accuracy.log 2>&1; echo "accuracy rc=$?" )
tail -n 2 $R/accuracy.log; echo "at $SECONDS s"
pack
timeout 150 $B/12_fa3_hopper_bench --benchmark_repetitions=3 \
  --benchmark_filter='^(fwd|step:intrawg|step:persistent|tune:intrawg_eager|tune:persistent_eager|anchor:cudnn/fwd)/d=128/N=4096/B=4/H=16/' \
  --benchmark_out=$R/bench12.json --benchmark_out_format=json > $R/bench12.log 2>&1
echo "bench12 rc=$? at $SECONDS s"; grep -E "_median" $R/bench12.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
pack
if grep -q H200 $R/smi.txt; then
  timeout 150 $B/15_attention_variants_bench --benchmark_repetitions=3 --benchmark_filter='^fwd:' \
    --benchmark_out=$R/bench15.json --benchmark_out_format=json > $R/bench15.log 2>&1
  echo "bench15 rc=$? at $SECONDS s"; grep -E "_median" $R/bench15.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
fi
pack
