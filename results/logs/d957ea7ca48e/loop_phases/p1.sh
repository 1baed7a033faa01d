#!/usr/bin/env bash
set -u
O=$1; R=$O/r; mkdir -p $R
WORK_DIR=/tmp/p1b STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 240 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $R/c_build/summary.md; rm -rf $R/c_build
bash .run/trace/build.sh build-gpu > $R/trace_build.log 2>&1; echo "trace build rc=$? at $SECONDS s"; tail -3 $R/trace_build.log
for m in fp8_192 fp8_128 bf16; do
  timeout 60 build-gpu/bin/fa3_trace $m $R/trace_$m.csv > $R/run_$m.log 2>&1; echo "$m rc=$?"
  python3 .run/trace/analyze.py $R/trace_$m.csv > $R/phases_$m.txt 2>&1; cat $R/phases_$m.txt
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/smi.txt 2>&1
gzip $R/*.csv
tar -czf $O/p1.tgz -C $O r && rm -rf $R
echo "all done at $SECONDS s"
