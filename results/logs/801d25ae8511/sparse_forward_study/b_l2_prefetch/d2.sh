#!/usr/bin/env bash
# Chapter 12's persistent producer prefetches into the L2 the key tile kStages steps ahead and the next row
# tile's Q_i. A/B against HEAD's kernel files: chapter 15's forward rows and chapter 12's persistent rows,
# 3 repetitions each; Nsight Compute metrics of fwd:tiles10 and fwd:dense, both builds; the launches of one
# backward call at 10% and dense (ncu durations); the GPU tests of 12 and 15 and their sanitizers; an FP8
# accuracy case replayed with its seed on both builds.
set -u
O=$1; mkdir -p $O
export LADDER_WARMUP_MS=300
mkdir -p /tmp/oldtree
tar --exclude=./build-gpu --exclude=./.git -cf - . | (cd /tmp/oldtree && tar xf -)
cp .run/old/fa3_forward.cuh /tmp/oldtree/12_fa3_hopper/
cp .run/old/hopper.cuh /tmp/oldtree/09_tensor_core_matmul/
( cd /tmp/oldtree && cmake -S . -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DLADDER_ONLY="12_fa3_hopper;15_attention_variants" > $O/build_old.log 2>&1 && \
    cmake --build build-old -j 7 --target 12_fa3_hopper_bench 15_attention_variants_bench 12_fa3_hopper_test >> $O/build_old.log 2>&1; \
    echo "old build rc=$?" >> $O/build_old.log ) &
WORK_DIR=/tmp/d2 STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 330 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
wait
echo "builds done at $SECONDS s"; tail -2 $O/build/summary.md; tail -1 $O/build_old.log
B=build-gpu/bin; OB=/tmp/oldtree/build-old/bin
( timeout 150 $B/12_fa3_hopper_test --gtest_brief=1 > $O/test12.log 2>&1; echo "rc=$?" >> $O/test12.log ) &
( timeout 150 $B/15_attention_variants_test --gtest_brief=1 > $O/test15.log 2>&1; echo "rc=$?" >> $O/test15.log )
wait
for c in 12 15; do tail -3 $O/test$c.log; grep -E "^\[  FAILED" $O/test$c.log | head; done
echo "tests done at $SECONDS s"
F='KeyTiles/GpuFp8TunedForward.MatchesTheHostModel/keys224_poly0_N17_Nkv17_causal'
for b in $OB $B; do LADDER_SEED=1452979776053594843 LADDER_SMALL=1 $b/12_fa3_hopper_test --gtest_filter="$F" 2>&1 | grep -E "rel_l2|OK|FAILED  \]" | head -3; done > $O/seed.log
cat $O/seed.log
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
M=gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for b in $OB $B; do for row in fwd:tiles10 fwd:dense; do
  echo "== ncu $row ($b)"
  timeout 45 ncu --clock-control none --metrics $M --kernel-name regex:fa3_kernel --launch-count 1 $b/15_attention_variants_bench \
    --benchmark_filter="^$row/" 2>&1 | grep -E "duration|sm__|smsp__|lts__|dram__|ERR|rror" | sed -E 's/ +/ /g'
done; done 2>&1 | tee $O/ncu.log
for row in bwd:tiles10 bwd:dense; do
  echo "== launches of $row"
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --launch-count 12 $B/15_attention_variants_bench \
    --benchmark_filter="^$row/" 2>&1 | grep -E "^  [a-zA-Z_].*\(|duration" | sed -E 's/ +/ /g' | cut -c1-160
done 2>&1 | tee $O/ncu_bwd.log
echo "ncu done at $SECONDS s"
timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^(12_fa3_hopper|15_attention_variants)\.' --output-on-failure > $O/san.log 2>&1
echo "san rc=$?"; grep -E "Test +#|tests passed" $O/san.log
tar -czf $O/logs.tgz -C $O $(cd $O && ls *.log) 2>/dev/null; rm -rf $O/build
echo "all done at $SECONDS s"
