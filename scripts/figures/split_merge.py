#!/usr/bin/env python3
"""Chapter 11: split-KV and the log-sum-exp merge on one query row. The row's keys cut as
decode() cuts them (split_with), each block's partial (m_s, l_s, LSE_s, O_s), the merge's
weights exp(LSE_s - LSE) and the merged O beside the full softmax's. Data:
11_flash_decoding_split_trace (the fp64 split model the CpuSplitModel tests check).

    scripts/figures/split_merge.py [BUILD_DIR]      -> 11_flash_decoding/figures/split_merge.png
"""
import math

import matplotlib.pyplot as plt

from common import model_csv
from timeline import cli, save_small

COLOURS = plt.get_cmap("tab10").colors


def main():
    cli(__doc__)
    rows = model_csv("11_flash_decoding_split_trace")
    param = {r["kind"]: int(r["index"]) for r in rows if r["kind"] in ("tile_keys", "keys_per_split", "nq")}
    keys = [r for r in rows if r["kind"] == "key"]
    splits = [r for r in rows if r["kind"] == "split"]
    merged = next(r for r in rows if r["kind"] == "merged")
    full = next(r for r in rows if r["kind"] == "full")
    n = len(keys)
    d = sum(1 for c in merged if c.startswith("o"))

    fig = plt.figure(figsize=(13, 7.4))
    spec = fig.add_gridspec(2, 2, height_ratios=[1.25, 1], width_ratios=[1, 1.1])
    ax = fig.add_subplot(spec[0, :])
    for s, p in enumerate(splits):
        b, e, c = int(p["begin"]), int(p["end"]), COLOURS[s % 10]
        seen = [k for k in keys[b:e] if k["visible"] == "1"]
        hidden = [k for k in keys[b:e] if k["visible"] == "0"]
        ax.vlines([int(k["index"]) for k in seen], 0, [float(k["score"]) for k in seen], color=c, lw=1.2)
        if hidden:
            ax.plot([int(k["index"]) for k in hidden], [float(k["score"]) for k in hidden], "x", color="#868e96",
                    ms=5, label="masked (not seen by this query)")
        if float(p["m"]) != -math.inf:
            ax.hlines(float(p["m"]), b - 0.5, e - 0.5, color=c, ls="--", lw=1)
        ax.axvline(b - 0.5, color="#adb5bd", lw=0.8)
        ax.text((b + e - 1) / 2, 1.02, f"block {s}: keys {b}..{e - 1}\nm_s = {float(p['m']):.3f}, "
                f"l_s = {float(p['l']):.2f}\nLSE_s = m_s + log l_s = {float(p['lse']):.3f}",
                transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7.5, color=c)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel(f"key j of the sequence ({n} keys; splits of {param['keys_per_split']} keys, a multiple of the "
                  f"kernel's tile of {param['tile_keys']} keys; dashed: each block's m_s)", fontsize=8)
    ax.set_ylabel("score s_j = q.k_j / sqrt(d)", fontsize=8)
    ax.tick_params(labelsize=7)
    if any(k["visible"] == "0" for k in keys):
        ax.legend(loc="lower left", fontsize=7)

    ax = fig.add_subplot(spec[1, 0])
    left = 0.0
    for s, p in enumerate(splits):
        w = float(p["weight"])
        ax.barh(0, w, height=0.5, left=left, color=COLOURS[s % 10], edgecolor="white")
        wide = w > 0.08
        ax.text(left + w / 2, 0 if wide else 0.3, f"block {s}\n{w:.3f}", ha="center", va="center" if wide else "bottom",
                fontsize=7, color="white" if wide else COLOURS[s % 10])
        left += w
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.5, 0.75)
    ax.set_yticks([])
    ax.tick_params(labelsize=7)
    ax.set_xlabel(f"weights exp(LSE_s - LSE), LSE = log sum_s exp(LSE_s) = {float(merged['lse']):.4f} "
                  f"(full softmax: {float(full['lse']):.4f}); they sum to {left:.6f}", fontsize=8)
    ax.set_title("the combine kernel: each block's share of the row's softmax mass", fontsize=9)

    ax = fig.add_subplot(spec[1, 1])
    width = 0.8 / (len(splits) + 2)
    for s, p in enumerate(splits):
        ax.bar([k + s * width for k in range(d)], [float(p[f"o{k}"]) for k in range(d)], width,
               color=COLOURS[s % 10], label=f"O_s, block {s}")
    for i, (r, style) in enumerate(((merged, dict(color="black")), (full, dict(color="white", edgecolor="black",
                                                                                  hatch="///")))):
        ax.bar([k + (len(splits) + i) * width for k in range(d)], [float(r[f"o{k}"]) for k in range(d)], width,
               label="merged: sum_s exp(LSE_s - LSE) O_s" if i == 0 else "full softmax(s) V, one pass", **style)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(d)], [f"O[{k}]" for k in range(d)], fontsize=8)
    ax.tick_params(labelsize=7)
    diff = max(abs(float(merged[f"o{k}"]) - float(full[f"o{k}"])) for k in range(d))
    ax.set_title(f"each block's O_s (normalised) and the merge: max |merged - full| = {diff:.1e} (fp64)", fontsize=9)
    ax.legend(fontsize=6.5, ncol=2)

    fig.suptitle(f"Chapter 11: one query row (the first of n_q = {param['nq']} new ones, d = {d}) split over "
                 f"{len(splits)} blocks: each writes (O_s, LSE_s), the combine kernel merges them", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    save_small(fig, "11_flash_decoding", "split_merge")


if __name__ == "__main__":
    main()
