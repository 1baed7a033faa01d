#!/usr/bin/env python3
"""The top README's chart: attention's speed climbing the ladder on the published GPU, against cuDNN and
the device's peak. One shape for every bar, B=4 H=16 N=4096 d=128, dense: the forward of chapters 05 (FA1,
fp32), 06 (FA2, fp32), 10 (FA2 on tensor cores, bf16), 12 (FA3, bf16, then FP8), and chapter 14's backward
(FA3, bf16). Each bar is the median of the chapter's benchmark row in the published bench.json (the tables'
own figures, read by scripts/results.py's parser); the cuDNN marks are the same runs' in-process cuDNN
anchors (`anchor:cudnn/...`), the dashes the H200's datasheet peaks for the bar's arithmetic (fp32 on CUDA
cores, dense bf16 and FP8 on tensor cores).

    scripts/figures/ladder_speed.py [RESULTS_DIR [OUT_PNG]]   (default: results/ -> results/ladder_speed.png)

scripts/results.py draws it with every publication (into OUT_DIR/ladder_speed.png); no GPU is needed.
"""
import argparse
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import results  # noqa: E402  (parse, value and the H200's peaks, so the chart reads the tables' own way)

SHAPE = dict(d="128", N="4096", causal="0")  # plus B=4 H=16: the chapters' headline shape
FP32_PEAK = 66.9  # 132 SMs x 128 FP32 lanes x 2 FLOPs x 1.98 GHz (chapter 02)
FP8_PEAK = 2 * results.H200_BF16_DENSE_TFLOPS  # dense FP8 on tensor cores: twice bf16

# (label, chapter, variant, the cuDNN anchor of the same run or None, peak, what the bar measures)
BARS = [
    ("05 FA1\nfp32", "05_fa1_forward", "fa1", None, FP32_PEAK, "forward"),
    ("06 FA2\nfp32", "06_fa2_forward", "fa2", None, FP32_PEAK, "forward"),
    ("10 FA2, tensor\ncores, bf16", "10_fa2_tensor_cores", "fwd", "anchor:cudnn/fwd", results.H200_BF16_DENSE_TFLOPS,
     "forward"),
    ("12 FA3\nHopper, bf16", "12_fa3_hopper", "fwd", "anchor:cudnn/fwd", results.H200_BF16_DENSE_TFLOPS, "forward"),
    ("12 FA3\nFP8", "12_fa3_hopper", "fp8", "anchor:cudnn/fp8", FP8_PEAK, "forward"),
    ("14 FA3\nbackward, bf16", "14_fa3_backward", "bwd", "anchor:cudnn/bwd", results.H200_BF16_DENSE_TFLOPS, "backward"),
]


def row(rows, variant, where):
    """TFLOP/s of the variant at the shape (B=4 H=16 where the chapter names them), or None."""
    for r in rows:
        if r["variant"] != variant or r["error"]:
            continue
        p = r["params"]
        if all(p.get(k) == v for k, v in SHAPE.items()) and p.get("B", "4") == "4" and p.get("H", "16") == "16" \
                and set(p) <= {"d", "N", "causal", "B", "H"}:
            return results.value(r, "TFLOP/s")
    sys.exit(f"ladder_speed.py: no {variant} row at B=4 H=16 {SHAPE} in {where}")


def draw(results_dir, out):
    gpu, bars = "?", []
    for label, chapter, variant, anchor, peak, what in BARS:
        path = results_dir / chapter / "bench.json"
        if not path.exists():
            sys.exit(f"ladder_speed.py: {path} not found")
        context, rows = results.parse(path)
        gpu = context.get("gpu", gpu).split(" (")[0]
        bars.append((label, row(rows, variant, path), row(rows, anchor, path) if anchor else None, peak, what))

    fig, ax = plt.subplots(figsize=(10, 5.2))
    xs = range(len(bars))
    for x, (label, v, cudnn, peak, what) in zip(xs, bars):
        colour = "#4c6ef5" if what == "forward" else "#12b886"
        ax.bar(x, v, width=0.6, color=colour, zorder=2)
        ax.text(x, (3 * v) ** 0.5, f"{v:.0f}" if v >= 100 else f"{v:.1f}", ha="center", va="center", fontsize=10,
                fontweight="bold", color="white", zorder=5)
        ax.hlines(peak, x - 0.38, x + 0.38, colors="#868e96", linestyles="--", lw=1.2, zorder=3)
        ax.text(x, peak * 1.06, f"peak {peak:.0f}", ha="center", va="bottom", fontsize=7, color="#868e96")
        if cudnn:
            ax.plot(x, cudnn, marker="_", markersize=30, mew=3, color="#e8590c", zorder=4)
            ax.text(x, cudnn * 1.07, f"cuDNN {cudnn:.0f}", ha="center", va="bottom", fontsize=7, color="#e8590c",
                    zorder=5, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
    ax.set_yscale("log")
    ax.set_ylim(3, 4000)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars], fontsize=8.5)
    ax.set_ylabel("TFLOP/s (log scale)", fontsize=9)
    ax.grid(axis="y", which="major", color="#e9ecef", zorder=0)
    handles = [plt.Rectangle((0, 0), 1, 1, color="#4c6ef5"), plt.Rectangle((0, 0), 1, 1, color="#12b886"),
               plt.Line2D([], [], color="#e8590c", marker="_", markersize=12, mew=3, ls=""),
               plt.Line2D([], [], color="#868e96", ls="--")]
    ax.legend(handles, ["forward, this ladder", "backward, this ladder", "cuDNN, same run",
                        "the GPU's peak for that arithmetic"], fontsize=8, loc="upper left", frameon=False)
    ax.set_title(f"Attention up the ladder on the {gpu}: B=4, H=16, N=4096, d=128, dense "
                 "(the published tables' medians)", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", nargs="?", type=pathlib.Path, default=ROOT / "results",
                    help="the published results (default: results/)")
    ap.add_argument("out", nargs="?", type=pathlib.Path, help="the PNG (default: RESULTS_DIR/ladder_speed.png)")
    args = ap.parse_args()
    out = draw(args.results_dir, args.out or args.results_dir / "ladder_speed.png")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
