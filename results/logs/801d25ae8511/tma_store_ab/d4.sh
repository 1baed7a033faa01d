#!/usr/bin/env bash
# Chapter 12's persistent epilogue with a TMA store of O (commit LADDER_COMMIT) against e83c4b7's kernel files:
# the GPU tests of 12 and 15, their sanitizers, and A/B of chapter 15's forward rows and chapter 12's persistent
# step (3 repetitions, medians), then Nsight Compute metrics of fwd:tiles10 (both builds) if time is left.
set -u
O=$1; mkdir -p $O
export LADDER_WARMUP_MS=300
mkdir -p /tmp/oldtree
tar --exclude=./build-gpu --exclude=./.git -cf - . | (cd /tmp/oldtree && tar xf -)
cp .run/old/fa3_forward.cuh .run/old/fa3_rows.cuh /tmp/oldtree/12_fa3_hopper/
cp .run/old/hopper.cuh /tmp/oldtree/09_tensor_core_matmul/
( cd /tmp/oldtree && cmake -S . -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DLADDER_ONLY="12_fa3_hopper;15_attention_variants" > $O/build_old.log 2>&1 && \
    cmake --build build-old -j 7 --target 12_fa3_hopper_bench 15_attention_variants_bench >> $O/build_old.log 2>&1; \
    echo "old build rc=$?" >> $O/build_old.log ) &
WORK_DIR=/tmp/d4 STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 330 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
wait
echo "builds done at $SECONDS s"; tail -2 $O/build/summary.md; tail -1 $O/build_old.log
B=build-gpu/bin; OB=/tmp/oldtree/build-old/bin
( timeout 150 $B/12_fa3_hopper_test --gtest_brief=1 > $O/test12.log 2>&1; echo "rc=$?" >> $O/test12.log ) &
( timeout 150 $B/15_attention_variants_test --gtest_brief=1 > $O/test15.log 2>&1; echo "rc=$?" >> $O/test15.log )
wait
for c in 12 15; do echo "$c: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]|^rc=' $O/test$c.log | tr '\n' ' ')"; grep -E "^\[  FAILED  \] [A-Z]" $O/test$c.log | head -5; done
echo "tests done at $SECONDS s"
ab() {  # ab BIN_NAME FILTER TAG
  for which in old new; do
    bin=$B; [[ $which == old ]] && bin=$OB
    timeout 100 $bin/$1 --benchmark_filter="$2" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      > $O/bench_${3}_$which.log 2>&1
    grep -E "_median" $O/bench_${3}_$which.log | awk -v w=$which '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print w, $1, $2, t}'
  done
}
ab 15_attention_variants_bench '^fwd:(tiles10|tiles25|tiles50|dense|window|documents|softcap)/' 15
ab 12_fa3_hopper_bench '^step:persistent/d=(64|128)/N=(4096|16384)/B=[41]/H=16/causal=0/' 12
echo "bench done at $SECONDS s"
timeout 150 ctest --test-dir build-gpu -L sanitizer -R '^(12_fa3_hopper|15_attention_variants)\.' --output-on-failure > $O/san.log 2>&1
echo "san rc=$?"; grep -E "Test +#|tests passed" $O/san.log
if [[ $SECONDS -lt 420 ]]; then
  M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
  for b in $OB $B; do
    echo "== ncu fwd:tiles10 ($b)"
    timeout 30 ncu --clock-control none --metrics $M --kernel-name regex:fa3_kernel --launch-count 1 $b/15_attention_variants_bench \
      --benchmark_filter="^fwd:tiles10/" 2>&1 | grep -E "duration|sm__|smsp__|ERR|rror" | sed -E 's/ +/ /g'
  done 2>&1 | tee $O/ncu.log
fi
cp $O/build/summary.md $O/build_summary.md 2>/dev/null
tar -czf $O/d4.tgz -C $O $(cd $O && ls *.log *.md) 2>/dev/null; rm -rf $O/build $O/*.log $O/*.md
echo "all done at $SECONDS s"
