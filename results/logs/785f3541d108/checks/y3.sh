#!/usr/bin/env bash
# Chapter 12 FP8 with turns at the exponentials: build, chapter 12's tests, its sanitizer entries (racecheck first on
# one FP8 case), Nsight Compute (details of intrawg and fp8 at 128 keys; per-instruction samples of fp8 at 192).
set -u
O=$1; R=$O/r; mkdir -p $R
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/y3b STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 240 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $R/c_build/summary.md; cp $R/c_build/summary.md $R/summary_build.md; rm -rf $R/c_build
B=build-gpu/bin
timeout 120 $B/12_fa3_hopper_test --gtest_brief=1 > $R/test12.log 2>&1; echo "test rc=$?" >> $R/test12.log
tail -3 $R/test12.log; grep -E "^\[  FAILED" $R/test12.log | head
echo "tests done at $SECONDS s"
LADDER_SMALL=1 timeout 90 compute-sanitizer --tool racecheck --kernel-name kns=fa3_kernel $B/12_fa3_hopper_test \
  --gtest_filter='GpuFp8TunedForward*keys192_poly0_N17_Nkv17' > $R/racecheck_one.log 2>&1
echo "racecheck one case rc=$? at $SECONDS s"; tail -4 $R/racecheck_one.log
timeout 270 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' --output-on-failure > $R/san12.log 2>&1
echo "sanitizers rc=$? at $SECONDS s"; grep -E "Test +#|tests passed" $R/san12.log
mkdir -p $R/ncu12
M="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats"
[[ $SECONDS -lt 540 ]] && timeout 40 ncu --clock-control none $M --page details --print-details all -k regex:fa3_kernel -c 1 \
  $B/12_fa3_hopper --profile fp8 --key-tile 128 > $R/ncu12/ncu_fp8.log 2>&1
[[ $SECONDS -lt 555 ]] && timeout 40 ncu --clock-control none $M --page details --print-details all -k regex:fa3_kernel -c 1 \
  $B/12_fa3_hopper --profile intrawg > $R/ncu12/ncu_intrawg.log 2>&1
echo "ncu done at $SECONDS s"; grep -E "Duration|Issue Slots Busy" $R/ncu12/ncu_*.log | head
tar -czf $O/y3.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
