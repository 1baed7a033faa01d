#!/usr/bin/env bash
# Nsight Compute on one launch of every step of chapter 09, and of cuBLAS bf16, at 4096^3:
#   09_tensor_core_matmul/ncu_steps.sh BUILD_DIR OUTDIR
# Writes OUTDIR/ncu_09.csv (--page raw: a header line, a units line, then one line per kernel
# in step order, cuBLAS last), which step_table.py turns into the README's step table: bank
# conflicts, tensor-pipe activity, FLOPs per active pipe cycle, occupancy, DRAM bytes.
# Metric names this ncu does not know are left out (listed in OUTDIR/ncu_09_missing.txt).
# Steps the GPU cannot run (the Hopper ones elsewhere) are skipped by the executable.
# NCU=/path/to/ncu picks another ncu. --clock-control none: the GPU keeps its normal clocks,
# as in the timed runs, instead of ncu's locked base clock.
set -euo pipefail
build=${1:?usage: ncu_steps.sh BUILD_DIR OUTDIR}
out=${2:?usage: ncu_steps.sh BUILD_DIR OUTDIR}
exe=$build/bin/09_tensor_core_matmul
ncu=${NCU:-ncu}
[[ -x $exe ]] || { echo "ncu_steps.sh: no executable at $exe (build the chapter first)" >&2; exit 2; }

metrics=(
  gpu__time_duration.sum
  sm__cycles_elapsed.avg.per_second                                       # the SM clock during the launch
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum                # steps 2 -> 3
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
  sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active  # tensor pipe busy (mma.sync and wgmma)
  sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
  sm__inst_executed_pipe_tensor_op_hmma.sum
  sm__inst_executed_pipe_tensor_op_gmma.sum
  sm__warps_active.avg.pct_of_peak_sustained_active                       # achieved occupancy
  sm__throughput.avg.pct_of_peak_sustained_elapsed
  dram__bytes_read.sum
  dram__bytes_write.sum
  lts__t_bytes.sum
  launch__registers_per_thread
  launch__sm_count
  smsp__warp_issue_stalled_barrier_per_warp_active.pct
  smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct
  smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct
  smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct
  smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct
  smsp__warp_issue_stalled_wait_per_warp_active.pct
)
mkdir -p "$out"
known=$(mktemp)
"$ncu" --query-metrics --chip gh100 >"$known" 2>/dev/null || "$ncu" --query-metrics >"$known" 2>/dev/null || true
list=""
: >"$out/ncu_09_missing.txt"
for m in "${metrics[@]}"; do
  if [[ $m == launch__* ]] || grep -qE "^[[:space:]]*${m%%.*}([[:space:]]|$)" "$known"; then
    list="${list:+$list,}$m"
  else
    echo "$m" >>"$out/ncu_09_missing.txt"
  fi
done
rm -f "$known"

steps=wmma,mma_ldmatrix,mma_swizzle,mma_pipeline,wgmma_tma,wgmma_ws,wgmma_persistent,wgmma_cluster,cublas_bf16
"$ncu" --clock-control none --csv --page raw --metrics "$list" "$exe" --profile "$steps" >"$out/ncu_09.log" 2>&1
grep '^"' "$out/ncu_09.log" >"$out/ncu_09.csv"
echo "ncu_steps.sh: wrote $out/ncu_09.csv ($(($(wc -l <"$out/ncu_09.csv") - 2)) kernels)"
