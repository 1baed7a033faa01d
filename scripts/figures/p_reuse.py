#!/usr/bin/env python3
"""Chapter 10: why P~ needs no trip through shared memory. The C fragments of two adjacent n8
tiles of S (what mma.m16n8k16 leaves in registers) against the A fragment of one k16 tile of
P~ (what the next mma.m16n8k16 reads), lane by lane and register by register. Data:
10_fa2_tensor_cores_p_reuse (tc_layout.h's mma_c and mma_a, paired as c_to_a pairs them; the
tool refuses to print a pair that does not coincide).

    scripts/figures/p_reuse.py [BUILD_DIR]      -> 10_fa2_tensor_cores/figures/p_reuse.png
"""
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from common import model_csv
from timeline import cli, save_small

REG = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]  # a0 .. a3, and the c pairs that become them
LANE = 5  # the lane drawn with a frame and spelled out


def grid(ax, cells, text, title, divider):
    for c in cells:
        r, k = int(c["row"]), int(c["col"])
        ax.add_patch(Rectangle((k, r), 1, 1, facecolor=REG[int(c["a_reg"])], alpha=0.45 + 0.35 * int(c["a_half"]),
                               edgecolor="white", lw=0.8))
        ax.text(k + 0.5, r + 0.5, text(c), ha="center", va="center", fontsize=5.6)
        if int(c["lane"]) == LANE:
            ax.add_patch(Rectangle((k, r), 1, 1, fill=False, edgecolor="black", lw=1.8))
    if divider:
        ax.axvline(8, color="black", lw=1.2)
    ax.set_xlim(0, 16)
    ax.set_ylim(16, 0)
    ax.set_aspect("equal")
    ax.set_xticks([x + 0.5 for x in range(16)], [str(x) for x in range(16)], fontsize=6)
    ax.set_yticks([y + 0.5 for y in range(16)], [str(y) for y in range(16)], fontsize=6)
    ax.set_xlabel("key within the k16 tile (16k + ...)", fontsize=8)
    ax.set_ylabel("query row within the m16 tile", fontsize=8)
    ax.set_title(title, fontsize=9)


def main():
    cli(__doc__)
    cells = model_csv("10_fa2_tensor_cores_p_reuse")
    fig, axes = plt.subplots(1, 3, figsize=(15, 6.2), gridspec_kw={"width_ratios": [1, 1, 0.62]})
    source = ["c_lo", "c_hi"]
    grid(axes[0], cells, lambda c: f"T{c['lane']}\n{source[int(c['n_tile'])]}[{c['c_index']}]",
         "$S_{ij}$ as mma left it: C fragments of n-tiles 2k (c_lo, keys 0-7)\nand 2k + 1 (c_hi, keys 8-15), "
         "fp32, lane T holds c[0..3]", True)
    grid(axes[1], cells, lambda c: f"T{c['lane']}\na{c['a_reg']}.{'lo' if c['a_half'] == '0' else 'hi'}",
         "$\\tilde{P}_{ij}$ as the next mma wants it: the A fragment of\none k16 tile, 4 registers of 2 bf16 "
         "(lo, hi halves)",
         False)
    mine = sorted((c for c in cells if int(c["lane"]) == LANE), key=lambda c: (int(c["a_reg"]), int(c["a_half"])))
    lines = [f"lane {LANE} (g = {LANE // 4}, t = {LANE % 4}), framed:", ""]
    for reg in range(4):
        lo, hi = (c for c in mine if int(c["a_reg"]) == reg)
        src = source[int(lo["n_tile"])]
        lines.append(f"a{reg} = pack_bf16x2({src}[{lo['c_index']}], {src}[{hi['c_index']}])")
        lines.append(f"     = P[{lo['row']}][{lo['col']}], P[{hi['row']}][{hi['col']}]")
    lines += ["", "Same lane, same row, same column,", "for all 32 lanes and 16 x 16 elements:",
              "c_to_a (fa2_tc.cuh) only rounds to bf16", "and packs pairs; no shuffle, no",
              "shared memory, no barrier."]
    axes[2].axis("off")
    axes[2].text(0, 0.95, "\n".join(lines), va="top", fontsize=8.5, family="monospace")
    fig.suptitle("Chapter 10: $\\tilde{P}$ is reused from the registers that hold S. Colour = the A register "
                 "(a0..a3) an element ends up in; the two grids match cell for cell.", fontsize=10.5)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    save_small(fig, "10_fa2_tensor_cores", "p_reuse")


if __name__ == "__main__":
    main()
