#!/usr/bin/env bash
# A short call (run from the tree's root): 06, 08-11, 13 built (native), their GPU tests (the new
# exercises and single-file kernels), then their other-gpus tests (sm86, sm80 caps) after the fixes.
set -u
O=$1; R=$O/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=05_fa1_forward;06_fa2_forward;08_spilling_study;09_tensor_core_matmul;10_fa2_tensor_cores;11_flash_decoding;13_ring_attention" \
  > $R/build.log 2>&1
timeout 70 cmake --build build-gpu -j 16 -- -k 0 >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; grep -E " error|FAILED:" $R/build.log | head -6
LADDER_SMALL=1 timeout 35 ctest --test-dir build-gpu -L '^gpu$' -j 14 --output-on-failure > $R/ctest_gpu.log 2>&1
echo "ctest gpu (small) rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout" $R/ctest_gpu.log | head -12
LADDER_SMALL=1 timeout 30 ctest --test-dir build-gpu -L other-gpus -j 14 --output-on-failure > $R/ctest_other.log 2>&1
echo "ctest other-gpus (small) rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout" $R/ctest_other.log | head -12
grep -h -E "^\[  FAILED  \]" $R/*.log | sort -u | head -12
