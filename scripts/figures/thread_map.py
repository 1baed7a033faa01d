#!/usr/bin/env python3
"""Chapter 01: which thread adds which element, for the three kernels (n = 19, blocks of 4,
a grid of 8 threads for the grid-stride kernels). Data: 01_vector_add --print-model csv.

    scripts/figures/thread_map.py [BUILD_DIR]      -> 01_vector_add/figures/thread_map.png
"""
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from common import model_csv, save

N, THREADS = 19, 8
rows = model_csv("01_vector_add", "--print-model", "csv", "--model-n", N, "--model-threads", THREADS)
kernels = ["one_per_element", "grid_stride", "float4"]
cmap = plt.get_cmap("tab20")

fig, axes = plt.subplots(len(kernels), 1, figsize=(10, 4.2), sharex=True)
for ax, kernel in zip(axes, kernels):
    runs = [r for r in rows if r["kernel"] == kernel]
    for r in runs:
        t, first, width = int(r["thread"]), int(r["first"]), int(r["width"])
        ax.add_patch(Rectangle((first, 0), width, 1, facecolor=cmap(t % 20), edgecolor="black", lw=1.5 if width == 4 else 0.6))
        for e in range(first, first + width):
            ax.text(e + 0.5, 0.5, f"t{t}", ha="center", va="center", fontsize=8)
    ax.set_xlim(0, N)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    own = -(-N // 4) * 4  # blocks_for(n) blocks of 4
    grid = {"one_per_element": f"blocks_for(n) = {own // 4} blocks of 4 = {own} threads: one element each, "
                               f"thread{'s' if own - N > 1 else ''} {', '.join(map(str, range(N, own)))} "
                               f"past n: the bounds check",
            "grid_stride": f"{THREADS} threads: t, t + {THREADS}, t + {2 * THREADS}, ...",
            "float4": f"{THREADS} threads: float4 number t (thick boxes), then the n % 4 = {N % 4} tail elements"}[kernel]
    ax.set_title(f"{kernel}: {grid}", fontsize=10, loc="left")
axes[-1].set_xticks([e + 0.5 for e in range(N)])
axes[-1].set_xticklabels(range(N), fontsize=8)
axes[-1].set_xlabel("element of c (n = 19); each box: the thread that writes it")
fig.suptitle("Chapter 01: the first-person view, one row per kernel", fontsize=11)
fig.tight_layout()
save(fig, "01_vector_add", "thread_map")
