#!/usr/bin/env bash
# A short check on a GPU: chapters 12, 14 and 15's
# GPU tests in small mode (LADDER_SMALL=1, the sanitizer sizes) on the last commit's build.
set -u
O=$1; R=$O/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper;14_fa3_backward;15_attention_variants" > $R/build.log 2>&1
timeout 100 cmake --build build-gpu -j 16 --target 12_fa3_hopper_test 14_fa3_backward_test 15_attention_variants_test \
  >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; nvidia-smi --query-gpu=name --format=csv,noheader
for t in 12_fa3_hopper 14_fa3_backward 15_attention_variants; do
  ( LADDER_SMALL=1 timeout 40 build-gpu/bin/${t}_test --gtest_filter='Gpu*' --gtest_brief=1 > $R/$t.log 2>&1
    echo "$t rc=$?" > $R/rc_$t.txt ) &
done
wait; cat $R/rc_*.txt; tail -n 1 $R/*.log
