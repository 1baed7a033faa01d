#!/usr/bin/env bash
# Chapter 12's persistent step continued across row tiles (two Q_i buffers; the next tile's S_0 with the
# last P V), A/B against HEAD's kernel files: chapter 15's forward rows (block-sparse sweep, the three
# masks) and chapter 12's persistent, intrawg and FP8 rows, 3 repetitions each; the GPU tests of 12 and 15;
# their sanitizers; and the backward's launches at 10% and dense, one by one (nsys or ncu).
set -u
O=$1; mkdir -p $O
export LADDER_WARMUP_MS=300
mkdir -p /tmp/oldtree
tar --exclude=./build-gpu --exclude=./.git -cf - . | (cd /tmp/oldtree && tar xf -)
cp .run/old/fa3_forward.cuh .run/old/fa3_config.h .run/old/schedule_tool.cpp /tmp/oldtree/12_fa3_hopper/
( cd /tmp/oldtree && cmake -S . -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DLADDER_ONLY="12_fa3_hopper;15_attention_variants" > $O/build_old.log 2>&1 && \
    cmake --build build-old -j 7 --target 12_fa3_hopper_bench 15_attention_variants_bench >> $O/build_old.log 2>&1; \
    echo "old build rc=$?" >> $O/build_old.log ) &
WORK_DIR=/tmp/d1 STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 330 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
wait
echo "builds done at $SECONDS s"; tail -2 $O/build/summary.md; tail -1 $O/build_old.log
B=build-gpu/bin; OB=/tmp/oldtree/build-old/bin
( timeout 150 $B/12_fa3_hopper_test --gtest_brief=1 > $O/test12.log 2>&1; echo "rc=$?" >> $O/test12.log ) &
( timeout 150 $B/15_attention_variants_test --gtest_brief=1 > $O/test15.log 2>&1; echo "rc=$?" >> $O/test15.log )
wait
for c in 12 15; do tail -4 $O/test$c.log; grep -E "^\[  FAILED" $O/test$c.log | head; done
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
ab 12_fa3_hopper_bench '^(step:persistent|step:intrawg|fp8)/d=128/N=(4096|16384)/B=[41]/H=16/causal=0/' 12
echo "bench done at $SECONDS s"
if command -v nsys > /dev/null; then
  for row in bwd:tiles10 bwd:dense fwd:tiles10; do
    timeout 60 nsys profile -o /tmp/ns_$row --force-overwrite true $B/15_attention_variants_bench \
      --benchmark_filter="^$row/" > /dev/null 2>&1
    timeout 60 nsys stats -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum /tmp/ns_$row.nsys-rep > $O/nsys_$row.txt 2>&1
    echo "== $row"; grep -E "Time|kernel|memset|Memset|fa3|process" $O/nsys_$row.txt | cut -c1-200 | head -12
  done
else
  echo "no nsys"
fi
echo "nsys done at $SECONDS s"
timeout 170 ctest --test-dir build-gpu -L sanitizer -R '^(12_fa3_hopper|15_attention_variants)\.' --output-on-failure > $O/san.log 2>&1
echo "san rc=$?"; grep -E "Test +#|tests passed" $O/san.log
rm -rf $O/build
echo "all done at $SECONDS s"
