#!/usr/bin/env python3
"""The FP8 accuracy study's figure and tables, from the CSV 12_fa3_hopper_fp8_study writes.

  python3 12_fa3_hopper/plot_fp8_accuracy.py study.csv                 # figures/fp8_accuracy.png
  python3 12_fa3_hopper/plot_fp8_accuracy.py study.csv --md 12_fa3_hopper/FP8_ACCURACY.md
      # the figure and the table between <!-- results:12_fa3_hopper_fp8 --> markers, in one go

The figure and FP8_ACCURACY.md hold the published H200 run: without --publish both go to
build/local/12_fa3_hopper/ instead (scripts/publish.py), and --publish refuses a CSV without
GPU rows (a run without a GPU has the host model's columns only). --marker results:... is for
a GPU run (bf16 and FP8 kernel columns); --marker model:... for a run without a GPU. Nothing is
typed by hand.
"""
import argparse
import csv
import math
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import publish  # noqa: E402


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            for k in ("rel_l2", "vs_model", "vs_model_bound"):  # the bound and the inputs, where the CSV has them
                v = r.get(k) or "n/a"
                r[k] = float("nan") if v == "n/a" else float(v)
            r["inputs"] = r.get("inputs") or "uniform"
            r["N"] = int(r["N"])
            r["q_scale"] = float(r["q_scale"])
            r["outlier"] = float(r["outlier"])
            r["hadamard"] = r["hadamard"] == "1"
            rows.append(r)
    return rows


def series(rows, sweep, x_key, path, scaling=None, hadamard=False, value="rel_l2"):
    pts = []
    for r in rows:
        if r["sweep"] != sweep or r["path"] != path or r["hadamard"] != hadamard:
            continue
        if scaling is not None and r["scaling"] != scaling:
            continue
        if not math.isnan(r[value]):
            pts.append((r[x_key], r[value]))
    return sorted(pts)


def plot(rows, out_png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("N", "N", "sequence length N (Q x 1)", True),
              ("logit", "q_scale", "logit scale (Q x s), N = %d" % next(
                  (r["N"] for r in rows if r["sweep"] == "logit"), 0), True),
              ("outlier", "outlier", "4 outlier channels of Q, K x f (Q x %g, spread held)" % next(
                  (r["q_scale"] for r in rows if r["sweep"] == "outlier"), 0), True)]
    lines = [  # (path, scaling, hadamard, label, style)
        ("bf16_gpu", None, False, "bf16 kernel", dict(color="k", marker="o")),
        ("fp8_gpu", "tensor", False, "FP8 kernel, per-tensor", dict(color="tab:red", marker="s")),
        ("fp8_gpu", "block", False, "FP8 kernel, per-block", dict(color="tab:blue", marker="s")),
        ("fp8_gpu", "tensor", True, "FP8 kernel, per-tensor + Hadamard", dict(color="tab:red", marker="^")),
        ("fp8_model", "tensor", False, "model, per-tensor", dict(color="tab:red", ls="--")),
        ("fp8_model", "block", False, "model, per-block", dict(color="tab:blue", ls="--")),
        ("fp8_model", "tensor", True, "model, per-tensor + Hadamard", dict(color="tab:red", ls=":")),
        ("fp8_model", "block", True, "model, per-block + Hadamard", dict(color="tab:blue", ls=":")),
        ("fp8_model_exactP", "block", False, "model, P~ unrounded", dict(color="tab:green", ls="-.")),
        ("fp8_model_fa2max", "block", False, "model, FA2's exact max", dict(color="tab:brown", ls="-.")),
        ("fp8_model_poff8", "block", False, "model, FA2's max, P~ x 2^8 before rounding", dict(color="tab:purple", ls="-.")),
        ("fp8_model_poly", "block", False, "model, exp2 by a polynomial", dict(color="tab:olive", ls=(0, (1, 1)))),
        ("fp8_gpu_poly4", "block", False, "FP8 kernel, per-block, half the exp2 by a polynomial",
         dict(color="tab:olive", marker="x")),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2), gridspec_kw=dict(width_ratios=(1, 1, 1, 0.8)))
    for ax in axes[1:3]:
        ax.sharey(axes[0])
    for ax, (sweep, x_key, title, logx) in zip(axes, panels):
        for path, scaling, had, label, style in lines:
            pts = series(rows, sweep, x_key, path, scaling, had)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, lw=1.3, ms=4, **style)
        ax.set_xscale("log", base=2 if sweep == "N" else 10)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("rel L2 of O vs fp64 (%s inputs)" % rows[0]["inputs"])
    # The kernel against the model on the same bytes (N sweep), beside kFp8VsModel's bound.
    ax = axes[3]
    for sc, had, style in (("tensor", False, dict(color="tab:red", marker="s")),
                           ("block", False, dict(color="tab:blue", marker="s")),
                           ("tensor", True, dict(color="tab:red", marker="^", ls=":")),
                           ("block", True, dict(color="tab:blue", marker="^", ls=":"))):
        pts = series(rows, "N", "N", "fp8_gpu", sc, had, value="vs_model")
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.0, ms=3, **style)
    bound = series(rows, "N", "N", "fp8_gpu", "tensor", False, value="vs_model_bound")
    if bound:
        ax.plot([p[0] for p in bound], [p[1] for p in bound], color="k", ls="--", lw=1.2,
                label="bound: 2 sqrt(a^2 + b^2 N)")
        ax.legend(fontsize=7, loc="upper left")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title("FP8 kernel vs host model (same bytes)", fontsize=9)
    ax.set_xlabel("N")
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = [], []
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7.5, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    os.makedirs(os.path.dirname(out_png) or ".", exist_ok=True)
    fig.savefig(out_png, dpi=90)
    print("wrote %s (%d KB)" % (out_png, os.path.getsize(out_png) // 1024))


def fmt(v):
    return "n/a" if v is None or math.isnan(v) else "%.2e" % v


def table(rows, gpu):
    by_point = defaultdict(dict)
    order = []
    for r in rows:
        key = (r["sweep"], r["N"], r["q_scale"], r["outlier"])
        if key not in by_point:
            order.append(key)
        by_point[key][(r["path"], r["scaling"] if r["path"] != "bf16_gpu" else "-", r["hadamard"])] = r
    variants = [("tensor", False), ("block", False), ("tensor", True), ("block", True)]
    names = ["per-tensor", "per-block", "per-tensor + H", "per-block + H"]
    head = ["sweep", "N", "Q x", "outliers x"]
    if gpu:
        head += ["bf16"] + ["FP8 %s (model)" % n for n in names] + ["kernel vs model (max)", "bound"]
    else:
        head += ["FP8 %s" % n for n in names]
    head += ["P~ unrounded", "FA2's max", "FA2's max, P~ x 2^8", "exp2 polynomial"] + (["kernel, half the exp2 polynomial"] if gpu else [])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in order:
        p = by_point[key]
        get = lambda path, sc, h, v="rel_l2": p.get((path, sc, h), {}).get(v, float("nan"))
        cells = [key[0], str(key[1]), "%g" % key[2], "%g" % key[3]]
        if gpu:
            cells.append(fmt(get("bf16_gpu", "-", False)))
            for sc, h in variants:
                cells.append("%s (%s)" % (fmt(get("fp8_gpu", sc, h)), fmt(get("fp8_model", sc, h))))
            vs = [get("fp8_gpu", sc, h, "vs_model") for sc, h in variants]
            vs = [v for v in vs if not math.isnan(v)]
            cells.append(fmt(max(vs)) if vs else "n/a")
            cells.append(fmt(get("fp8_gpu", "tensor", False, "vs_model_bound")))
        else:
            cells += [fmt(get("fp8_model", sc, h)) for sc, h in variants]
        cells += [fmt(get("fp8_model_exactP", "block", False)), fmt(get("fp8_model_fa2max", "block", False)),
                  fmt(get("fp8_model_poff8", "block", False)),
                  fmt(get("fp8_model_poly", "block", False))]
        if gpu:
            cells.append(fmt(get("fp8_gpu_poly4", "block", False)))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def fill(md_path, marker, text):
    with open(md_path) as f:
        md = f.read()
    pattern = re.compile(r"(<!-- %s -->)(.*?)(<!-- /%s -->)" % (re.escape(marker), re.escape(marker)), re.S)
    if not pattern.search(md):
        sys.exit("%s: no <!-- %s --> ... <!-- /%s --> markers" % (md_path, marker, marker))
    md = pattern.sub(lambda m: m.group(1) + "\n" + text + "\n" + m.group(3), md)
    with open(md_path, "w") as f:
        f.write(md)
    print("filled <!-- %s --> in %s" % (marker, md_path))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="what 12_fa3_hopper_fp8_study --csv wrote")
    ap.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures",
                                                  "fp8_accuracy.png"), help="the figure (default: %(default)s)")
    ap.add_argument("--no-plot", action="store_true", help="the table only")
    ap.add_argument("--md", help="markdown file whose marker block receives the table")
    ap.add_argument("--marker", default="results:12_fa3_hopper_fp8", help="default: %(default)s")
    publish.add_flag(ap)
    args = ap.parse_args()
    if not os.path.isfile(args.csv):
        ap.error(args.csv + ": no such file")
    rows = load(args.csv)
    if not rows:
        sys.exit(args.csv + ": no rows")
    gpu = any(r["path"] in ("bf16_gpu", "fp8_gpu") and not math.isnan(r["rel_l2"]) for r in rows)
    if args.publish and not gpu:
        sys.exit(args.csv + ": no GPU rows (a run without a GPU): the host model alone is not the published run; "
                 "leave out --publish")
    if not args.no_plot:
        plot(rows, str(publish.destination(args.png, args.publish)))
    if args.md:
        fill(publish.destination(args.md, args.publish), args.marker, table(rows, gpu))
    else:
        print(table(rows, gpu))


if __name__ == "__main__":
    main()
