#!/usr/bin/env python3
"""Nsight Compute's warp-state samples of one kernel, summed over address ranges of its SASS.

    regions.py SOURCE_CSV NAME=START-END [NAME=START-END ...]

SOURCE_CSV: `ncu -i REPORT --page source --csv --print-source sass`; START, END: hex offsets from the
kernel's first instruction (inclusive). Prints, per range, its share of all samples, the stall reasons
of its samples and the instructions its samples sit at.
"""
import collections
import csv
import gzip
import sys

path, ranges = sys.argv[1], [(a.split("=")[0], *(int(x, 16) for x in a.split("=")[1].split("-"))) for a in sys.argv[2:]]
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    rows = list(csv.reader(f))
hdr, data = rows[1], rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
base = int(data[0][0], 16)
total = sum(float(r[ix["Warp Stall Sampling (All Samples)"]] or 0) for r in data)
print(f"{total:.0f} samples")
for name, lo, hi in ranges:
    share, why, ops, n = 0.0, collections.Counter(), collections.Counter(), 0
    for r in data:
        if lo <= int(r[0], 16) - base <= hi:
            v = float(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
            share += v
            n += 1
            for h in reasons:
                why[h[6:]] += float(r[ix[h]] or 0)
            ops[next(t for t in r[1].split() if not t.startswith("@")).split(".")[0]] += v
    print(f"{name} [{lo:#x}, {hi:#x}]: {n} instructions, {share / total * 100:.1f}% of the samples")
    print("  stall reasons:", ", ".join(f"{k} {v / share * 100:.0f}%" for k, v in why.most_common(6)) if share else "-")
    print("  at:", ", ".join(f"{k} {v / share * 100:.0f}%" for k, v in ops.most_common(6)) if share else "-")
