#!/usr/bin/env bash
# Chapters 01-08 on a GPU: build, GPU tests (exercise solutions and wrong answers included), memcheck.
set -u
O=$1; R=$O/r; mkdir -p $R
L="01_vector_add;02_matmul_naive;03_matmul_tiled;04_online_softmax;05_fa1_forward;06_fa2_forward;07_fa_backward;08_spilling_study"
cmake -S . -B build-g11 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native -DLADDER_ONLY="$L" > $R/build.log 2>&1
timeout 200 cmake --build build-g11 -j 16 >> $R/build.log 2>&1; echo "build rc=$? at $SECONDS s"
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 ctest --test-dir build-g11 -L '^gpu$' -j 8 --output-on-failure > $R/gpu.log 2>&1
echo "gpu rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)" $R/gpu.log
timeout 120 ctest --test-dir build-g11 -L sanitizer -R memcheck -j 8 --output-on-failure > $R/san.log 2>&1
echo "memcheck rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)" $R/san.log
tar -czf $O/g11.tgz -C $O r
