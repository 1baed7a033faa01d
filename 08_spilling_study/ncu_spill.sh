#!/usr/bin/env bash
# Nsight Compute on one launch each of: the lecture kernel (accumulators in registers), the same kernel with its
# accumulators in local memory, and the same kernel under the tightest register cap (real spills).
#   08_spilling_study/ncu_spill.sh BUILD_DIR OUTDIR
# Writes OUTDIR/ncu_spill.csv (one row per kernel, one column per metric, values in base units: bytes, percent,
# nanoseconds) and the full reports OUTDIR/ncu_spill_<kind>.ncu-rep. NCU=/path/to/ncu picks another ncu.
# --clock-control none: the GPU keeps its normal clocks, as in the timed runs, instead of ncu's locked base clock.
set -euo pipefail
build=${1:?usage: ncu_spill.sh BUILD_DIR OUTDIR}
out=${2:?usage: ncu_spill.sh BUILD_DIR OUTDIR}
exe=$build/bin/08_spilling_study
ncu=${NCU:-ncu}
[[ -x $exe ]] || { echo "ncu_spill.sh: no executable at $exe (build the chapter first)" >&2; exit 2; }

metrics=(
  l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum        # bytes the kernel read from local memory (seen at L1)
  l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum        # bytes it wrote to local memory
  dram__bytes_read.sum                               # what actually crossed DRAM
  dram__bytes_write.sum
  sm__warps_active.avg.pct_of_peak_sustained_active  # achieved occupancy
  sm__maximum_warps_per_active_cycle_pct             # theoretical occupancy
  launch__registers_per_thread
  gpu__time_duration.sum
)
metric_list=$(IFS=,; echo "${metrics[*]}")

mkdir -p "$out"
csv=$out/ncu_spill.csv
rm -f "$csv"
for kind in normal local capped; do
  "$ncu" --clock-control none --metrics "$metric_list" --kernel-name regex:fa2_forward --launch-count 1 \
    --export "$out/ncu_spill_$kind" --force-overwrite "$exe" --profile "$kind"
  # --page raw: a header line, a units line (its ID field empty), then one line per profiled kernel.
  "$ncu" --import "$out/ncu_spill_$kind.ncu-rep" --csv --page raw --print-units base | grep -v '^==' |
    awk -v kind="$kind" -v first="$([[ -s $csv ]] || echo 1)" '
      NR == 1 { if (first) print "\"kind\"," $0; next }
      /^""/   { if (first) print "\"\"," $0; next }
              { print "\"" kind "\"," $0 }' >> "$csv"
done
echo "ncu_spill.sh: wrote $csv"
cat "$csv"
