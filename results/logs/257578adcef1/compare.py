#!/usr/bin/env python3
"""Chapter 12's benchmark at two commits, row by row (medians of the repetitions, TFLOP/s).

    compare.py OLD_BENCH_JSON NEW_BENCH_JSON    (.json or .json.gz, Google Benchmark output)
"""
import gzip
import json
import sys


def medians(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f)
    return {b["run_name"]: b["TFLOP/s"] for b in d["benchmarks"] if b.get("aggregate_name") == "median"}


old, new = medians(sys.argv[1]), medians(sys.argv[2])
print("| row | old | new | new / old |\n|---|---:|---:|---:|")
for k in old:
    if k in new and old[k]:
        print(f"| `{k.replace('/manual_time', '')}` | {old[k]:.1f} | {new[k]:.1f} | {new[k] / old[k]:.3f} |")
