#!/usr/bin/env python3
"""Chapter 14: the tile policy, drawn from 14_fa3_backward_tiles (the kernel's Cfg,
fa3_bwd_config.h). Three policies side by side: d = 128 with 64-row query tiles; d = 64 with 64
rows (chapter 15's tile); d = 64 with 128 rows (chapter 14's). For
each: which consumer warpgroup computes which rows of S^T and dP^T, which adds which 64 x 64 block
of dQ_i, a step's GEMMs per warpgroup, and the shared memory.

    scripts/figures/bwd_tiles.py [BUILD_DIR]      -> 14_fa3_backward/figures/bwd_tiles.png
"""
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from common import model_csv
from timeline import cli, save_small

OWNER = {"0": "#a1c4e8", "1": "#c3b6de", "both": "#e8a1a1"}
SMEM = ["#8c8c8c", "#8fbc8f", "#ccb974", "#64b5cd", "#e8a1a1"]
LIMIT = 227 * 1024  # an H100/H200 CTA's shared memory


def tile(ax, rects, width, height, xlabel, ylabel, title):
    drawn = {}  # a block both consumers add into is drawn once, with both names
    for r in rects:
        where = tuple(int(r[k]) for k in ("x", "y", "w", "h"))
        label = r["label"].replace(": ", ":\n").replace(" over ", "\nover ")
        if where in drawn:
            drawn[where] = (r["owner"], label.replace("consumer 2:", "consumers 1 and 2, each:"))
        else:
            drawn[where] = (r["owner"], label)
    for (x, y, w, h), (owner, label) in drawn.items():
        ax.add_patch(Rectangle((x, y), w, h, facecolor=OWNER[owner], edgecolor="black", lw=1.0))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_aspect("equal")
    ax.set_xticks(range(0, width + 1, 64))
    ax.set_yticks(range(0, height + 1, 64))
    ax.tick_params(labelsize=7)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=8.5)


def main():
    cli(__doc__)
    rows = model_csv("14_fa3_backward_tiles")
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, axes = plt.subplots(3, len(policies), figsize=(4.6 * len(policies), 10.5),
                             gridspec_kw={"height_ratios": [1, 1, 0.28]})
    for col, name in enumerate(policies):
        mine = [r for r in rows if r["policy"] == name]
        d, B_r = (int(part.split("=")[1]) for part in name.split())
        work = next(r for r in mine if r["panel"] == "work")
        tile(axes[0][col], [r for r in mine if r["panel"] == "scores"], 128, 128, "queries of Q_i (B_r)",
             "keys of K_j (B_c)",
             f"{name}: S^T and dP^T of one step\nper warpgroup {work['x']} x m64n64k16: {work['label']}")
        dq_blocks = [r for r in mine if r["panel"] == "dq"]
        tile(axes[1][col], dq_blocks, 128, 128, "columns of d", "queries of Q_i",
             "dQ_i = dS K_j: who adds which 64 x 64 block"
             + ("\n(both consumers: two writers per block)" if any(r["owner"] == "both" for r in dq_blocks) else ""))
        axes[1][col].add_patch(Rectangle((0, 0), d, B_r, fill=False, edgecolor="black", lw=2.2, ls="--"))
        ax = axes[2][col]
        for i, r in enumerate(r for r in mine if r["panel"] == "smem"):
            x, w = int(r["x"]) / 1024, int(r["w"]) / 1024
            if w == 0:
                continue
            ax.barh(0, w, left=x, color=SMEM[i % len(SMEM)], edgecolor="white")
            if w >= 8:  # L_i, D_i (1-2 KB) go unlabelled
                ax.text(x + w / 2, 0, f"{r['owner']}\n{w:g} KB", ha="center", va="center", fontsize=6.5)
        ax.axvline(LIMIT / 1024, color="black", lw=1.2)
        ax.text(LIMIT / 1024, 0.45, " 227 KB", fontsize=7, va="center")
        ax.set_xlim(0, 240)
        ax.set_ylim(-0.5, 0.6)
        ax.set_yticks([])
        ax.tick_params(labelsize=7)
        ax.set_xlabel("shared memory (KB), in Smem's order (the thin slice: L_i, D_i)", fontsize=8)
    fig.suptitle("Chapter 14's tile policy (Cfg, fa3_bwd_config.h): at d = 64, 128 query rows give each step as much "
                 "work as at d = 128\nand each consumer its own rows of dQ_i; colour = consumer warpgroup 1 / 2 "
                 "(red: both add into the block). Dashed: the dQ_i tile.", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    save_small(fig, "14_fa3_backward", "bwd_tiles")


if __name__ == "__main__":
    main()
