#!/usr/bin/env bash
# Correctness checks: build 10, 12, 14, 15, 16; chapter 15's GPU tests and sanitizers (the block masks
# shared over one extent); chapter 16's gtest and pytest, flash-attention's accuracy matrix among them.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?}
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/g1.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=10_fa2_tensor_cores;12_fa3_hopper;14_fa3_backward;15_attention_variants;16_attention_in_a_model" > $R/build.log 2>&1
timeout 330 cmake --build build-gpu -j 16 --target 15_attention_variants_test 15_attention_variants_bench \
  16_attention_in_a_model_test _C 12_fa3_hopper_bench >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/smi.txt 2>&1
( timeout 150 $B/15_attention_variants_test --gtest_filter='Gpu*' --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$?" > $R/rc_test15.txt
  timeout 60 $B/16_attention_in_a_model_test > $R/test16.log 2>&1; echo "test16 rc=$?" > $R/rc_test16.txt
  cd 16_attention_in_a_model && PYTHONPATH=../build-gpu/python LADDER_ACCURACY_JSON=$R/accuracy.json \
    timeout 330 python3 -m pytest -q -rs tests > $R/pytest16.log 2>&1; echo "pytest16 rc=$?" > $R/rc_pytest16.txt ) &
( for tool in memcheck racecheck synccheck; do
    LADDER_SMALL=1 timeout 240 compute-sanitizer --tool $tool --error-exitcode 1 $B/15_attention_variants_test \
      --gtest_filter='Gpu*' --gtest_brief=1 > $R/san15_$tool.log 2>&1; echo "san15 $tool rc=$?" >> $R/rc_san.txt
  done
  LADDER_SMALL=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 $B/16_attention_in_a_model_test \
    --gtest_filter='Gpu*' > $R/san16_memcheck.log 2>&1; echo "san16 memcheck rc=$?" >> $R/rc_san.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt
tail -n 3 $R/test15.log $R/pytest16.log
grep -hE "FAILED|Failure|failed" $R/test15.log $R/pytest16.log | head -30
pack
