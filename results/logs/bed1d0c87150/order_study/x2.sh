#!/usr/bin/env bash
# Chapter 15 study (not a publication): what the snake draft and the backward's launch order buy, each against
# its absence in the same build (study_order.patch: STUDY_NO_SNAKE, STUDY_IN_ORDER), alternating A B A B.
set -u
O=$1; mkdir -p $O
export LADDER_WARMUP_MS=300
patch -p1 < .run/study_order.patch > $O/patch.log 2>&1 || { echo "patch failed"; cat $O/patch.log; exit 1; }
WORK_DIR=/tmp/x2b STAGES="build" LADDER_ONLY="15_attention_variants" timeout 200 scripts/gpu_check.sh $O/c_build > $O/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -2 $O/c_build.log
B=build-gpu/bin/15_attention_variants_bench
run() {  # label env filter
  env $2 $B --benchmark_filter="$3" --benchmark_repetitions=2 --benchmark_report_aggregates_only=true 2>&1 |
    grep "_median" | awk -v l="$1" '{for(i=1;i<=NF;i++) if($i ~ /^TFLOP/) t=$i; sub("/manual_time_median","",$1); print l, $1, t}'
}
F='^fwd:(window|documents|softcap|causal|dense|tiles10|tiles25)/'
K='^bwd:(window|documents|tiles10|tiles25)/'
for r in 1 2; do
  run snake X=1 "$F"; run dealt STUDY_NO_SNAKE=1 "$F"
  run longest X=1 "$K"; run in_order STUDY_IN_ORDER=1 "$K"
  echo "round $r done at $SECONDS s"
done 2>&1 | tee $O/ab.log
