#!/usr/bin/env bash
# Chapter 15's block-sparse forward: the tree (A) and A with two Q_i buffers in the persistent step (B).
# Build both; A's GPU tests of 12 and 15 and their sanitizers; A/B of fwd:tiles10, fwd:dense and chapter
# 12's persistent step (3 repetitions); Nsight Compute's samples per SASS instruction of one fwd:tiles10
# launch (A) and one fwd:dense launch; B's tests and sanitizers only if B is faster at 10% by 3% or more.
set -u
O=$1; mkdir -p $O/s
export LADDER_WARMUP_MS=300
mkdir -p /tmp/btree
tar --exclude=./build-gpu --exclude=./.git -cf - . | (cd /tmp/btree && tar xf -)
cp .run/B/fa3_forward.cuh .run/B/fa3_config.h /tmp/btree/12_fa3_hopper/
( cd /tmp/btree && cmake -S . -B build-b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DLADDER_ONLY="12_fa3_hopper;15_attention_variants" > $O/build_b.log 2>&1 && \
    cmake --build build-b -j 7 --target 12_fa3_hopper_bench 15_attention_variants_bench 12_fa3_hopper_test 15_attention_variants_test >> $O/build_b.log 2>&1; \
    echo "B build rc=$?" >> $O/build_b.log ) &
WORK_DIR=/tmp/d3 STAGES="build" LADDER_ONLY="12_fa3_hopper;15_attention_variants" timeout 330 scripts/gpu_check.sh $O/build > $O/build.log 2>&1
wait
echo "builds done at $SECONDS s"; tail -2 $O/build/summary.md; tail -1 $O/build_b.log
A=build-gpu/bin; BB=/tmp/btree/build-b/bin
tests() {  # tests BIN_DIR TAG
  ( timeout 150 $1/12_fa3_hopper_test --gtest_brief=1 > $O/test12_$2.log 2>&1; echo "rc=$?" >> $O/test12_$2.log ) &
  ( timeout 150 $1/15_attention_variants_test --gtest_brief=1 > $O/test15_$2.log 2>&1; echo "rc=$?" >> $O/test15_$2.log )
  wait
  for c in 12 15; do echo "$2 $c: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]|^rc=' $O/test${c}_$2.log | tr '\n' ' ')"; grep -E "^\[  FAILED  \] [A-Z]" $O/test${c}_$2.log | head -5; done
}
tests $A A
echo "tests done at $SECONDS s"
ab() {  # ab BIN_NAME FILTER TAG
  for which in A B; do
    bin=$A; [[ $which == B ]] && bin=$BB
    timeout 100 $bin/$1 --benchmark_filter="$2" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      > $O/bench_${3}_$which.log 2>&1
    grep -E "_median" $O/bench_${3}_$which.log | awk -v w=$which '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; print w, $1, $2, t}'
  done
}
ab 15_attention_variants_bench '^fwd:(tiles10|dense)/' 15 | tee $O/ab15.txt
ab 12_fa3_hopper_bench '^step:persistent/d=128/N=4096/B=4/H=16/causal=0/' 12
echo "bench done at $SECONDS s"
timeout 150 ctest --test-dir build-gpu -L sanitizer -R '^(12_fa3_hopper|15_attention_variants)\.' --output-on-failure > $O/san_A.log 2>&1
echo "san A rc=$?"; grep -E "Test +#|tests passed" $O/san_A.log
for row in fwd:tiles10 fwd:dense; do
  timeout 90 ncu --set full --import-source no --kernel-name regex:fa3_kernel --launch-count 1 -f -o /tmp/r_$row \
    $A/15_attention_variants_bench --benchmark_filter="^$row/" > $O/s/ncu_$row.log 2>&1
  echo "ncu $row rc=$? at $SECONDS s"
  ncu -i /tmp/r_$row.ncu-rep --page source --csv --print-source sass > $O/s/src_$row.csv 2> $O/s/src_$row.err
  ncu -i /tmp/r_$row.ncu-rep --page details --print-details all > $O/s/details_$row.txt 2>&1
  gzip -f $O/s/src_$row.csv $O/s/details_$row.txt
done
cuobjdump -sass $A/../15_attention_variants/CMakeFiles/15_attention_variants_sm90a.dir/flex_forward.cu.o \
  > $O/s/flex_forward.sass 2>&1 || true
gzip -f $O/s/flex_forward.sass
echo "ncu done at $SECONDS s"
a=$(grep "fwd:tiles10" $O/ab15.txt | awk '$1=="A"{sub("TFLOP/s=","",$4); print $4}')
b=$(grep "fwd:tiles10" $O/ab15.txt | awk '$1=="B"{sub("TFLOP/s=","",$4); print $4}')
echo "tiles10 A=$a B=$b"
if python3 -c "import sys; sys.exit(0 if float('$b') >= 1.03 * float('$a') else 1)" 2>/dev/null && [[ $SECONDS -lt 380 ]]; then
  tests $BB B
  ( cd /tmp/btree && LADDER_SMALL=1 timeout 100 compute-sanitizer --tool racecheck build-b/bin/15_attention_variants_test --gtest_filter='Gpu*' > $O/san_B_race15.log 2>&1; echo "rc=$?" >> $O/san_B_race15.log )
  tail -3 $O/san_B_race15.log
fi
tar -czf $O/d3.tgz -C $O $(cd $O && ls *.log *.txt) s 2>/dev/null; rm -rf $O/build $O/s $O/*.log $O/*.txt
echo "all done at $SECONDS s"
