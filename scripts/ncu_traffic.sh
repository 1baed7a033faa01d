#!/usr/bin/env bash
# DRAM traffic of FA1, FA2 and the standard attention, measured by Nsight Compute
# next to the chapters' tile models:  scripts/ncu_traffic.sh BUILD_DIR OUTDIR
# Shape: B=1, H=16, N=16384, d=64: K and V are 64 MiB each, past the 60 MB L2.
# Writes OUTDIR/traffic.csv (impl, model and measured MB read/written) and the raw ncu logs.
set -euo pipefail
BUILD=${1:?build dir} OUT=${2:?output dir}
mkdir -p "$OUT"
SHAPE=(--B 1 --H 16 --N 16384 --d 64)
METRICS=dram__bytes_read.sum,dram__bytes_write.sum
run() {  # run NAME EXE PROFILE
  ncu --clock-control none --metrics "$METRICS" --csv --log-file "$OUT/traffic_ncu_$1.log" \
    "$BUILD/bin/$2" "${SHAPE[@]}" --profile "$3" >"$OUT/stdout_$1.txt"
}
run fa1 05_fa1_forward fa1
run fa2 06_fa2_forward fa2
run standard 06_fa2_forward standard
python3 - "$OUT" <<'PY'
import csv, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = ["impl,model_read_MB,model_write_MB,ncu_read_MB,ncu_write_MB,kernels"]
for impl in ["fa1", "fa2", "standard"]:
    text = (out / f"stdout_{impl}.txt").read_text()
    m = re.search(r"total\s+read\s+([\d.]+) MB\s+write\s+([\d.]+) MB", text)
    if impl == "standard":  # S written; S read, P written (softmax); P read (PV); plus Q, K, V read, O written
        heads, N, d = 16, 16384, 64
        model = (f"{heads * 4 * (3 * N * d + 2 * N * N) / 1e6:.1f}", f"{heads * 4 * (2 * N * N + N * d) / 1e6:.1f}")
    else:
        model = (m.group(1), m.group(2))
    lines = (out / f"traffic_ncu_{impl}.log").read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    total = {"dram__bytes_read.sum": 0.0, "dram__bytes_write.sum": 0.0}
    kernels = set()
    unit_scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
    for r in csv.DictReader(lines[start:]):
        if r["Metric Name"] in total:
            total[r["Metric Name"]] += float(r["Metric Value"].replace(",", "")) * unit_scale.get(r["Metric Unit"], 1)
            kernels.add(r["Kernel Name"].split("(")[0][:40])
    rows.append(f"{impl},{model[0]},{model[1]},{total['dram__bytes_read.sum']/1e6:.1f},"
                f"{total['dram__bytes_write.sum']/1e6:.1f},{' + '.join(sorted(kernels))}")
(out / "traffic.csv").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
PY
