#!/usr/bin/env bash
# FP8's tile policy under FA4's max rule: 128 or 192 keys, intra-warpgroup or persistent, at every d = 128 shape of the
# benchmark (3 repetitions each), with the bf16 rows and cuDNN beside them.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper;15_attention_variants" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 200 cmake --build build-gpu -j 16 --target 12_fa3_hopper_bench >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
F='^(fwd|step:persistent|anchor:cudnn/fwd|fp8|tune:fp8_keys128|tune:fp8_keys128_persistent|tune:fp8_keys192_persistent)/d=128/'
timeout 300 build-gpu/bin/12_fa3_hopper_bench --benchmark_filter="$F" --benchmark_repetitions=3 --benchmark_out=$R/ab12b.json \
  --benchmark_out_format=json > $R/ab12b.log 2>&1
echo "ab12b rc=$? at $SECONDS s"
grep "_median" $R/ab12b.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}' | sed 's|/manual_time_median||;s|/d=128||'
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
tar -czf $O/p2.tgz -C $O r
echo "all done at $SECONDS s"
