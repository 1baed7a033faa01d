#!/usr/bin/env bash
# Chapter 13 on the 2-GPU machine (nvidia-h200-x2): everything that needs two real ranks, in one command.
#   13_ring_attention/run_two_gpu.sh OUT [BUILD_DIR]     (from the repo root; BUILD_DIR default: build)
# Expected ~3 minutes of GPU time (the 1M-token run alone: ~4 s forward + ~10 s backward per GPU).
# Writes, for scripts/results.py:
#   OUT/bench/13_ring_attention.summary.json   {"fwd_eff", "fwdbwd_eff", "causal_zigzag_eff"} (merged
#                                              into results/summary.json as it is)
#   OUT/bench/13_ring_attention.json           Google Benchmark JSON (ring vs one GPU, both transports)
#   OUT/ring_nccl.csv                          every timed row (weak scaling, overlap runs, 1M run)
#   OUT/timeline_nccl.csv                      per-rank, per-step compute / add / K-V / dK-dV intervals
#   (then: python3 13_ring_attention/results_tables.py OUT --readme 13_ring_attention/README.md fills the
#   README's :nccl block and draws figures/timeline_nccl.png)
#   OUT/*.log                                  tests, executable, nsys summary
# Each step is logged and time-limited; a failing step does not stop the others.
set -uo pipefail
OUT=${1:?usage: run_two_gpu.sh OUT [BUILD_DIR]}
BUILD=${2:-build}
mkdir -p "$OUT/bench"
OUT=$(cd "$OUT" && pwd)
BIN=$(cd "$BUILD" && pwd)/bin
T0=$SECONDS
step() {  # step NAME TIMEOUT_S CMD...
  local name=$1 limit=$2 t=$SECONDS rc
  shift 2
  echo "== [$name] $*" | tee -a "$OUT/steps.log"
  timeout -k 5 "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  echo "== [$name] rc=$rc, $((SECONDS - t)) s (total $((SECONDS - T0)) s)" | tee -a "$OUT/steps.log"
  tail -n 4 "$OUT/$name.log"
}
nvidia-smi topo -m >"$OUT/env.log" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$OUT/env.log" 2>&1
ldconfig -p | grep -i nccl >>"$OUT/env.log" 2>&1
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${LADDER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
} >>"$OUT/env.log"
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
if [[ $GPUS -lt 2 ]]; then
  echo "only $GPUS GPU(s): this script is for the 2-GPU machine (blocked)" | tee -a "$OUT/steps.log"
  exit 2
fi
export NCCL_NVLS_ENABLE=0  # no NVLink multicast (the machine notes say why)

# 1. The GPU tests, now with the NCCL ring test running (P = 2, plain/zigzag, dense/causal vs fp64).
step tests 120 "$BIN/13_ring_attention_test" --gtest_filter='Gpu*:*/Gpu*' --gtest_brief=1
# 2. Weak scaling, 2 x 65536 tokens, B=1 H=8 d=128: dense plain (the headline), causal zigzag, causal plain;
#    overlap at 2 x 8192 (both / compute only / comm only, and from the timeline); then one causal zigzag
#    run of 2^20 tokens in all, forward and backward, timed once.
step weak 420 "$BIN/13_ring_attention" --P 2 --transport nccl --N 131072 --weak --repeats 5 --million 1048576 \
  --csv "$OUT/ring_nccl.csv" --timeline "$OUT/timeline_nccl.csv" --json "$OUT/bench/13_ring_attention.summary.json"
grep -E "PASS|FAIL" "$OUT/weak.log" | tail -n 1
# 3. The benchmark (both transports; the NCCL ring beside one GPU at its share).
step bench 240 "$BIN/13_ring_attention_bench" \
  --benchmark_out="$OUT/bench/13_ring_attention.json" --benchmark_out_format=json
# 4. An Nsight Systems timeline of the overlap runs (if nsys is there): NCCL kernels on the comm stream
#    beside the attention kernels. Only the summary text comes back (the .nsys-rep can be large).
if command -v nsys >/dev/null; then
  step nsys 180 nsys profile -t cuda,nvtx -o "$OUT/ring_nsys" --force-overwrite true \
    "$BIN/13_ring_attention" --P 2 --transport nccl --N 16384 --repeats 2
  step nsys_stats 60 nsys stats --report cuda_gpu_trace --format csv -o "$OUT/ring_nsys" "$OUT/ring_nsys.nsys-rep"
  rm -f "$OUT/ring_nsys.nsys-rep" "$OUT/ring_nsys.sqlite"
fi
echo "run_two_gpu.sh done in $((SECONDS - T0)) s" | tee -a "$OUT/steps.log"
