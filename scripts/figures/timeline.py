"""Shared helpers of the schedule pictures (chapters 09, 12 and 14) and of the small PNGs.

The schedule tools (09_tensor_core_matmul_schedule, 12_fa3_hopper_schedule,
14_fa3_backward_schedule) print one CSV row per bar of the picture: panel, lane, agent,
category, label, start, end (cycles of the model in 09_tensor_core_matmul/schedule_model.h).
Flips of an mbarrier's phase are category "flip", the model's assumptions category "param".
These helpers only draw them.
"""
import argparse
import io
from collections import defaultdict

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle
from PIL import Image  # matplotlib's own dependency: it is there wherever matplotlib is

from common import ROOT

COPY, HELD, WAIT, STORE = "#dd8452", "#f3d9c4", "#e9ecef", "#55a868"
AGENT_COLOURS = ["#4c72b0", "#8172b2", "#64b5cd"]  # consumer 1, consumer 2, ...


def cli(doc):
    """--help (the script's docstring) and [BUILD_DIR], which common.model_csv reads; anything
    else is refused."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", help="the build folder (default: build/)")
    ap.parse_args()


def panels(rows):
    """{panel: {"bars": [...], "flips": [...], "params": {name: value}}} in the CSV's order."""
    out = {}
    for r in rows:
        p = out.setdefault(r["panel"], {"bars": [], "flips": [], "params": {}})
        if r["category"] == "param":
            name, value = r["label"].split("=", 1)
            p["params"][name] = value
        elif r["category"] == "flip":
            p["flips"].append({**r, "time": int(r["start"])})
        else:
            p["bars"].append({**r, "start": int(r["start"]), "end": int(r["end"])})
    return out


def merged(bars):
    """Bars of the same (lane, agent, label) that follow each other (the pieces of one softmax,
    the wgmma of one group) as one bar from the first start to the last end."""
    groups = defaultdict(list)
    for b in bars:
        groups[(b["lane"], b["agent"], b["label"], b["category"])].append(b)
    out = []
    for (lane, agent, label, category), bs in groups.items():
        bs.sort(key=lambda b: b["start"])
        out.append({"lane": lane, "agent": agent, "label": label, "category": category,
                    "start": bs[0]["start"], "end": bs[-1]["end"], "pieces": bs})
    return out


def lane_axis(ax, lanes, end, xlabel=True):
    """Lanes top to bottom, time left to right; call before drawing bars (their text needs the scale)."""
    ax.set_ylim(len(lanes), 0)
    ax.set_yticks([i + 0.5 for i in range(len(lanes))], lanes, fontsize=7.5)
    ax.set_xlim(0, end)
    ax.tick_params(axis="x", labelsize=7)
    for i in range(1, len(lanes)):
        ax.axhline(i, color="#dee2e6", lw=0.5)
    if xlabel:
        ax.set_xlabel("cycles of the modelled schedule (not measured)", fontsize=8)


def fits(ax, start, end, text, size=6.5):
    """Whether `text` fits between start and end (call after the x limits are set)."""
    x0, x1 = ax.transData.transform([(start, 0), (end, 0)])[:, 0]
    return abs(x1 - x0) > len(text) * size * 0.62 * ax.figure.dpi / 72 + 2


def bar(ax, y, start, end, colour, text="", height=0.7, hatch=None, edge="white", text_colour="white", size=6.5,
        top=None):
    """A bar in lane y (0 = top lane); `top` overrides where it starts inside the lane. The
    text is written only where it fits (set the x limits first)."""
    y0 = y + (1 - height) / 2 if top is None else y + top
    ax.add_patch(Rectangle((start, y0), end - start, height, facecolor=colour, edgecolor=edge, lw=0.4, hatch=hatch))
    if text and fits(ax, start, end, text, size):
        ax.text((start + end) / 2, y0 + height / 2, text, ha="center", va="center", fontsize=size, color=text_colour)


def save_small(fig, chapter, name, dpi=100, colours=64):
    """CHAPTER/figures/NAME.png as a palette PNG (the pictures are flat colours and text, and
    they are committed: a palette keeps them small)."""
    out = ROOT / chapter / "figures" / f"{name}.png"
    out.parent.mkdir(exist_ok=True)
    save_palette(fig, out, dpi, colours)
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size // 1024} KiB)")
    return out


def save_palette(fig, path, dpi=100, colours=64):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    image = Image.open(buf).convert("RGB")
    image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)


def draw_consumers(ax, p, y, consumers, soft_colours, extra=None):
    """The bars every schedule picture draws alike: each consumer's GEMMs in the tensor-core lane
    (in its colour, named where one has the tensor cores to itself), the issue marks, the waits,
    the stores and the merged softmax bars. `extra` draws any other category: extra(ax, bar, y)."""
    for b in p["bars"]:
        lane = b["lane"]
        if lane not in y:
            continue
        if b["category"] == "gemm":
            c = consumers.index(b["agent"])
            bar(ax, y[lane], b["start"], b["end"], AGENT_COLOURS[c], edge=AGENT_COLOURS[c])
        elif b["category"] == "issue":
            ax.plot(b["start"], y[lane] + 0.5, marker=">", ms=4, color=COPY)
        elif b["category"] == "wait":
            label = b["label"].replace("wgmma.", "").replace("wait for its turn", "its turn")
            bar(ax, y[lane], b["start"], b["end"], WAIT, label, hatch="///", edge="#adb5bd", text_colour="black",
                size=6)
        elif b["category"] == "store":
            bar(ax, y[lane], b["start"], b["end"], STORE, b["label"], size=6)
        elif extra:
            extra(ax, b, y)
    for g in merged([b for b in p["bars"] if b["category"] == "softmax"]):
        c = consumers.index(g["agent"])
        text = g["label"] if fits(ax, g["start"], g["end"], g["label"], 6) else g["label"].split()[-1]
        bar(ax, y[g["lane"]], g["start"], g["end"], soft_colours[c], text, text_colour="black", size=6)
    gemms = sorted(merged([b for b in p["bars"] if b["category"] == "gemm"]), key=lambda g: g["start"])
    for i, g in enumerate(gemms):  # named where one GEMM has the tensor cores to itself
        alone = all(o["end"] <= g["start"] or o["start"] >= g["end"] for o in gemms[:i] + gemms[i + 1:])
        text = " ".join(g["label"].split()[1:])  # the label without its "C1 "
        if alone and fits(ax, g["start"], g["end"], text, 6):
            ax.text((g["start"] + g["end"]) / 2, y[g["lane"]] + 0.5, text, fontsize=6, ha="center", va="center",
                    color="white", fontweight="bold")
