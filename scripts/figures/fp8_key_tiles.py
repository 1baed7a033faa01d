#!/usr/bin/env python3
"""Chapter 12: what FP8's key tiles of 128, 192 and 224 keys take from a CTA. Left, the shared
memory (12_fa3_hopper_schedule --fp8-key-tiles, from fa3_config.h's Cfg): Q_i, O's buffer and the
K/V stages, each stage K_j and Vt_j, whose boxes of 128 keys load the keys past a 192- or 224-key
tile too; hatched, one stage more than the tile policy gives it (at 192 and 224 keys it would not
fit under the H200's 227 KiB). Right, the registers a
consumer thread holds for S, P~ and O within the 240 that setmaxnreg gives it (the two S tiles
of the intra-warpgroup loop are S in fp32 and P~ in e4m3). What each tile buys is measured, not
drawn here: the FP8 step table of 12's README.

    scripts/figures/fp8_key_tiles.py [BUILD_DIR]      -> 12_fa3_hopper/figures/fp8_key_tiles.png
"""
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from common import model_csv, save

COLOR = {"Q_i": "#868e96", "O": "#adb5bd", "K_j": "#1c7ed6", "Vt_j read": "#e8590c",
         "Vt_j past the tile": "#ffc078", "barriers and alignment": "#dee2e6"}
KIB = 1024


def main():
    rows = model_csv("12_fa3_hopper_schedule", "--fp8-key-tiles")
    tiles = sorted({int(r["B_c"]) for r in rows})
    fig, (ax, ar) = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [3, 1.3]})
    limit = int(rows[0]["smem_limit"]) / KIB
    for y, b_c in enumerate(tiles):
        mine = {r["part"]: r for r in rows if int(r["B_c"]) == b_c}
        stages = int(mine["K_j"]["stages"])
        x = 0.0
        for part in ("Q_i", "O", "barriers and alignment"):
            w = int(mine[part]["bytes"]) / KIB
            ax.barh(y, w, left=x, color=COLOR[part], edgecolor="white", linewidth=0.5)
            x += w
        stage = [(p, int(mine[p]["bytes"]) / KIB) for p in ("K_j", "Vt_j read", "Vt_j past the tile")]
        for s in range(stages + 1):  # the stages, then the one that would not fit
            ghost = s == stages
            x0 = x
            for part, w in stage:
                ax.barh(y, w, left=x, color="none" if ghost else COLOR[part], edgecolor=COLOR[part] if ghost else "white",
                        hatch="//" if ghost else None, linewidth=0.5)
                x += w
            if not ghost:
                ax.text((x0 + x) / 2, y, f"stage {s + 1}", ha="center", va="center", fontsize=7, color="white")
        ax.text(x + 3, y, f"{stages + 1} stages: {x:.0f} KiB" if x > limit else "", va="center", fontsize=7)
    ax.axvline(limit, color="#c92a2a", linestyle="--", linewidth=1)
    ax.text(limit, -0.55, f" {limit:.0f} KiB a CTA may use", color="#c92a2a", fontsize=7, va="bottom")
    ax.set_yticks(range(len(tiles)), [f"B_c = {b}" for b in tiles])
    ax.invert_yaxis()
    ax.set_xlabel("shared memory per CTA (KiB)")
    ax.set_title("the K/V ring's stages, and one more (hatched)", fontsize=9, pad=14)
    ax.legend(handles=[Patch(color=c, label=part) for part, c in COLOR.items()], fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.22), ncol=6, frameon=False)
    for y, b_c in enumerate(tiles):
        r = next(r for r in rows if int(r["B_c"]) == b_c)
        x = 0
        for name, key, c in (("S (fp32)", "s_regs", "#1c7ed6"), ("P~ (e4m3)", "p_regs", "#e8590c"),
                             ("O (fp32)", "o_regs", "#868e96")):
            w = int(r[key])
            ar.barh(y, w, left=x, color=c, edgecolor="white", linewidth=0.5, label=name if y == 0 else None)
            ar.text(x + w / 2, y, str(w), ha="center", va="center", fontsize=7, color="white")
            x += w
    budget = int(rows[0]["consumer_regs"])
    ar.axvline(budget, color="#c92a2a", linestyle="--", linewidth=1)
    ar.set_xlim(0, budget * 1.05)
    ar.set_yticks(range(len(tiles)), [""] * len(tiles))
    ar.invert_yaxis()
    ar.set_xlabel(f"registers per consumer thread (of {budget})")
    ar.set_title("the tiles a consumer holds", fontsize=9, pad=14)
    ar.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False)
    save(fig, "12_fa3_hopper", "fp8_key_tiles")


if __name__ == "__main__":
    main()
