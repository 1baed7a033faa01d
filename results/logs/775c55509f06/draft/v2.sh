#!/usr/bin/env bash
# Build 12, 14, 15, 16; chapter 12's and 15's tests (the speculative max's included) and chapter 12's sanitizers
# beside every CTest entry of 14 and 16 (they call chapter 12's bf16 forward, under FA4's max rule since
# 508bc3700d1f); then an A/B of the speculative max at d = 128 (3 repetitions, medians).
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/v2.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=14_fa3_backward;15_attention_variants;16_attention_in_a_model" \
  -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 300 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log; grep -c C751 $R/build.log
B=build-gpu/bin
( timeout 100 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$?" > $R/rc_test12.txt
  timeout 100 $B/15_attention_variants_test --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$?" > $R/rc_test15.txt
  timeout 150 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' > $R/san12.log 2>&1; echo "san12 rc=$?" > $R/rc_san12.txt ) &
( timeout 280 ctest --test-dir build-gpu -j 2 -R '^(14_fa3_backward|16_attention_in_a_model)\.' --output-on-failure \
    > $R/ctest_14_16.log 2>&1; echo "ctest14_16 rc=$?" > $R/rc_ctest14_16.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt; tail -n 3 $R/test12.log $R/test15.log
grep -hE "Test +#|tests passed|tests failed" $R/san12.log $R/ctest_14_16.log
pack
F='^(fwd|step:intrawg|step:persistent|tune:intrawg_spec|tune:persistent_spec|fp8|tune:fp8_keys128|tune:fp8_keys128_spec|tune:fp8_keys128_persistent|tune:fp8_keys128_persistent_spec)/d=128/'
timeout 200 $B/12_fa3_hopper_bench --benchmark_filter="$F" --benchmark_repetitions=3 --benchmark_out=$R/ab.json \
  --benchmark_out_format=json > $R/ab.log 2>&1
echo "ab rc=$? at $SECONDS s"
grep "_median" $R/ab.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}' | sed 's|/manual_time_median||'
pack
echo "all done at $SECONDS s"
