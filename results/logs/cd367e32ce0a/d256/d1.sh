#!/usr/bin/env bash
# FP8 at d = 256: build chapter 12, its tests and sanitizers (the D256 cases run in small mode under
# compute-sanitizer), then the d = 256 bench rows (3 repetitions) and Nsight Compute on one launch.
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R
pack() { tar -czf $O/d1.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 220 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
( timeout 150 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$?" > $R/rc_test12.txt ) &
( timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' > $R/san12.log 2>&1; echo "san12 rc=$?" > $R/rc_san12.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt; tail -n 4 $R/test12.log; grep -hE "Test +#|tests passed" $R/san12.log
grep -E "FAILED|Failure" $R/test12.log | head -20
pack
timeout 150 $B/12_fa3_hopper_bench --benchmark_filter='d=256' --benchmark_repetitions=3 --benchmark_out=$R/bench256.json \
  --benchmark_out_format=json > $R/bench256.log 2>&1
echo "bench256 rc=$? at $SECONDS s"
grep "_median" $R/bench256.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}' | sed 's|/manual_time_median||'
grep -i "error\|skip" $R/bench256.log | head -5
pack
timeout 100 $B/12_fa3_hopper_fp8_study --d 256 --Ns 1024,4096,16384 --rows 64 --csv $R/fp8_study_d256.csv \
  > $R/fp8_study_d256.log 2>&1; echo "study rc=$? at $SECONDS s"; head -n 8 $R/fp8_study_d256.log
M="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats"
timeout 60 ncu --clock-control none $M --page details --print-details all -k regex:fa3_kernel -c 1 \
  $B/12_fa3_hopper --profile fp8 --B 4 --H 8 --d 256 > $R/ncu_fp8_d256.log 2>&1; echo "ncu rc=$? at $SECONDS s"
grep -E "Duration|Issue Slots Busy|Pipe Tensor|Pipe Xu|Warp Cycles Per Issued" $R/ncu_fp8_d256.log | head
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
pack
echo "all done at $SECONDS s"
