#!/usr/bin/env bash
# Chapters 14 and 16 at this commit: they call chapter 12's bf16 forward. Build 12, 14, 15, 16 (chapter 16's Python
# module too), then every CTest entry of 14 and 16 (cpu, gpu, cli, memcheck/racecheck/synccheck, pytest).
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?}
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/v3.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=14_fa3_backward;16_attention_in_a_model" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 200 cmake --build build-gpu -j 16 --target 14_fa3_backward_test 14_fa3_backward 16_attention_in_a_model_test _C >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
pack
timeout 150 ctest --test-dir build-gpu -j 2 -R '^(14_fa3_backward|16_attention_in_a_model)\.' -V > $R/ctest_14_16.log 2>&1
echo "ctest rc=$? at $SECONDS s"; grep -E "Test +#|tests passed|tests failed" $R/ctest_14_16.log
grep -E "passed|skipped|PASSED|SKIPPED" $R/ctest_14_16.log | grep -vE "^[0-9]+/[0-9]+ Test" | tail -n 12
pack
echo "all done at $SECONDS s"
