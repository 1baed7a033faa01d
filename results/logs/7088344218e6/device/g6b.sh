#!/usr/bin/env bash
# The GPU tests of chapters 12, 14, 15 and 16 and the sanitizers of 14 and 15 on the build of g6a.sh.
set -u
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/g6b.tgz -C $O r; }
timeout 300 ctest --test-dir build-gpu -L gpu -R '^(12_fa3_hopper|14_fa3_backward|15_attention_variants|16_attention_in_a_model)\.' \
  -j 4 --output-on-failure > $R/ctest_gpu.log 2>&1
echo "ctest gpu rc=$? at $SECONDS s"; grep -E "tests passed|Failed|\(Failed\)|Passed" $R/ctest_gpu.log | head -20
pack
timeout 270 ctest --test-dir build-gpu -L sanitizer -R '^(14_fa3_backward|15_attention_variants)\.' -j 6 \
  --output-on-failure > $R/ctest_san.log 2>&1
echo "ctest sanitizer rc=$? at $SECONDS s"; grep -E "tests passed|Failed|\(Failed\)|Passed|Timeout" $R/ctest_san.log | head -20
pack
