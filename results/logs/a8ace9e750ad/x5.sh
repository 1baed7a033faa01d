#!/usr/bin/env bash
# Chapter 15: the persistent backward with a dynamic scheduler. Build every chapter; chapter 15's sanitizers
# beside every CTest test; 15's benchmarks; 15's executable; FlexAttention's anchors (group flex); then Nsight Compute
# on one launch each of the documents (spans / ids), the window's backward and the sparse tiles.
set -u
O=$1; mkdir -p $O/san $O/anc
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/x5b STAGES="build" timeout 200 scripts/gpu_check.sh $O/c_build > $O/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -3 $O/c_build/summary.md
( timeout 200 ctest --test-dir build-gpu -L sanitizer -R '^15_attention_variants\.' --output-on-failure > $O/san/san15.log 2>&1; echo "ctest rc=$?" >> $O/san/san15.log ) &
WORK_DIR=/tmp/x5t STAGES="test" timeout 240 scripts/gpu_check.sh $O/c_test > $O/c_test.log 2>&1
echo "tests done at $SECONDS s"; tail -2 $O/c_test/summary.md
tar -xzf $O/c_test/evidence.tgz -C $O/c_test logs/test.log 2>/dev/null
grep -hE "^\[  FAILED|tests passed|\*\*\*Failed|Failed  " $O/c_test/logs/test.log | head -20
wait
echo "sanitizers done at $SECONDS s"; grep -hE "Test +#|tests passed|rc=" $O/san/san15.log | tee $O/san15_summary.txt
cp /tmp/x5t/logs/test.log $O/test.log 2>/dev/null; grep -E "tests passed" $O/test.log
WORK_DIR=/tmp/x5c STAGES="bench" BENCH_CHAPTERS='^15_' timeout 200 scripts/gpu_check.sh $O/c_bench > $O/c_bench.log 2>&1
echo "bench done at $SECONDS s"; tail -2 $O/c_bench/summary.md
tar -xzf $O/c_bench/evidence.tgz -C $O/c_bench 2>/dev/null
for f in $(find $O/c_bench -name "*15_attention*.log" | head -1); do
  grep -E "^(fwd|bwd|train|anchor)" $f | sed -E 's/\/manual_time//' | awk '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print $1, $2, t}'
done
cp /tmp/x5c/bench/15_attention_variants.json $O/bench15.json; cp /tmp/x5c/logs/bench_15_attention_variants.log $O/ 2>/dev/null
timeout 60 build-gpu/bin/15_attention_variants > $O/exe15.log 2>&1; echo "exe rc=$?"; tail -3 $O/exe15.log
timeout 150 python3 scripts/anchors/torch_anchors.py $O/anc --only flex --flex-text $O/anc/flex.txt > $O/anc/anchors_flex.log 2>&1
echo "anchors rc=$? at $SECONDS s"; grep flex_bf16 $O/anc/anchors_flex.log | cut -c1-400
B=build-gpu/bin/15_attention_variants_bench
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__inst_executed_op_global_ld.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed
for row in bwd:window bwd:documents bwd:tiles10 bwd:dense; do
  [[ $SECONDS -gt 540 ]] && { echo "ncu: out of time before $row"; break; }
  k=fa3_kernel; [[ $row == bwd:* ]] && k=fa3_bwd_kernel
  echo "== ncu $row"
  timeout 45 ncu --clock-control none --metrics $M --kernel-name regex:"$k" --launch-count 1 $B \
    --benchmark_filter="^$row/" --benchmark_min_time=0.001 2>&1 | grep -E "duration|sm__|smsp__|lts__|dram__|ERR|rror" | sed -E 's/ +/ /g'
done 2>&1 | tee $O/ncu.log
echo "all done at $SECONDS s"
for c in c_build c_test c_bench; do cp $O/$c/summary.md $O/summary_$c.md 2>/dev/null; rm -rf $O/$c; done
