#!/usr/bin/env python3
"""Chapter 04: the online-softmax merge, element by element and in blocks, on one row. Each step's
bar is the new running sum l, split into the two terms of the merge: the old sum moved to the new max,
l e^(m - m'), and what the step adds, e^(x_j - m') (an element) or l~ e^(m~ - m') (a block). Where the
max jumps, the old part shrinks: that is the rescaling. Data: 04_online_softmax --trace --x ROW --block 3,
the (m, l) tables the chapter's CPU code prints (osm::print_trace: osm::update and osm::merge, the
statements the kernels run); the script only parses and draws them, and checks that the two drawn terms
add up to the printed l.

    scripts/figures/online_softmax.py [BUILD_DIR]      -> 04_online_softmax/figures/online_softmax.png
"""
import math
import re
import subprocess
import sys

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from common import build_dir, save

ROW = [1, 3, 2, 0, 4.5, 3.5, 2, 5]  # not exercise 1's row: that one is for the learner's pencil
BLOCK = 3
NUM = r"(-?inf|-?[\d.]+(?:e[-+]?\d+)?)"


def trace(build):
    exe = build / "bin" / "04_online_softmax"
    if not exe.exists():
        sys.exit(f"{exe} not found: build it first (cmake --build {build} --target 04_online_softmax)")
    args = [str(exe), "--trace", "--x", ",".join(f"{v:g}" for v in ROW), "--block", str(BLOCK)]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)} failed (exit {run.returncode}):\n{run.stderr}")
    # The executable traces its two built-in rows first; ours is the last "x = [...]" section.
    section = run.stdout[run.stdout.rindex("\nx = ["):]
    elements, blocks = [], []
    for line in section.splitlines():
        m = re.match(rf"\s+(\d+)\s+{NUM}\s+{NUM}\s+{NUM}\s+(=|\()", line)
        if m:
            elements.append(dict(j=int(m.group(1)), x=float(m.group(2)), m=float(m.group(3)), l=float(m.group(4))))
            continue
        m = re.match(rf"\s+(\d+)\s+x_(\d+)\.\.x_(\d+)\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+=", line)
        if m:
            blocks.append(dict(first=int(m.group(2)), last=int(m.group(3)), mt=float(m.group(4)),
                               lt=float(m.group(5)), m=float(m.group(6)), l=float(m.group(7))))
    if len(elements) != len(ROW) or not blocks:
        sys.exit(f"online_softmax.py: could not read the trace of {ROW} from:\n{section}")
    return elements, blocks


def terms(m_old, l_old, m_new, add_m, add_l, l_printed):
    """The two terms of l' = l e^(m - m') + l_add e^(m_add - m'), checked against the printed l'."""
    old = 0.0 if l_old == 0 else l_old * math.exp(m_old - m_new)
    new = add_l * math.exp(add_m - m_new)
    if abs(old + new - l_printed) > 1e-4 * max(1.0, l_printed):
        sys.exit(f"online_softmax.py: {old} + {new} != {l_printed}: the trace and the merge rule disagree")
    return old, new


def label(ax, x, height, text):
    """The rescale factor of a shrunk old sum, just right of its bar."""
    ax.text(x + 0.04, max(height / 2, 0.18), text, ha="left", va="center", fontsize=7, color="#e8590c", fontweight="bold")


def main():
    elements, blocks = trace(build_dir())
    old_c, new_c, jump_c = "#adb5bd", "#4c6ef5", "#e8590c"
    fig, axes = plt.subplots(2, 1, figsize=(11, 7.6), gridspec_kw=dict(height_ratios=[1.15, 1]))

    ax = axes[0]
    m_old, l_old = -math.inf, 0.0
    for e in elements:
        j = e["j"]
        old, new = terms(m_old, l_old, e["m"], e["x"], 1.0, e["l"])
        jumped = e["m"] > m_old and l_old > 0
        ax.bar(j, old, color=jump_c if jumped else old_c, width=0.6, edgecolor="white")
        ax.bar(j, new, bottom=old, color=new_c, width=0.6, edgecolor="white")
        ax.text(j, old + new + 0.05, f"x = {e['x']:g}\n(m, ℓ) =\n({e['m']:g}, {e['l']:.3f})", ha="center",
                va="bottom", fontsize=7.5)
        if jumped:
            label(ax, j + 0.32, old, f"×e^({m_old:g}−{e['m']:g})\n= ×{math.exp(m_old - e['m']):.3f}")
        m_old, l_old = e["m"], e["l"]
    ax.set_xlim(0.4, len(elements) + 0.95)
    ax.set_xticks([e["j"] for e in elements])
    ax.set_xticklabels([f"j = {e['j']}" for e in elements], fontsize=8)
    ax.set_ylim(0, max(e["l"] for e in elements) + 1.1)
    ax.set_ylabel("running sum ℓ after step j", fontsize=8)
    ax.set_title("Element by element: m' = max(m, x_j),  ℓ' = ℓ·e^(m − m') + e^(x_j − m')", fontsize=10, loc="left")

    ax = axes[1]
    m_old, l_old = -math.inf, 0.0
    for b, blk in enumerate(blocks):
        centre = (blk["first"] + blk["last"]) / 2
        width = blk["last"] - blk["first"] + 0.8
        ax.axvspan(blk["first"] - 0.45, blk["last"] + 0.45, color="#f1f3f5" if b % 2 == 0 else "#e7f5ff", zorder=0)
        old, new = terms(m_old, l_old, blk["m"], blk["mt"], blk["lt"], blk["l"])
        jumped = blk["m"] > m_old and l_old > 0
        ax.bar(centre, old, color=jump_c if jumped else old_c, width=width * 0.6, edgecolor="white")
        ax.bar(centre, new, bottom=old, color=new_c, width=width * 0.6, edgecolor="white")
        ax.text(centre, old + new + 0.05,
                f"block {b + 1}: x_{blk['first']}..x_{blk['last']}\nits own (m~, ℓ~) = ({blk['mt']:g}, {blk['lt']:.3f})"
                f"\nrunning (m, ℓ) = ({blk['m']:g}, {blk['l']:.3f})", ha="center", va="bottom", fontsize=7.5)
        if jumped:
            label(ax, centre + width * 0.3, old, f"×e^({m_old:g}−{blk['m']:g})\n= ×{math.exp(m_old - blk['m']):.3f}")
        m_old, l_old = blk["m"], blk["l"]
    ax.set_xlim(axes[0].get_xlim())
    ax.set_xticks([e["j"] for e in elements])
    ax.set_xticklabels([f"x_{e['j']} = {e['x']:g}" for e in elements], fontsize=8)
    ax.set_ylim(0, max(b["l"] for b in blocks) + 1.3)
    ax.set_ylabel("running sum ℓ after block", fontsize=8)
    ax.set_title(f"In blocks of {BLOCK}: m' = max(m, m~),  ℓ' = ℓ·e^(m − m') + ℓ~·e^(m~ − m')", fontsize=10,
                 loc="left")
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in (old_c, jump_c, new_c)]
    fig.legend(handles, ["the old ℓ, moved to the new max (unchanged: the max did not move)",
                         "the old ℓ, shrunk because the max jumped", "what this step adds, against the new max"],
               loc="lower center", ncol=3, fontsize=8, frameon=False)
    final = elements[-1]
    fig.suptitle(f"Chapter 04: the online softmax of x = {ROW}; both ways end at (m, ℓ) = ({final['m']:g}, "
                 f"{final['l']:.4f}), the safe softmax's max and sum", fontsize=10.5)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    save(fig, "04_online_softmax", "online_softmax")


if __name__ == "__main__":
    main()
