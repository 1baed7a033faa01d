#!/usr/bin/env python3
"""Chapter 15's block-sparse sweep: time over dense time against the fraction of tiles the kernels
visit, forward and backward, beside the ideal (time follows the tiles) and the target (results/targets.json: 1.2x it).

    plot_sparsity.py BENCH_JSON OUTDIR [BUILD_DIR] [--tile-sets CSV]

BENCH_JSON  Google Benchmark JSON of 15_attention_variants_bench (fwd:tilesP, bwd:tilesP, fwd:dense, bwd:dense)
OUTDIR      gets sparsity.png
BUILD_DIR   where bin/15_attention_variants_block_masks is (default build/): it gives the fraction of
            tiles each kernel visits for the benchmark's tile sets (`--tile-sets`, on the CPU)
--tile-sets CSV  that tool's `--tile-sets` output, saved (density,fwd_visited,bwd_visited): no build needed
                 (the committed publication keeps it: results/15_attention_variants/tile_sets.csv)
"""
import argparse
import csv
import io
import json
import pathlib
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import targets as goals  # noqa: E402

# results/targets.json: time / dense time at most GOAL x the fraction of tiles visited
GOAL = goals.find(goals.load(), "15_attention_variants", "fwd_tiles10_time_over_fraction")["goal"]
NAME = re.compile(r"^(fwd|bwd):(tiles(\d+)|dense)/")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json", type=pathlib.Path)
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("build_dir", nargs="?", type=pathlib.Path, default=ROOT / "build")
    ap.add_argument("--tile-sets", type=pathlib.Path, help="the tool's --tile-sets CSV instead of running it")
    a = ap.parse_args()
    ms = {}
    for b in json.loads(a.bench_json.read_text())["benchmarks"]:  # with repetitions: their median
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        m = NAME.match(b.get("run_name", b["name"]))
        if m and not b.get("error_occurred") and not b.get("skipped"):
            ms[(m[1], int(m[3]) if m[3] else 100)] = b["ms"]
    if a.tile_sets:
        if not a.tile_sets.is_file():
            sys.exit(f"{a.tile_sets}: no such file")
        text = a.tile_sets.read_text()
    else:
        tool = a.build_dir / "bin" / "15_attention_variants_block_masks"
        if not tool.exists():
            sys.exit(f"{tool} not found: build it first (cmake --build {a.build_dir} --target {tool.name}), "
                     "or give --tile-sets")
        text = subprocess.run([str(tool), "--tile-sets"], capture_output=True, text=True, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    fig, ax = plt.subplots(figsize=(5.2, 4))
    top = 0.0
    for p, label, colour in (("fwd", "forward (128-row tiles)", "#1c7ed6"), ("bwd", "backward (64-row tiles)", "#e8590c")):
        pts = [(float(r[f"{p}_visited"]), ms[(p, round(100 * float(r["density"])))] / ms[(p, 100)]) for r in rows
               if (p, round(100 * float(r["density"]))) in ms and (p, 100) in ms]
        if pts:
            ax.plot(*zip(*pts), marker="o", color=colour, label=label)
            top = max(top, max(x for x, _ in pts), max(y for _, y in pts))
    if top == 0:
        sys.exit("no fwd:tilesP / fwd:dense pairs in the benchmark JSON")
    x = [0, top * 1.1]
    ax.plot(x, x, color="#868e96", linestyle="--", label="time follows the tiles")
    ax.plot(x, [GOAL * v for v in x], color="#868e96", linestyle=":", label=f"target: {GOAL:g}x the fraction")
    ax.set_xlabel("fraction of tiles visited")
    ax.set_ylabel("time / dense time")
    ax.set_title("block sparsity, B=2 H=16 N=8192 d=128", fontsize=10)
    ax.legend(fontsize=8)
    a.outdir.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.outdir / "sparsity.png", dpi=100, bbox_inches="tight")
    print(f"wrote {a.outdir / 'sparsity.png'}")


if __name__ == "__main__":
    main()
