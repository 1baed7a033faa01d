#!/usr/bin/env bash
# FA4's max rule: build 12+15, tests and sanitizers of both (two lanes), then the A/B rows (FA4's rule, the
# default, against FA2's, eager_rescale) at B4 H16 N4096, 3 repetitions each.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/p1.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper;15_attention_variants" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 260 cmake --build build-gpu -j 16 --target 12_fa3_hopper_test 12_fa3_hopper_bench 12_fa3_hopper \
  15_attention_variants_test 15_attention_variants_bench 15_attention_variants >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
( timeout 90 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$?" > $R/rc_test12.txt
  timeout 150 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' > $R/san12.log 2>&1; echo "san12 rc=$?" > $R/rc_san12.txt ) &
( timeout 90 $B/15_attention_variants_test --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$?" > $R/rc_test15.txt
  timeout 100 ctest --test-dir build-gpu -L sanitizer -R '^15_attention_variants\.' > $R/san15.log 2>&1; echo "san15 rc=$?" > $R/rc_san15.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt; tail -2 $R/test12.log $R/test15.log; grep -hE "Test +#|tests passed" $R/san12.log $R/san15.log
pack
F='^(fwd|step:persistent|tune:intrawg_eager|tune:persistent_eager|anchor:cudnn/fwd|fp8|anchor:cudnn/fp8|tune:fp8_keys128|tune:fp8_keys128_eager|tune:fp8_keys192_eager|tune:fp8_keys192_persistent|tune:fp8_keys192_persistent_eager)/d=(64|128)/N=4096/B=4/H=16/causal=[01]'
timeout 200 $B/12_fa3_hopper_bench --benchmark_filter="$F" --benchmark_repetitions=3 --benchmark_out=$R/ab12.json \
  --benchmark_out_format=json > $R/ab12.log 2>&1
echo "ab12 rc=$? at $SECONDS s"
grep "_median" $R/ab12.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}' | sed 's|/manual_time_median||'
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
pack
echo "all done at $SECONDS s"
