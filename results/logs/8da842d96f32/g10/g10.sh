#!/usr/bin/env bash
# The learner-GPU work on a GPU (run from the tree's root), in calls on one warm machine:
#   g10.sh OUT build   the whole build (native, cuDNN anchor); every GPU test of 01-16; then the
#                      other-gpus tests (01-11, 13, 16 under the sm86 and sm80 caps)
#   g10.sh OUT san     memcheck and racecheck of 06, 07 and 10's GPU tests under the sm86 cap
#                      (the smaller tiles' kernels), small sizes; the fallback lines the launchers print
#   g10.sh OUT t4      an sm_75 build of 01-06 and 08 (JIT from PTX here), its GPU tests under the sm75 cap
#   g10.sh OUT bench   the fallback configurations' throughput: 06, 07, 10, 11's benchmarks under sm86
set -u
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/g10_$1.tgz -C $O r; }
case $2 in
build)
  cmake --preset default -B build-gpu -DCMAKE_CUDA_ARCHITECTURES=native \
    -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
  timeout 330 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
  echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log; grep -E " error" $R/build.log | head -5
  nvidia-smi --query-gpu=name,driver_version --format=csv > $R/smi.txt 2>&1; cat $R/smi.txt
  timeout 150 ctest --test-dir build-gpu -L '^gpu$' -E '^(12|14|15)_' -j 8 --output-on-failure > $R/ctest_gpu.log 2>&1
  echo "ctest gpu (not 12, 14, 15) rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout" $R/ctest_gpu.log | head -20
  timeout 100 ctest --test-dir build-gpu -L other-gpus -j 8 --output-on-failure > $R/ctest_other.log 2>&1
  echo "ctest other-gpus rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout" $R/ctest_other.log | head -30
  pack build ;;
gpu1215)
  timeout 200 ctest --test-dir build-gpu -L '^gpu$' -R '^(12|14|15)_' -j 6 --output-on-failure > $R/ctest_gpu1215.log 2>&1
  echo "ctest gpu 12 14 15 rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout" $R/ctest_gpu1215.log | head
  pack gpu1215 ;;
san)
  for t in 06_fa2_forward 07_fa_backward 10_fa2_tensor_cores; do
    for tool in memcheck racecheck; do
      ( LADDER_DEVICE_LIMITS=sm86 LADDER_SMALL=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 1 \
          build-gpu/bin/${t}_test --gtest_filter='Gpu*:*/Gpu*' > $R/san_${t}_$tool.log 2>&1
        echo "$t $tool rc=$?" > $R/rc_${t}_$tool.txt ) &
    done
  done
  wait; cat $R/rc_*.txt; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/san_*.log | sort | uniq -c
  grep -h "instead" $R/san_*.log | sort -u | head
  pack san ;;
t4)
  cmake -S . -B build-sm75 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=75 > $R/build75.log 2>&1
  grep "leaving out" $R/build75.log
  timeout 250 cmake --build build-sm75 -j 16 >> $R/build75.log 2>&1; echo "sm75 build rc=$?"
  LADDER_DEVICE_LIMITS=sm75 timeout 200 ctest --test-dir build-sm75 -L '^gpu$' -j 8 --output-on-failure > $R/ctest75.log 2>&1
  echo "sm75 ctest rc=$? at $SECONDS s"; grep -E "tests passed|\(Failed\)|Timeout" $R/ctest75.log | head
  pack t4 ;;
bench)
  mkdir -p $R/bench
  for t in 06_fa2_forward 07_fa_backward 10_fa2_tensor_cores 11_flash_decoding; do
    LADDER_DEVICE_LIMITS=sm86 timeout 120 build-gpu/bin/${t}_bench --benchmark_out=$R/bench/${t}.sm86.json \
      --benchmark_out_format=json > $R/bench/${t}.sm86.log 2>&1; echo "$t bench rc=$?"
  done
  pack bench ;;
esac
