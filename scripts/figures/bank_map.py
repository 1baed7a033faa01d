#!/usr/bin/env python3
"""Chapter 03: the shared-memory bank each lane's word falls in, without and with the
padding the kernels use. A column of squares is one bank; squares stacked in one bank are
distinct words it must deliver one after another (a conflict); the tallest column is the
number of passes (wavefronts). For float4 reads the first quarter warp (8 lanes) is shown.
Data: 03_matmul_tiled --print-model csv (bank_model.cpp).

    scripts/figures/bank_map.py [BUILD_DIR]        -> 03_matmul_tiled/figures/bank_map.png
"""
from collections import defaultdict

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from common import model_csv, save

rows = model_csv("03_matmul_tiled", "--print-model", "csv")
scenarios = ["32 x 32 tile column read", "register_tiled A_tile store", "FA tiles K_j float4 read (d = 64)"]
cmap = plt.get_cmap("viridis")

fig, axes = plt.subplots(len(scenarios), 2, figsize=(13, 9.5), gridspec_kw={"height_ratios": [3.2, 1, 1.6]})
for r, name in enumerate(scenarios):
    pads = sorted({int(x["pad"]) for x in rows if x["scenario"] == name})
    tallest = 1
    for c, pad in enumerate(pads):
        ax = axes[r][c]
        lanes = [x for x in rows if x["scenario"] == name and int(x["pad"]) == pad]
        width = int(lanes[0]["width"])
        phase = lanes[: 32 // width]  # the first phase: 128 bytes
        words = defaultdict(dict)  # bank -> word -> lanes
        for x in phase:
            for e in range(width):
                w = int(x["word"]) + e
                words[w % 32].setdefault(w, []).append(int(x["lane"]))
        for bank, ws in words.items():
            for h, (w, ls) in enumerate(sorted(ws.items())):
                shade = ls[0] / max(1, len(phase) - 1)
                ax.add_patch(Rectangle((bank, h), 1, 1, facecolor=cmap(shade), edgecolor="white", lw=0.8))
                label = str(ls[0]) if len(ls) == 1 else f"{ls[0]}+"
                ax.text(bank + 0.5, h + 0.5, label, ha="center", va="center", fontsize=6,
                        color="white" if shade < 0.6 else "black")
            tallest = max(tallest, len(ws))
        wave, ideal = int(lanes[0]["wavefronts"]), int(lanes[0]["ideal"])
        what = "float4, lanes 0-7 shown" if width == 4 else "4-byte words"
        ax.set_title(f"{name}, pad {pad} ({what}): {wave} wavefront{'s' if wave > 1 else ''}, ideal {ideal}",
                     fontsize=9)
        ax.set_xlim(0, 32)
        ax.set_xticks(range(0, 33, 4))
        ax.tick_params(labelsize=7)
    for c in range(2):
        axes[r][c].set_ylim(0, tallest)
        axes[r][c].set_yticks(range(0, tallest + 1, max(1, tallest // 4)))
    axes[r][0].set_ylabel("words per bank", fontsize=8)
fig.text(0.5, -0.01, "x: bank (word address mod 32). A square: one word, labelled with the lane that asks for it "
         "(n+: lane n and others share it, a broadcast). Height of a column: passes that bank needs.",
         ha="center", fontsize=9)
fig.suptitle("Chapter 03: one warp's shared-memory request, bank by bank. Left: unpadded. Right: with the "
             "kernel's padding.", fontsize=11)
fig.tight_layout()
save(fig, "03_matmul_tiled", "bank_map")
