#!/usr/bin/env python3
"""Chapters 05-07: the loop order of FA1, FA2 and the backward on the N x N plane of
(query, key) pairs, tile by tile, with what moves to and from HBM and what sits in shared
memory. Data: 07_fa_backward_loop_trace (the loop nests of the kernels, checked against
the tile models by the chapters' tests), at the tiles the kernels use on an H200.

    scripts/figures/fa_loops.py [BUILD_DIR]
      -> 05_fa1_forward/figures/fa1_loops.png     FA1: one block per head, outer loop over K_j
      -> 06_fa2_forward/figures/fa2_loops.png     FA2: one block per Q_i, inner loop over K_j
      -> 06_fa2_forward/figures/o_owners.png      which warp holds each element of O_i (split-Q)
      -> 07_fa_backward/figures/backward_loops.png the backward: one block per K_j, Q_i rotated
"""
from collections import defaultdict

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from common import model_csv, save

N, D = 1024, 64
TRACE = "07_fa_backward_loop_trace"


def trace(what, mask="dense", d=D):
    return model_csv(TRACE, "--what", what, "--N", N, "--d", d, "--mask", mask)


tiles = {r["kernel"]: {k: int(v) for k, v in r.items() if k != "kernel"} for r in trace("tiles")}
smem = defaultdict(list)
for r in trace("smem"):
    smem[r["kernel"]].append((r["part"], int(r["floats"])))


def plane(ax, visits, t, label, colour, title, total_tiles):
    """Draws the N x N plane: one rectangle per visited tile pair, skipped pairs hatched."""
    seen = set()
    for v in visits:
        i, j = int(v["i"]), int(v["j"])
        seen.add((i, j))
        y0, x0 = i * t["B_r"], j * t["B_c"]
        h, w = min(t["B_r"], N - y0), min(t["B_c"], N - x0)
        rgba = colour(v)
        ax.add_patch(Rectangle((x0, y0), w, h, facecolor=rgba, edgecolor="white", lw=0.6))
        light = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] > 0.55
        ax.text(x0 + w / 2, y0 + h / 2, label(v), ha="center", va="center", fontsize=5.5 if w * h < 8000 else 7,
                color="black" if light else "white")
    for i in range(t["T_r"]):
        for j in range(t["T_c"]):
            if (i, j) not in seen:
                y0, x0 = i * t["B_r"], j * t["B_c"]
                ax.add_patch(Rectangle((x0, y0), min(t["B_c"], N - x0), min(t["B_r"], N - y0), facecolor="#f1f3f5",
                                       edgecolor="#ced4da", hatch="///", lw=0.4))
    ax.set_xlim(0, N)
    ax.set_ylim(N, 0)
    ax.set_aspect("equal")
    ax.set_xlabel("key (K_j, V_j tiles)", fontsize=8)
    ax.set_ylabel("query (Q_i, O_i tiles)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.set_title(f"{title}\n{len(seen)} of {total_tiles} tile pairs visited", fontsize=9)


def smem_bar(ax, kernel, note):
    """Shared memory of one block, stacked by part, in KiB."""
    left = 0.0
    cmap = plt.get_cmap("tab10")
    for k, (part, floats) in enumerate(smem[kernel]):
        kib = 4 * floats / 1024
        ax.barh(0, kib, left=left, color=cmap(k), edgecolor="white")
        if kib > 4:
            ax.text(left + kib / 2, 0, f"{part}\n{kib:.1f}", ha="center", va="center", fontsize=7, color="white")
        left += kib
    ax.set_xlim(0, 227)  # the H200's 227 KiB per block
    ax.set_yticks([])
    ax.tick_params(labelsize=7)
    ax.set_xlabel("KiB of shared memory per block (axis: the H200's 227 KiB opt-in limit)", fontsize=8)
    ax.set_title(f"on chip, one block: {left:.1f} KiB in shared memory; {note}", fontsize=9)


def traffic(visits, keys):
    return {k: sum(float(v[c]) for v in visits for c in cols) / 1e6 for k, cols in keys.items()}


def traffic_bars(ax, groups, title):
    """groups: {label: {tensor: MB}}, side by side per tensor."""
    tensors = list(next(iter(groups.values())).keys())
    width = 0.8 / len(groups)
    for g, (label, mb) in enumerate(groups.items()):
        xs = [t + g * width for t in range(len(tensors))]
        bars = ax.bar(xs, [mb[t] for t in tensors], width, label=label)
        for b, t in zip(bars, tensors):
            if mb[t] > 0:
                ax.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{mb[t]:.3g}", ha="center", va="bottom",
                        fontsize=6)
    ax.set_xticks([t + 0.4 - width / 2 for t in range(len(tensors))])
    ax.set_xticklabels(tensors, fontsize=7)
    ax.tick_params(labelsize=7)
    ax.set_ylabel("MB per head", fontsize=8)
    ax.set_title(title, fontsize=9)
    if len(groups) > 1:
        ax.legend(fontsize=7)


FA1_KEYS = {"Q read": ["Q_read"], "K read": ["K_read"], "V read": ["V_read"], "O read": ["O_read"],
            "O write": ["O_write"], "l, m": ["lm_read", "lm_write"], "L write": []}
FA2_KEYS = {"Q read": ["Q_read"], "K read": ["K_read"], "V read": ["V_read"], "O read": [], "O write": ["O_write"],
            "l, m": [], "L write": ["L_write"]}
viridis = plt.get_cmap("viridis")
tab20 = plt.get_cmap("tab20")

# ---- FA1 ----
t1 = tiles["fa1"]
fa1 = {m: trace("fa1", m) for m in ("dense", "causal")}
fig = plt.figure(figsize=(14, 7.6))
grid = fig.add_gridspec(2, 3, height_ratios=[3, 1])
steps = len(fa1["dense"])
for c, m in enumerate(("dense", "causal")):
    plane(fig.add_subplot(grid[0, c]), fa1[m], t1, lambda v: v["step"],
          lambda v: viridis(int(v["step"]) / max(1, steps - 1)),
          f"FA1, {m}: one block per head visits the pairs in this order\n(outer loop: key tile j; inner: query "
          f"tile i; B_r = {t1['B_r']}, B_c = {t1['B_c']})", t1["T_r"] * t1["T_c"])
traffic_bars(fig.add_subplot(grid[0, 2]), {"FA1 dense": traffic(fa1["dense"], FA1_KEYS)},
             f"HBM traffic of one head, N = {N}, d = {D}\n(each Q_i and O_i crosses HBM T_c = {t1['T_c']} times)")
smem_bar(fig.add_subplot(grid[1, :]), "fa1", "O_i, l_i, m_i live in HBM between visits")
fig.suptitle(f"Chapter 05, FA1 (Algorithm 1) at N = {N}, d = {D}: the loop order, and what is on chip and in HBM",
             fontsize=11)
fig.tight_layout(rect=(0, 0, 1, 0.96), h_pad=2.5)
save(fig, "05_fa1_forward", "fa1_loops")

# ---- FA2 ----
t2 = tiles["fa2"]
fa2 = {m: trace("fa2", m) for m in ("dense", "causal")}
fig = plt.figure(figsize=(14, 7.6))
grid = fig.add_gridspec(2, 3, height_ratios=[3, 1])
for c, m in enumerate(("dense", "causal")):
    plane(fig.add_subplot(grid[0, c]), fa2[m], t2, lambda v: v["step"], lambda v: tab20(int(v["block"]) % 20),
          f"FA2, {m}: one block per query tile (colour), side by side;\nthe number is the block's step j "
          f"(B_r = {t2['B_r']}, B_c = {t2['B_c']})", t2["T_r"] * t2["T_c"])
traffic_bars(fig.add_subplot(grid[0, 2]),
             {"FA1 (ch. 05)": traffic(fa1["dense"], FA1_KEYS), "FA2": traffic(fa2["dense"], FA2_KEYS)},
             f"HBM traffic of one head, N = {N}, d = {D}, dense\n(FA2: Q read once, O written once; "
             f"K, V read T_r = {t2['T_r']} times)")
smem_bar(fig.add_subplot(grid[1, :]), "fa2", "O_i, l_i, m_i in registers for the whole loop")
fig.suptitle(f"Chapter 06, FA2 at N = {N}, d = {D}: the loops swapped", fontsize=11)
fig.tight_layout(rect=(0, 0, 1, 0.96), h_pad=2.5)
save(fig, "06_fa2_forward", "fa2_loops")

# ---- FA2: who holds O_i ----
owner = [[0] * D for _ in range(128)]
for r in trace("owners"):
    owner[int(r["row"])][int(r["col"])] = int(r["warp"])
fig, axes = plt.subplots(1, 2, figsize=(12, 6.2), gridspec_kw={"width_ratios": [1, 1.4]})
axes[0].imshow(owner, cmap="tab10", vmin=0, vmax=9, interpolation="nearest", aspect="auto")
axes[0].set_title(f"all of O_i (128 x {D}): colour = the warp that holds the element", fontsize=9)
axes[0].set_xlabel("column of O_i (head dim)", fontsize=8)
axes[0].set_ylabel("row of O_i (query)", fontsize=8)
axes[0].tick_params(labelsize=7)
rows = 32
axes[1].imshow([r[:16] for r in owner[:rows]], cmap="tab10", vmin=0, vmax=9, interpolation="nearest", aspect="auto")
for r in range(rows):
    axes[1].text(7.5, r, f"row {r}: warp {owner[r][0]} (all {D} columns)", ha="center", va="center", fontsize=7,
                 color="white")
axes[1].set_xticks([])
axes[1].set_yticks([])
axes[1].set_title(f"rows 0-{rows - 1} up close: a row never spans two warps", fontsize=9)
fig.suptitle(f"Chapter 06, d = {D}: split-Q. Each of the 8 warps holds whole rows of O_i, so the P~V product and the "
             "rescale need no sum across warps.\nSplit-K (the original FA1 kernel) gave each warp a slice of the keys "
             "instead: every warp held a partial O_i for every row, summed at the end through shared memory.",
             fontsize=9)
fig.tight_layout(rect=(0, 0, 1, 0.93))
save(fig, "06_fa2_forward", "o_owners")

# ---- backward ----
tb = tiles["bwd"]
bwd_dense = trace("bwd", "dense")
bwd_causal = trace("bwd", "causal")
fig = plt.figure(figsize=(15, 8))
grid = fig.add_gridspec(2, 3, height_ratios=[3, 0.9])
steps = tb["T_r"]
panels = [([v for v in bwd_dense if v["rotate"] == "1"], "dense, as the kernel runs it: block j starts at\n"
           "query tile j; each colour (a step) hits each dQ_i once"),
          ([v for v in bwd_dense if v["rotate"] == "0"], "dense without the rotation (not built): at step s\n"
           "every block adds into dQ_s at once"),
          ([v for v in bwd_causal if v["rotate"] == "1"], "causal: block j starts at the diagonal tile\n"
           "and skips the query tiles before it")]
for c, (visits, title) in enumerate(panels):
    plane(fig.add_subplot(grid[0, c]), visits, tb, lambda v: v["step"],
          lambda v: viridis(int(v["step"]) / max(1, steps - 1)), title, tb["T_r"] * tb["T_c"])
smem_bar(fig.add_subplot(grid[1, :]), "bwd", "dK_j, dV_j in registers; dQ_i added into HBM (atomics)")
fig.suptitle(f"Chapter 07, the backward (dk_dv_kernel) at N = {N}, d = {D}: one block per key tile (a column), "
             f"walking the query tiles;\ncolour and number = the block's step (B_r = B_c = {tb['B_r']})", fontsize=11)
fig.tight_layout(rect=(0, 0, 1, 0.93), h_pad=4)
save(fig, "07_fa_backward", "backward_loops")
