#!/usr/bin/env bash
# Verification of the new pre- and post-processing: build 14, 15, 16; the GPU tests and the sanitizers of 14 and 15;
# then a first look at the timings (chapter 14's part rows and bwd, chapter 15's backward rows).
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/e1.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=14_fa3_backward;15_attention_variants;16_attention_in_a_model" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 260 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
( timeout 120 $B/14_fa3_backward_test --gtest_brief=1 > $R/test14.log 2>&1; echo "test14 rc=$?" > $R/rc_test14.txt
  timeout 120 $B/15_attention_variants_test --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$?" > $R/rc_test15.txt
  timeout 200 ctest --test-dir build-gpu -R '^(16_attention_in_a_model\.|14_fa3_backward\.(cpu|cli))' > $R/ctest_16.log 2>&1
  echo "ctest16 rc=$?" > $R/rc_ctest16.txt ) &
( timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^(14_fa3_backward|15_attention_variants)\.' > $R/san.log 2>&1; echo "san rc=$?" > $R/rc_san.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt; tail -n 3 $R/test14.log $R/test15.log; grep -hE "Test +#|tests passed" $R/san.log $R/ctest_16.log
grep -hE "FAILED|Failure" $R/test14.log $R/test15.log | head
pack
timeout 90 $B/14_fa3_backward_bench --benchmark_filter='^(part:.*|bwd)/d=128/N=4096/B=4/H=16/' > $R/bench14_part.log 2>&1
echo "bench14 rc=$? at $SECONDS s"
grep -E "^(part|bwd)" $R/bench14_part.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, $2, $3, t}'
timeout 90 $B/15_attention_variants_bench --benchmark_filter='^bwd:(window|dense|tiles10)/' > $R/bench15_bwd.log 2>&1
echo "bench15 rc=$? at $SECONDS s"
grep -E "^bwd" $R/bench15_bwd.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, $2, $3, t}'
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
pack
echo "all done at $SECONDS s"
