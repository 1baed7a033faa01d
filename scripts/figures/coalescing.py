#!/usr/bin/env python3
"""Chapter 02: the elements one warp touches at step k = 0 in A, B and C, for both thread
mappings, with the 32-byte sectors the memory system must fetch for them shaded.
Shape M = N = K = 32 (a row is 128 bytes, 4 sectors); at 4096 the counts are the same.
Data: 02_matmul_naive --print-model csv.

    scripts/figures/coalescing.py [BUILD_DIR]      -> 02_matmul_naive/figures/coalescing.png
"""
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from common import model_csv, save

S = 32  # M = N = K
rows = model_csv("02_matmul_naive", "--print-model", "csv", "--M", S, "--N", S, "--K", S)
kernels = ["naive_row_per_x", "naive_col_per_x"]
ops = {"A": "A[row, k]  (M x K)", "B": "B[k, col]  (K x N)", "C": "C[row, col]  (M x N), the store"}
cmap = plt.get_cmap("viridis")

fig, axes = plt.subplots(2, 3, figsize=(12, 8.8))
for r, kernel in enumerate(kernels):
    for c, op in enumerate(ops):
        ax = axes[r][c]
        pts = [x for x in rows if x["kernel"] == kernel and x["operand"] == op]
        sectors = {int(x["sector"]) for x in pts}
        for v in range(S + 1):  # faint cell grid, sector boundaries every 8 floats
            ax.axvline(v, color="#adb5bd" if v % 8 == 0 else "#f1f3f5", lw=0.9 if v % 8 == 0 else 0.4, zorder=0)
            ax.axhline(v, color="#f1f3f5", lw=0.4, zorder=0)
        for sec in sectors:  # a sector is 8 floats of one row
            e0 = sec * 8
            ax.add_patch(Rectangle((e0 % S, e0 // S), 8, 1, facecolor="#ffd8a8", edgecolor="none", zorder=1))
            ax.add_patch(Rectangle((e0 % S, e0 // S), 8, 1, facecolor="none", edgecolor="#e8590c", lw=1.3, zorder=3))
        for x in pts:
            e = int(x["offset"])
            ax.add_patch(Rectangle((e % S, e // S), 1, 1, facecolor=cmap(int(x["lane"]) / 31), edgecolor="none",
                                   zorder=2))
        ax.set_xlim(0, S)
        ax.set_ylim(S, 0)
        ax.set_aspect("equal")
        ax.set_xticks(range(0, S + 1, 8))
        ax.set_yticks(range(0, S + 1, 8))
        ax.tick_params(labelsize=7)
        distinct = len({int(x["offset"]) for x in pts})
        ax.set_title(f"{ops[op]}\n{distinct} address{'es' if distinct > 1 else ''} -> {len(sectors)} sector"
                     f"{'s' if len(sectors) > 1 else ''}: {32 * len(sectors)} B fetched for {4 * distinct} B used",
                     fontsize=9)
    axes[r][0].set_ylabel(f"{kernel}\nrow", fontsize=10)
fig.suptitle("Chapter 02: one warp (32 lanes, coloured by lane) at step k = 0. Orange: the 32-byte sectors fetched.\n"
             "Grey lines: sector boundaries (8 floats). Same arithmetic, same instructions; only the addresses differ.",
             fontsize=10)
fig.tight_layout(h_pad=2.5)
save(fig, "02_matmul_naive", "coalescing")
