#!/usr/bin/env bash
# Chapter 12 FP8: turns at the exponentials, A/B against the same tree without them (HEAD's three files).
set -u
O=$1
export LADDER_WARMUP_MS=300
mkdir -p /tmp/oldtree
tar --exclude=./build-gpu --exclude=./.git -cf - . | (cd /tmp/oldtree && tar xf -)
cp .run/old12/attention_rows.cuh /tmp/oldtree/10_fa2_tensor_cores/
cp .run/old12/fa3_forward.cuh .run/old12/fa3_config.h /tmp/oldtree/12_fa3_hopper/
( cd /tmp/oldtree && cmake -S . -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DLADDER_ONLY=12_fa3_hopper > $O/build_old.log 2>&1 && cmake --build build-old -j 8 --target 12_fa3_hopper_bench 12_fa3_hopper \
    >> $O/build_old.log 2>&1; echo "old build rc=$?" >> $O/build_old.log ) &
WORK_DIR=/tmp/y2 STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 300 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
wait
echo "builds done at $SECONDS s"; tail -2 $O/build/summary.md; tail -1 $O/build_old.log
B=build-gpu/bin; OB=/tmp/oldtree/build-old/bin
timeout 200 $B/12_fa3_hopper_test --gtest_brief=1 > $O/test12.log 2>&1; echo "test rc=$?" >> $O/test12.log
tail -3 $O/test12.log; grep -E "^\[  FAILED" $O/test12.log | head -20
echo "tests done at $SECONDS s"
rows='(fp8|tune:fp8_keys128|tune:fp8_poly2|tune:fp8_keys224)'
for shape in 'N=4096/B=4/H=16/causal=0' 'N=4096/B=4/H=16/causal=1' 'N=16384/B=1/H=16/causal=0'; do
  for which in old new; do
    bin=$B; [[ $which == old ]] && bin=$OB
    r=$rows; [[ $which == new ]] && r='(fwd|fp8|tune:fp8_keys128|tune:fp8_poly2|tune:fp8_keys224|anchor:cudnn/fp8)'
    timeout 100 $bin/12_fa3_hopper_bench --benchmark_filter="^$r/d=128/$shape/" --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true > $O/bench_${which}_$(echo $shape | tr '/=' '__').log 2>&1
    grep -E "_median" $O/bench_${which}_$(echo $shape | tr '/=' '__').log | awk -v w=$which '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print w, $1, t}'
  done
done
echo "bench done at $SECONDS s"
M=gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for b in $OB $B; do
  echo "== ncu fp8 192 ($b)"
  timeout 60 ncu --clock-control none --metrics $M --kernel-name regex:fa3_kernel --launch-count 1 $b/12_fa3_hopper \
    --profile fp8 2>&1 | grep -E "duration|pipe|issue|inst_executed|ERR|rror"
done 2>&1 | tee $O/ncu.log
timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^12_fa3_hopper\.' --output-on-failure > $O/san12.log 2>&1
echo "san rc=$?"; grep -E "Test +#|tests passed" $O/san12.log
rm -rf $O/build
echo "all done at $SECONDS s"
