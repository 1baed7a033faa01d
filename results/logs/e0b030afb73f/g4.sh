#!/usr/bin/env bash
# Chapter 12's GPU tests and its three sanitizers after the speculative-max test's change; chapter
# 15's broadcast test at full size with each output's error against fp64, and its sanitizers.
set -u
O=$1; R=$O/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=10_fa2_tensor_cores;12_fa3_hopper;14_fa3_backward;15_attention_variants" > $R/build.log 2>&1
timeout 330 cmake --build build-gpu -j 16 --target 12_fa3_hopper_test 15_attention_variants_test >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/smi.txt 2>&1; cat $R/smi.txt
( timeout 240 $B/12_fa3_hopper_test --gtest_filter='Gpu*' --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$?" > $R/rc_test12.txt
  timeout 120 $B/15_attention_variants_test --gtest_filter='GpuFlex.BlockMasksSharedOverEitherExtent' > $R/test15.log 2>&1
  echo "test15 rc=$?" > $R/rc_test15.txt ) &
( for tool in memcheck synccheck racecheck; do
    LADDER_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 $B/12_fa3_hopper_test \
      --gtest_filter='Gpu*' --gtest_brief=1 > $R/san12_$tool.log 2>&1; echo "san12 $tool rc=$?" >> $R/rc_san.txt
  done
  LADDER_SMALL=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 $B/15_attention_variants_test \
    --gtest_filter='GpuFlex.BlockMasks*' > $R/san15_memcheck.log 2>&1; echo "san15 memcheck rc=$?" >> $R/rc_san.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt
tail -n 3 $R/test12.log; grep -E "rel_l2" $R/test15.log
for f in $R/san12_*.log; do echo "$f"; grep -E "ERROR SUMMARY|FAILED|PASSED" $f | head -5; done
