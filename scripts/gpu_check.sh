#!/usr/bin/env bash
# The one script that runs everything on a GPU machine and leaves the evidence in OUTDIR:
#   scripts/gpu_check.sh OUTDIR
# Stages (all by default; pick with STAGES="build test ..."):
#   build      configure + build for this GPU (CMAKE_CUDA_ARCHITECTURES=native) in build-gpu/; with the
#              cuDNN frontend's headers in .deps/cudnn_frontend/include (scripts/fetch_cudnn_frontend.sh)
#              chapters 10 and 12 get their in-process cuDNN anchor
#   timing     scripts/timing_study.sh: what the timing method's warm-up changes, with the SM clock and
#              power sampled beside it (about 40 s) -> OUTDIR/timing/
#   test       every CTest test, CPU and GPU (labels cpu, gpu)
#   sanitizer  every GPU test binary under compute-sanitizer memcheck (+ racecheck for FA chapters), small sizes
#   bench      every chapter benchmark -> OUTDIR/bench/<chapter>.json (Google Benchmark JSON); each
#              benchmark is one ladder::time_gpu call (common/timing.h), as the executables' lines are
#   ladder     the README's "run the ladder" command
#   model      chapter 16's GPT trained and sampled with the ladder's operators and with SDPA
#              (16_attention_in_a_model/run_model.sh; needs .deps/shakespeare) -> OUTDIR/model/
#   ncu        the DRAM-traffic and local-memory studies (ncu --clock-control none) -> OUTDIR/ncu/
#   anchors    PyTorch anchors at the benchmarks' shapes, timed the same way
#              (scripts/anchors/torch_anchors.py) -> anchors.json, anchors2.json
#   accuracy   chapter 07's error vs N against fp64, beside PyTorch fp32 (07_fa_backward/accuracy_vs_n.py)
#   handoff    each .handoff/<NN>/request.sh whose READY exists (work in progress) -> OUTDIR/handoff.tgz
#   results    scripts/results.py: tables and plots from the JSON -> OUTDIR/results/
# Everything is written to a work folder, then packed as OUTDIR/evidence.tgz (bench, ncu, results,
# logs) next to OUTDIR/summary.md: two files, which is what the device tool can bring back.
# Environment: LADDER_ONLY="01_vector_add;..." to build a subset;
#              CTEST_EXCLUDE, a regex of CTest entries to leave out; BENCH_CHAPTERS, a regex of the
#              chapters whose benchmarks run (default: all);
#              LADDER_COMMIT, the commit being measured (recorded in the summary and the benchmark JSON);
#              BUILD_KEEP_GOING=1, build what compiles and go on after a failed build;
#              LADDER_WARMUP_MS, the timing method's warm-up W for every figure of the run (default 1000,
#              common/timing.h; studies only: a published run leaves it unset).
#              Google Benchmark's --benchmark_min_time and --benchmark_min_warmup_time do not apply: the
#              warm-up and the repeats are time_gpu's (BENCH_MIN_TIME and BENCH_WARMUP are gone).
set -uo pipefail
DEST=${1:?usage: scripts/gpu_check.sh OUTDIR}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
OUT=${WORK_DIR:-/tmp/gpu_check}
rm -rf "$OUT"
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build-gpu
STAGES=${STAGES:-build timing test sanitizer bench ladder model ncu anchors accuracy results}
mkdir -p "$OUT"/{logs,bench,ncu,results,accuracy,timing,model}
SUMMARY=$OUT/summary.md
# The device copy of the tree has no .git: the caller passes LADDER_COMMIT (git rev-parse HEAD here).
COMMIT=${LADDER_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
export LADDER_COMMIT=$COMMIT
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
{
  echo "# gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit $COMMIT; GPU: ${GPU:-none}; timing warm-up ${LADDER_WARMUP_MS:-1000 (default)} ms"
  echo
  echo "| stage | status | seconds |"
  echo "| --- | --- | --- |"
} >"$SUMMARY"

run_stage() {  # run_stage NAME CMD...: log to OUTDIR/logs/NAME.log, one summary row
  local name=$1 t0=$SECONDS rc
  shift
  echo "== $name: $*"
  "$@" >"$OUT/logs/$name.log" 2>&1
  rc=$?
  echo "| $name | $([[ $rc == 0 ]] && echo ok || echo "FAILED (rc $rc)") | $((SECONDS - t0)) |" >>"$SUMMARY"
  tail -n 5 "$OUT/logs/$name.log"
  pack  # after every stage: a run stopped at the device's time limit still brings back what it did
  return $rc
}
pack() {
  tar -czf "$DEST/evidence.tgz" --exclude='*.ncu-rep' --exclude='*.npy' --exclude='*.pt' -C "$OUT" \
    logs bench ncu results accuracy timing model \
    $(cd "$OUT" && ls anchors.json anchors2.json 2>/dev/null) 2>/dev/null
  cp "$SUMMARY" "$DEST/summary.md"
}
want() { [[ " $STAGES " == *" $1 "* ]]; }

{ nvidia-smi; nvcc --version; cmake --version; ninja --version; ncu --version; compute-sanitizer --version; } \
  >"$OUT/logs/env.log" 2>&1
for old in BENCH_MIN_TIME BENCH_WARMUP; do
  [[ -n ${!old:-} ]] && echo "gpu_check: $old is no longer used (each benchmark is one ladder::time_gpu call; the" \
    "warm-up is LADDER_WARMUP_MS)" >&2
done

if want build; then
  cudnn_frontend=()
  [[ -d $ROOT/.deps/cudnn_frontend/include ]] && cudnn_frontend=("-DCUDNN_FRONTEND_INCLUDE_DIR=$ROOT/.deps/cudnn_frontend/include")
  run_stage configure cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=native "-DLADDER_ONLY=${LADDER_ONLY:-}" "${cudnn_frontend[@]}"
  # BUILD_KEEP_GOING=1 (development rounds): build every target that compiles (ninja -k 0)
  # and go on, so one chapter's compile error does not cost the other chapters their run.
  if [[ -n ${BUILD_KEEP_GOING:-} ]]; then
    run_stage build cmake --build "$BUILD" -j "$(nproc)" -- -k 0
  else
    run_stage build cmake --build "$BUILD" -j "$(nproc)" || { cat "$SUMMARY"; exit 1; }
  fi
fi
# The study runs first, on a GPU that has been idle: it starts each setting from an idle gap itself.
want timing && [[ -x $BUILD/bin/ladder_timing_study ]] && run_stage timing scripts/timing_study.sh "$OUT/timing" "$BUILD"
# CTEST_EXCLUDE: a regex of tests to leave out (e.g. chapters whose handoff request runs them itself).
exclude=(${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"})
want test && run_stage test ctest --test-dir "$BUILD" -L "cpu|gpu" "${exclude[@]}" -j 8 --output-on-failure --timeout 1200
want sanitizer && run_stage sanitizer ctest --test-dir "$BUILD" -L sanitizer "${exclude[@]}" -j 8 --output-on-failure \
  --timeout 1200
if want bench; then
  for bench in "$BUILD"/bin/*_bench; do
    chapter=$(basename "$bench" _bench)
    [[ -n ${BENCH_CHAPTERS:-} && ! $chapter =~ ${BENCH_CHAPTERS} ]] && continue
    run_stage "bench_$chapter" "$bench" --benchmark_out="$OUT/bench/$chapter.json" --benchmark_out_format=json
  done
fi
want ladder && run_stage ladder cmake --build "$BUILD" --target ladder
want model && [[ -d $BUILD/python/flash_ladder ]] && run_stage model 16_attention_in_a_model/run_model.sh "$BUILD" "$OUT"
if want ncu; then
  [[ -x $BUILD/bin/08_spilling_study ]] &&
    run_stage spill_table "$BUILD/bin/08_spilling_study" --csv "$OUT/ncu/spill_table.csv"
  for script in scripts/ncu_traffic.sh 08_spilling_study/ncu_spill.sh; do
    [[ -x $script ]] && run_stage "ncu_$(basename "$script" .sh)" "$script" "$BUILD" "$OUT/ncu"
  done
fi
want anchors && run_stage anchors env PYTHONUNBUFFERED=1 python3 scripts/anchors/torch_anchors.py "$OUT"
if want accuracy && [[ -x $BUILD/bin/07_fa_backward ]]; then
  run_stage accuracy_dump "$BUILD/bin/07_fa_backward" --d 64 --accuracy 1024,2048,4096,8192,16384,32768 \
    --dump /tmp/ladder_accuracy
  run_stage accuracy env PYTHONUNBUFFERED=1 python3 07_fa_backward/accuracy_vs_n.py /tmp/ladder_accuracy \
    "$OUT/accuracy/07_fa_backward.csv"
  rm -rf /tmp/ladder_accuracy
fi
if want handoff; then
  mkdir -p "$OUT/handoff"
  for ready in .handoff/*/READY; do
    [[ -e $ready ]] || continue
    chapter=$(basename "$(dirname "$ready")")
    mkdir -p "$OUT/handoff/$chapter"
    run_stage "handoff_$chapter" bash ".handoff/$chapter/request.sh" "$BUILD" "$OUT/handoff/$chapter"
    cp "$OUT/logs/handoff_$chapter.log" "$OUT/handoff/$chapter/stage.log"
  done
  tar -czf "$DEST/handoff.tgz" --exclude='*.npy' --exclude='*.ncu-rep' -C "$OUT" handoff
fi
want results && run_stage results python3 scripts/results.py "$OUT" "$OUT/results"

pack
echo
cat "$SUMMARY"
