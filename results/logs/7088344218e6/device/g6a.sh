#!/usr/bin/env bash
# After the CLI refusals (every executable's main.cpp), the scheduler types of chapter 14 and the
# kernel namespaces of 12 and 14: the whole build for this GPU, every CPU CTest entry (the CLI
# refusals on a machine that has a GPU), then the ladder (every chapter's executable with --summary).
set -u
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/g6a.tgz -C $O r; }
cmake --preset default -B build-gpu -DCMAKE_CUDA_ARCHITECTURES=native \
  -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 330 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log; grep -E "error" $R/build.log | head -5
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/smi.txt 2>&1; cat $R/smi.txt
timeout 120 ctest --test-dir build-gpu -L cpu -j 16 --output-on-failure > $R/ctest_cpu.log 2>&1
echo "ctest cpu rc=$? at $SECONDS s"; grep -E "tests passed|Failed|\(Failed\)" $R/ctest_cpu.log | head -20
pack
timeout 200 cmake --build build-gpu --target ladder > $R/ladder.log 2>&1
echo "ladder rc=$? at $SECONDS s"; grep -E "failed|FAIL|Error|error" $R/ladder.log | head -10
pack
