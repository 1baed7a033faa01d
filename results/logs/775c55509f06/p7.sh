#!/usr/bin/env bash
# Verification and chapter 12's publication figures with the speculative max: build 12+15, tests and sanitizers of
# both (two lanes), Nsight Compute on one launch of the FP8 default and of its speculative twin, the executable and
# the SDPA anchors, then every chapter 12 bench row (3 repetitions, medians).
set -u
export LADDER_COMMIT=${LADDER_COMMIT:?} LADDER_WARMUP_MS=300
O=$1; R=$O/r; mkdir -p $R/anc12
pack() { tar -czf $O/p7.tgz -C $O r; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=12_fa3_hopper;15_attention_variants" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build.log 2>&1
timeout 200 cmake --build build-gpu -j 16 >> $R/build.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -1 $R/build.log
B=build-gpu/bin
( timeout 90 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "test12 rc=$?" > $R/rc_test12.txt
  timeout 150 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' > $R/san12.log 2>&1; echo "san12 rc=$?" > $R/rc_san12.txt ) &
( timeout 90 $B/15_attention_variants_test --gtest_brief=1 > $R/test15.log 2>&1; echo "test15 rc=$?" > $R/rc_test15.txt
  timeout 100 ctest --test-dir build-gpu -L sanitizer -R '^15_attention_variants\.' > $R/san15.log 2>&1; echo "san15 rc=$?" > $R/rc_san15.txt ) &
wait
echo "checks done at $SECONDS s"; cat $R/rc_*.txt; tail -n 3 $R/test12.log $R/test15.log; grep -hE "Test +#|tests passed" $R/san12.log $R/san15.log
pack
M="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats"
timeout 45 ncu --clock-control none $M --page details --print-details all -k regex:fa3_kernel -c 1 \
  $B/12_fa3_hopper --profile fp8 > $R/ncu_fp8.log 2>&1; echo "ncu fp8 rc=$?"
timeout 45 ncu --clock-control none $M --page details --print-details all -k regex:fa3_kernel -c 1 \
  $B/12_fa3_hopper --profile fp8 --speculative-max > $R/ncu_fp8_spec.log 2>&1; echo "ncu fp8_spec rc=$? at $SECONDS s"
grep -E "Duration|Issue Slots Busy|Pipe Tensor|Pipe Xu|Warp Cycles Per Issued" $R/ncu_fp8.log $R/ncu_fp8_spec.log | head -20
timeout 40 $B/12_fa3_hopper > $R/exe12.log 2>&1; echo "exe12 rc=$?"; tail -n 1 $R/exe12.log
timeout 100 python3 scripts/anchors/torch_anchors.py $R/anc12 --only sdpa,gqa > $R/anc12/anchors.log 2>&1
echo "anchors12 rc=$? at $SECONDS s"
pack
timeout 260 $B/12_fa3_hopper_bench --benchmark_repetitions=3 --benchmark_out=$R/bench12.json \
  --benchmark_out_format=json > $R/bench_12_fa3_hopper.log 2>&1
echo "bench12 rc=$? at $SECONDS s"
grep "_median" $R/bench_12_fa3_hopper.log | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, t}' | sed 's|/manual_time_median||' | grep -E "^(fwd|fp8|anchor:cudnn/f|tune:(fp8_keys128.*|intrawg_spec|persistent_spec|persistent_eager))/d=128/N=4096/B=4/H=16/"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi.txt 2>&1
pack
echo "all done at $SECONDS s"
