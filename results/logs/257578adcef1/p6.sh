#!/usr/bin/env bash
# Verification and publication of chapter 12 at 257578adcef1: targeted build of 12+15, tests and sanitizers in two
# parallel lanes, then bench (3 reps), exe, anchors alone.
set -u
export LADDER_COMMIT=257578adcef1 LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R/anc12
pack() { tar -czf $O/p6.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper;15_attention_variants" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 200 cmake --build build-gpu -j 16 --target 12_fa3_hopper_test 12_fa3_hopper_bench 12_fa3_hopper 15_attention_variants_test >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
( timeout 60 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$?" > $R/rc_test12.txt
  timeout 120 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' > $R/san12.log 2>&1; echo "san12 rc=$?" > $R/rc_san12.txt ) &
( timeout 70 $B/15_attention_variants_test --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$?" > $R/rc_test15.txt
  timeout 80 ctest --test-dir build-gpu -L sanitizer -R '^15_attention_variants\.' > $R/san15.log 2>&1; echo "san15 rc=$?" > $R/rc_san15.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt; tail -2 $R/test12.log $R/test15.log; grep -hE "Test +#|tests passed" $R/san12.log $R/san15.log
pack
timeout 200 $B/12_fa3_hopper_bench --benchmark_repetitions=3 --benchmark_out=$R/bench12.json \
  --benchmark_out_format=json > $R/bench_12_fa3_hopper.log 2>&1
echo "bench12 rc=$? at $SECONDS s"; grep -E "^(fp8|fwd|tune:fp8_keys192_persistent)/d=128/N=4096/B=4/H=16/causal=[01]/manual_time_median" $R/bench_12_fa3_hopper.log | sed -E 's/ +.*TFLOP\/s=([0-9.]+).*/ \1/'
pack
timeout 40 $B/12_fa3_hopper > $R/exe12.log 2>&1; echo "exe12 rc=$?"; tail -1 $R/exe12.log
timeout 100 python3 scripts/anchors/torch_anchors.py $R/anc12 --only sdpa,gqa > $R/anc12/anchors.log 2>&1
echo "anchors12 rc=$? at $SECONDS s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
pack
echo "all done at $SECONDS s"
