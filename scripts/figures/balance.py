#!/usr/bin/env python3
"""Chapter 15: how the packed documents' work spreads over an H200's 132 SMs, on the schedule model
of `15_attention_variants_block_masks --balance-ctas` (tiles visited; a CTA's fixed costs left out).
Left, the forward's persistent CTAs: the tiles of the rows each takes, its rows sorted heaviest first
and dealt round after round, or in a snake draft. Right, the backward's CTAs, one per key tile, each
started on the SM that frees up first: when each SM finishes, with each head's key tiles launched in
order or longest walk first. Each panel's SMs are sorted; the dashed line is the mean. What the
orders buy on the GPU is measured, not drawn here: 15's README.

    scripts/figures/balance.py [BUILD_DIR]      -> 15_attention_variants/figures/balance.png
"""
import matplotlib.pyplot as plt

from common import model_csv, save

PANELS = (("forward", (("dealt", "rows dealt round after round", "#adb5bd"),
                       ("snake", "rows in a snake draft", "#1c7ed6")), "tiles of the CTA's rows"),
          ("backward", (("in_order", "key tiles in order", "#adb5bd"),
                        ("longest_first", "key tiles longest walk first", "#e8590c")), "tiles walked until the SM finishes"))


def main():
    rows = model_csv("15_attention_variants_block_masks", "--balance-ctas")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    for ax, (direction, orders, ylabel) in zip(axes, PANELS):
        for order, label, color in orders:  # (the same work in both orders: the same mean)
            v = sorted((float(r["tiles"]) for r in rows if r["direction"] == direction and r["order"] == order),
                       reverse=True)
            mean = sum(v) / len(v)
            ax.plot(range(len(v)), v, color=color, linewidth=1.6, label=f"{label}: the largest {max(v) / mean:.3f}x the mean")
        ax.axhline(mean, color="#495057", linestyle="--", linewidth=0.8)
        ax.set_xlabel("CTA (forward) or SM (backward), sorted")
        ax.set_ylabel(ylabel)
        ax.set_title(f"documents, the {direction}", fontsize=9)
        ax.legend(fontsize=7, frameon=False, loc="upper right")
    fig.suptitle("the packed documents (B1 H16 N16384, 7 documents) on 132 SMs: the schedule model", fontsize=9, y=1.03)
    save(fig, "15_attention_variants", "balance")


if __name__ == "__main__":
    main()
