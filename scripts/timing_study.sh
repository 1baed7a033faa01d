#!/usr/bin/env bash
# What the warm-up of the timing method (common/timing.h) changes, with the clocks beside it:
#   scripts/timing_study.sh OUTDIR [BUILD_DIR]
# Runs ladder_timing_study (a bf16 cuBLAS GEMM 8192^3 and a 1 GiB device-to-device copy, each
# after an idle gap and a warm-up of: none, 2 runs, 20, 100, 300, 1000, 3000 ms) while nvidia-smi
# samples the SM clock, memory clock, power and temperature every 50 ms. About 40 s of GPU time.
# Writes to OUTDIR:
#   timing_study.log    the study's own table
#   timing_study.csv    one row per (work, setting), with the wall-clock time of each phase
#   smi.csv             the nvidia-smi samples
#   timing_study.md     the table to quote: each setting's median beside the clock and power
#                       sampled during its warm-up and during its timed repeats
# BUILD_DIR (default build-gpu, then build) holds bin/ladder_timing_study; extra flags for the
# study go in STUDY_FLAGS (e.g. STUDY_FLAGS="--idle-ms 5000").
set -euo pipefail
case "${1:-}" in
  "" | -h | --help)
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    [[ -n ${1:-} ]] && exit 0 || exit 2
    ;;
esac
OUTDIR=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${2:-}
if [[ -z $BUILD ]]; then
  for b in "$ROOT/build-gpu" "$ROOT/build"; do [[ -x $b/bin/ladder_timing_study ]] && BUILD=$b && break; done
fi
STUDY=${BUILD:-$ROOT/build-gpu}/bin/ladder_timing_study
[[ -x $STUDY ]] || { echo "timing_study: no $STUDY (build the target ladder_timing_study first)" >&2 && exit 2; }
command -v nvidia-smi > /dev/null || { echo "timing_study: nvidia-smi not found: the clocks cannot be sampled" >&2 && exit 1; }
mkdir -p "$OUTDIR"

# CUDA's device 0 is nvidia-smi's GPU 0 only in PCI order.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader,nounits \
  -lms 50 > "$OUTDIR/smi.csv" &
sampler=$!
trap 'kill "$sampler" 2> /dev/null || true' EXIT
sleep 1  # a few samples of the idle GPU first
# shellcheck disable=SC2086
"$STUDY" --csv "$OUTDIR/timing_study.csv" ${STUDY_FLAGS:-} | tee "$OUTDIR/timing_study.log"
sleep 0.5
kill "$sampler" 2> /dev/null || true
wait "$sampler" 2> /dev/null || true

python3 - "$OUTDIR" << 'EOF'
import csv, datetime, pathlib, statistics, sys

out = pathlib.Path(sys.argv[1])


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


samples = []  # (epoch s, sm MHz, mem MHz, W, C)
for row in csv.reader((out / "smi.csv").read_text().splitlines()):
    if len(row) < 5:
        continue
    try:
        t = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except ValueError:
        continue
    samples.append((t, *(number(x.strip()) for x in row[1:5])))
if not samples:
    sys.exit("timing_study: nvidia-smi wrote no samples (see smi.csv)")


def during(t0, t1, col):
    """Mean of column col over the samples in [t0, t1]; the nearest sample when none fell inside."""
    vals = [s[col] for s in samples if t0 <= s[0] <= t1 and s[col] is not None]
    if vals:
        return statistics.mean(vals), len(vals)
    mid = 0.5 * (t0 + t1)
    near = min(samples, key=lambda s: abs(s[0] - mid))
    return near[col], 0


rows = list(csv.DictReader((out / "timing_study.csv").read_text().splitlines()))
lines = ["# What the warm-up changes", "",
         "`scripts/timing_study.sh`: each setting after an idle gap, then its warm-up, then the timed repeats",
         "(L2 flushed, CUDA events, median). SM clock, power and temperature: the mean of the nvidia-smi samples",
         "(every 50 ms) that fell in the phase; `~` marks a phase shorter than one sample interval, shown with the",
         "nearest sample. `vs longest`: this setting's median time over the longest warm-up's.", ""]
for work in dict.fromkeys(r["work"] for r in rows):
    rs = [r for r in rows if r["work"] == work]
    unit = rs[0]["unit"]
    ref = float(rs[-1]["median_ms"])
    lines += [f"**{work}**", "",
              f"| warm-up | warm-up ms (runs) | median ms | p10 .. p90 ms | {unit} | vs longest | SM MHz in warm-up "
              "| SM MHz timed | W timed | C timed |", "|---" * 10 + "|"]
    for r in rs:
        w0, t0, t1 = float(r["warmup_start_s"]), float(r["timed_start_s"]), float(r["timed_end_s"])
        def cell(a, b, col, fmt):
            v, n = during(a, b, col)
            return "" if v is None else ("~" if n == 0 else "") + format(v, fmt)
        warm_clock = cell(w0, t0, 1, ".0f") if int(r["warmup_runs"]) > 0 else "-"
        lines.append(f"| {r['setting']} | {float(r['warmup_ms']):.0f} ({r['warmup_runs']}) | {float(r['median_ms']):.4f} "
                     f"| {float(r['p10_ms']):.4f} .. {float(r['p90_ms']):.4f} | {float(r['median_value']):.1f} "
                     f"| {float(r['median_ms']) / ref:.3f} | {warm_clock} | {cell(t0, t1, 1, '.0f')} "
                     f"| {cell(t0, t1, 3, '.0f')} | {cell(t0, t1, 4, '.0f')} |")
    lines.append("")
idle = [s[1] for s in samples[:10] if s[1] is not None]
if idle:
    lines.append(f"Idle SM clock before the study: {statistics.mean(idle):.0f} MHz.")
(out / "timing_study.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
