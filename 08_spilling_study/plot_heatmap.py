#!/usr/bin/env python3
"""Heatmaps of chapter 08's B_r x B_c sweep (d = 128, accumulators in registers, no register cap).

    plot_heatmap.py BENCH_JSON TABLE_CSV OUTDIR

BENCH_JSON  Google Benchmark JSON of 08_spilling_study_bench (--benchmark_format=json or --benchmark_out=...)
TABLE_CSV   the table written by `08_spilling_study --csv FILE` (compile-time columns always, runtime columns
            when it ran on a GPU)
OUTDIR      gets spill_heatmap.png: time (TFLOP/s in each cell); registers per thread (spill bytes in each
            cell); blocks per SM with the occupancy, when the CSV has it.
"""
import argparse
import csv
import json
import re
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

D = 128
B_R = [4, 8, 16]
B_C = [16, 32, 64]
NAME = re.compile(r"^spill_sweep/variant=normal/d=(\d+)/B_r=(\d+)/B_c=(\d+)/N=(\d+)(/manual_time)?$")


def sweep_times(bench_json):
    """(B_r, B_c) -> (median ms, TFLOP/s) of the sweep's benchmarks; N of the run."""
    runs, n = {}, None
    for b in json.loads(Path(bench_json).read_text())["benchmarks"]:
        m = NAME.match(b.get("run_name", b["name"]))
        if not m or int(m[1]) != D or b.get("error_occurred") or b.get("skipped"):
            continue
        if b.get("run_type", "iteration") != "iteration":
            continue  # aggregates of --benchmark_repetitions: the iterations are taken instead
        runs.setdefault((int(m[2]), int(m[3])), []).append((b["ms"], b["TFLOP/s"]))
        n = int(m[4])
    return {k: (statistics.median(t for t, _ in v), statistics.median(f for _, f in v)) for k, v in runs.items()}, n


def sweep_table(table_csv):
    """(B_r, B_c) -> the CSV row of the sweep's normal kernels at d = 128."""
    rows = {}
    with open(table_csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] == "normal" and int(r["d"]) == D:
                rows[(int(r["B_r"]), int(r["B_c"]))] = r
    return rows


def grid(cell):
    """A B_r x B_c array of cell(B_r, B_c), NaN where it gives None."""
    return np.array([[np.nan if cell(r, c) is None else cell(r, c) for c in B_C] for r in B_R], dtype=float)


def heatmap(ax, values, labels, title, cmap):
    shown = np.ma.masked_invalid(values)
    image = ax.imshow(shown, cmap=cmap, origin="upper")
    ax.set_xticks(range(len(B_C)), [str(c) for c in B_C])
    ax.set_yticks(range(len(B_R)), [str(r) for r in B_R])
    ax.set_xlabel("B_c (keys per inner step)")
    ax.set_ylabel("B_r (query rows per block)")
    ax.set_title(title, fontsize=10)
    finite = values[np.isfinite(values)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0
    high_is_dark = cmap.endswith("_r")  # viridis_r, magma_r: large values get dark colours
    for i in range(len(B_R)):
        for j in range(len(B_C)):
            if labels[i][j]:
                dark = np.isfinite(values[i, j]) and (values[i, j] > middle) == high_is_dark
                ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=8, color="white" if dark else "black")
    plt.colorbar(image, ax=ax, shrink=0.8)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json", type=Path)
    ap.add_argument("table_csv", type=Path)
    ap.add_argument("outdir", type=Path)
    args = ap.parse_args()
    for f in (args.bench_json, args.table_csv):
        if not f.is_file():
            ap.error(f"{f}: no such file")
    times, n = sweep_times(args.bench_json)
    table = sweep_table(args.table_csv)
    outdir = args.outdir
    outdir.mkdir(parents=True, exist_ok=True)

    def time_of(r, c):
        return times[(r, c)][0] if (r, c) in times else None

    def table_int(key):
        return lambda r, c: int(table[(r, c)][key]) if (r, c) in table and table[(r, c)][key] != "" else None

    regs, spill, blocks = table_int("registers"), table_int("spill_store_bytes"), table_int("blocks_per_sm")
    panels = [
        (grid(time_of),
         [[f"{times[(r, c)][0]:.2f} ms\n{times[(r, c)][1]:.2f} TFLOP/s" if (r, c) in times else "no run"
           for c in B_C] for r in B_R],
         f"time, B=4 H=16 N={n} d={D} (lower is better)", "viridis_r"),
        (grid(regs),
         [[f"{regs(r, c)} regs\n{spill(r, c)} B spilled" if regs(r, c) is not None else "" for c in B_C]
          for r in B_R],
         "ptxas: registers per thread, spill stores", "magma_r"),
    ]
    if any(blocks(r, c) is not None for r in B_R for c in B_C):
        occupancy = {k: float(v["occupancy"]) for k, v in table.items() if v["occupancy"] != ""}
        panels.append((grid(blocks),
                       [[f"{blocks(r, c)} blocks/SM\n{100 * occupancy[(r, c)]:.0f}% occupancy"
                         if (r, c) in occupancy else "" for c in B_C] for r in B_R],
                       "theoretical occupancy (registers and shared memory)", "viridis"))

    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.8))
    for ax, (values, labels, title, cmap) in zip(np.atleast_1d(axes), panels):
        heatmap(ax, values, labels, title, cmap)
    fig.suptitle("08_spilling_study: FA2 forward, B_r x B_c sweep at d=128 (fp32)")
    fig.tight_layout()
    path = outdir / "spill_heatmap.png"
    fig.savefig(path, dpi=130, bbox_inches="tight")
    print(f"plot_heatmap.py: wrote {path}")


if __name__ == "__main__":
    main()
