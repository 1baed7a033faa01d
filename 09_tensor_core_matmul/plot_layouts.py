#!/usr/bin/env python3
"""Draws figures/fragments.png for the README from the chapter's own layout printer.

    build/bin/09_tensor_core_matmul --layouts-csv | python3 09_tensor_core_matmul/plot_layouts.py [OUT.png]
    (scripts/figures/make_all.py runs it with the other figures)

Four panels, every number taken from the CSV (tc_layout.h's models, which the tests check
against the PTX ISA): mma.m16n8k16's A (16 x 16), B (16 x 8, as k x n) and C (16 x 8)
fragments, coloured by the lane holding each element and labelled lane:register, and
the bank group of each 16-byte chunk of an 8-row tile, plain and 128B-swizzled.
"""
import argparse
import csv
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts" / "figures"))
from timeline import save_palette  # noqa: E402  (the figure scripts' small palette PNG)


def read(stream):
    tables, swizzle = {}, []
    for row in csv.reader(stream):
        if not row or row[0] == "table":
            continue
        if row[0] == "swizzle":
            swizzle.append(tuple(int(x) for x in row[1:]))
        else:
            tables.setdefault(row[0], []).append(tuple(int(x) for x in row[1:]))
    return tables, swizzle


def fragment(ax, cells, rows, cols, reg, title, xlabel, ylabel):
    grid = [[0] * cols for _ in range(rows)]
    cmap = plt.get_cmap("tab20")
    for r, c, lane, i in cells:
        grid[r][c] = lane
        ax.add_patch(plt.Rectangle((c, r), 1, 1, color=cmap((lane // 4) % 20), alpha=0.35 + 0.15 * (lane % 4)))
        ax.text(c + 0.5, r + 0.5, f"{lane}\n{reg}{i}", ha="center", va="center", fontsize=5.5)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_xticks([x + 0.5 for x in range(cols)], [str(x) for x in range(cols)], fontsize=6)
    ax.set_yticks([y + 0.5 for y in range(rows)], [str(y) for y in range(rows)], fontsize=6)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")


def banks(ax, swizzle, column, title):
    cmap = plt.get_cmap("tab10")
    for r, c, plain, swz in swizzle:
        g = plain if column == 0 else swz
        ax.add_patch(plt.Rectangle((c, r), 1, 1, color=cmap(g), alpha=0.6))
        ax.text(c + 0.5, r + 0.5, str(g), ha="center", va="center", fontsize=8)
    ax.set_xlim(0, 8)
    ax.set_ylim(8, 0)
    ax.set_xticks([x + 0.5 for x in range(8)], [str(x) for x in range(8)], fontsize=7)
    ax.set_yticks([y + 0.5 for y in range(8)], [str(y) for y in range(8)], fontsize=7)
    ax.set_xlabel("16-byte chunk of the row (8 bf16)", fontsize=8)
    ax.set_ylabel("tile row", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=HERE / "figures" / "fragments.png",
                    help="the PNG to write (default: 09_tensor_core_matmul/figures/fragments.png)")
    out = ap.parse_args().out
    if sys.stdin.isatty():
        ap.error("reads the CSV on stdin: build/bin/09_tensor_core_matmul --layouts-csv | python3 " + sys.argv[0])
    try:
        tables, swizzle = read(sys.stdin)
    except ValueError as e:
        ap.error(f"stdin is not the --layouts-csv output ({e})")
    if not all(k in tables for k in ("mma_a", "mma_b", "mma_c")) or not swizzle:
        ap.error("stdin holds no fragment tables: pipe in what 09_tensor_core_matmul --layouts-csv prints")
    fig = plt.figure(figsize=(13, 10))
    spec = fig.add_gridspec(2, 4, height_ratios=[1.0, 0.62])
    fragment(fig.add_subplot(spec[0, 0:2]), tables["mma_a"], 16, 16, "a", "A fragment, 16 x 16 (lane / register)",
             "k", "m")
    fragment(fig.add_subplot(spec[0, 2]), tables["mma_b"], 16, 8, "b", "B fragment, 16 x 8", "n", "k")
    fragment(fig.add_subplot(spec[0, 3]), tables["mma_c"], 16, 8, "c", "C / D fragment, 16 x 8 (fp32)", "n", "m")
    banks(fig.add_subplot(spec[1, 0]), swizzle, 0, "bank group, plain: one ldmatrix\nphase (a column) = 8-way conflict")
    banks(fig.add_subplot(spec[1, 1]), swizzle, 1, "bank group, 128B swizzle:\nchunk ^ (row % 8), conflict-free")
    note = fig.add_subplot(spec[1, 2:4])
    note.axis("off")
    note.text(0, 0.9, "mma.sync.m16n8k16 (bf16 in, fp32 accumulate), one warp.\n"
              "lane = 4 g + t: g = lane / 4 picks the row of A and C\n(and the column of B), t = lane % 4 a pair of columns.\n\n"
              "ldmatrix.x4: lanes 8j .. 8j+7 give the row addresses of\nmatrix j; every lane gets register j = row lane / 4,\n"
              "columns 2 (lane % 4) + {0, 1}: the fragment above.\n\n"
              "Colour = group g; shade = t. Drawn by plot_layouts.py from\n`09_tensor_core_matmul --layouts-csv`.",
              va="top", fontsize=9, family="monospace")
    fig.suptitle("Chapter 09: which lane holds which element of mma.sync.m16n8k16's fragments, and the bank group of "
                 "each 16-byte chunk, plain and swizzled (tc_layout.h)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    pathlib.Path(out).parent.mkdir(exist_ok=True)
    save_palette(fig, out, dpi=100, colours=128)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
