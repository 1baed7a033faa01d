#!/usr/bin/env bash
# bf16 forwards with FA2's exact max (FP8 keeps FA4's rule): chapter 12's and 15's GPU tests and
# sanitizers, flash-attention's accuracy matrix (chapter 16's pytest), chapter 16's gtest; then chapter
# 12's bf16 forward at d128 N4096 beside cuDNN and beside FA4's rule (tune:*_spec), 3 repetitions.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/g3.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=10_fa2_tensor_cores;12_fa3_hopper;14_fa3_backward;15_attention_variants;16_attention_in_a_model" \
  -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 330 cmake --build build-gpu -j 16 --target _C 12_fa3_hopper_test 12_fa3_hopper_bench 15_attention_variants_test \
  16_attention_in_a_model_test >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/smi.txt 2>&1; cat $R/smi.txt
( timeout 240 $B/12_fa3_hopper_test --gtest_filter='Gpu*' --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$?" > $R/rc_test12.txt
  timeout 120 $B/15_attention_variants_test --gtest_filter='Gpu*' --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$?" > $R/rc_test15.txt ) &
( cd 16_attention_in_a_model && PYTHONPATH=../build-gpu/python LADDER_ACCURACY_JSON=$R/accuracy.json \
    timeout 300 python3 -m pytest -q -rs tests > $R/pytest16.log 2>&1; echo "pytest16 rc=$?" > $R/rc_pytest16.txt
  timeout 60 ../$B/16_attention_in_a_model_test > $R/test16.log 2>&1; echo "test16 rc=$?" > $R/rc_test16.txt ) &
( for tool in memcheck synccheck racecheck; do
    LADDER_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 $B/12_fa3_hopper_test \
      --gtest_filter='Gpu*' --gtest_brief=1 > $R/san12_$tool.log 2>&1; echo "san12 $tool rc=$?" >> $R/rc_san.txt
    LADDER_SMALL=1 timeout 120 compute-sanitizer --tool $tool --error-exitcode 1 $B/15_attention_variants_test \
      --gtest_filter='Gpu*' --gtest_brief=1 > $R/san15_$tool.log 2>&1; echo "san15 $tool rc=$?" >> $R/rc_san.txt
  done ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt
tail -n 2 $R/test12.log $R/test15.log $R/pytest16.log
grep -hE "^\[  FAILED|^FAILED|^E  " $R/test12.log $R/test15.log $R/pytest16.log | head -20
pack
timeout 150 $B/12_fa3_hopper_bench --benchmark_repetitions=3 \
  --benchmark_filter='^(fwd|step:intrawg|step:persistent|tune:intrawg_spec|tune:persistent_spec|anchor:cudnn/fwd)/d=128/N=4096/B=4/H=16/' \
  --benchmark_out=$R/bench12.json --benchmark_out_format=json > $R/bench12.log 2>&1
echo "bench12 rc=$? at $SECONDS s"; grep -E "_median" $R/bench12.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}'
pack
