#!/usr/bin/env python3
"""Chapter 15: the block masks of the built-in masks, as the kernels will walk them. One head of
N = 2048 queries and keys in tiles of 64 queries x 128 keys: each tile is empty (skipped), full
(computed without evaluating the mask) or partial (the mask evaluated per element), with the
fraction of tiles that are not skipped. Data: 15_attention_variants_block_masks (the builder the
CpuVariants tests check against every element).

    scripts/figures/block_masks.py [BUILD_DIR]      -> 15_attention_variants/figures/block_masks.png
"""
import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap

from common import model_csv
from timeline import cli, save_small

COLOURS = ListedColormap(["#f8f9fa", "#ffc078", "#1c7ed6"])  # empty, partial, full (TileKind)


def main():
    cli(__doc__)
    rows = model_csv("15_attention_variants_block_masks")
    masks = list(dict.fromkeys(r["mask"] for r in rows))
    fig, axes = plt.subplots(1, len(masks), figsize=(3.3 * len(masks), 4.6))
    for ax, name in zip(axes, masks):
        tiles = [r for r in rows if r["mask"] == name]
        T_r, T_c = 1 + max(int(r["i"]) for r in tiles), 1 + max(int(r["j"]) for r in tiles)
        grid = [[0] * T_c for _ in range(T_r)]
        for r in tiles:
            grid[int(r["i"])][int(r["j"])] = int(r["kind"])
        ax.imshow(grid, cmap=COLOURS, vmin=0, vmax=2, aspect=T_c / T_r * 2, interpolation="nearest")
        ax.set_title(f"{name}\n{100 * float(tiles[0]['density']):.0f}% of tiles visited", fontsize=9)
        ax.set_xlabel("key tile j (128 keys)", fontsize=8)
        ax.set_xticks([]), ax.set_yticks([])
    axes[0].set_ylabel("query tile i (64 queries)", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS(k)) for k in range(3)]
    fig.legend(handles, ["empty: skipped", "partial: mask per element", "full: no mask"], loc="lower center",
               ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_small(fig, "15_attention_variants", "block_masks")


if __name__ == "__main__":
    main()
