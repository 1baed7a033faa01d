#!/usr/bin/env python3
"""Draws chapter 13's schedule pictures from what the executable prints (its CPU part).

    python3 13_ring_attention/schedule_figure.py BUILD_DIR/bin/13_ring_attention [OUT_DIR]

figures/schedule.png       P = 4, plain and zigzag, causal: which K/V shard each rank holds at each
                           step, and the (q chunk, k chunk) tiles it computes (f full, d diagonal)
figures/load_balance.png   work per rank per step (in (N/P)^2 pairs) for both shardings: the step costs
                           what its busiest rank does
Every number comes from the executable's schedule (ring_schedule.cpp); none is typed here.
"""
import argparse
import os
import pathlib
import re
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HEAD = re.compile(r"^(plain|zigzag) sharding, P = (\d+), (\d+) chunks")
STEP = re.compile(r"^\s+step (\d+):(.*)->")
RANK = re.compile(r"r(\d+) holds K/V of r(\d+)(\{[\d,]+\}) tiles (.*?) work ([\d.]+)")


def parse(text):
    """{(sharding, P): [[(holds, chunks, tiles, work) per rank] per step]}"""
    out, key, scale = {}, None, {}
    for line in text.splitlines():
        m = HEAD.match(line)
        if m:
            key = (m.group(1), int(m.group(2)))
            out[key] = []
            # work is printed in C^2 (C = tokens per chunk); the pictures use (N/P)^2, one plain
            # rank's chunk squared, so that both shardings share a scale: zigzag C = N/(2P)
            scale[key] = (key[1] / int(m.group(3))) ** 2
            continue
        m = STEP.match(line)
        if m and key:
            ranks = [RANK.search(part) for part in m.group(2).split("|")]
            out[key].append([(int(r.group(2)), r.group(3), r.group(4).strip(), float(r.group(5)) * scale[key])
                             for r in ranks])
    return out


def schedule_figure(sched, P, path):
    fig, axes = plt.subplots(1, 2, figsize=(13, 3.6))
    for ax, sharding in zip(axes, ("plain", "zigzag")):
        steps = sched[(sharding, P)]
        most = max(w for step in steps for (_, _, _, w) in step) or 1
        for t, step in enumerate(steps):
            for r, (holds, chunks, tiles, w) in enumerate(step):
                ax.add_patch(plt.Rectangle((t, r), 1, 1, color=plt.cm.Blues(0.15 + 0.6 * w / most), ec="white"))
                ax.text(t + 0.5, r + 0.32, f"K/V of r{holds} {chunks}", ha="center", va="center", fontsize=7.5)
                ax.text(t + 0.5, r + 0.68, tiles.replace(" ", "  "), ha="center", va="center", fontsize=6.5)
        ax.set_xlim(0, len(steps))
        ax.set_ylim(P, 0)
        ax.set_xticks([t + 0.5 for t in range(len(steps))], [f"step {t}" for t in range(len(steps))])
        ax.set_yticks([r + 0.5 for r in range(P)], [f"rank {r}" for r in range(P)])
        ax.set_title(f"{sharding}, causal, P = {P}: shard held, tiles (q,k) f=full d=diagonal", fontsize=9)
        ax.tick_params(length=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def balance_figure(sched, P, path):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    for ax, sharding in zip(axes, ("plain", "zigzag")):
        steps = sched[(sharding, P)]
        width = 0.8 / P
        for r in range(P):
            ax.bar([t + r * width for t in range(len(steps))], [step[r][3] for step in steps], width,
                   label=f"rank {r}")
        crit = sum(max(w for (_, _, _, w) in step) for step in steps)
        total = sum(w for step in steps for (_, _, _, w) in step)
        ax.set_title(f"{sharding}: critical path {crit:g}, ideal {total / P:g} (units of (N/P)^2)", fontsize=9)
        ax.set_xticks([t + 0.4 - width / 2 for t in range(len(steps))], [f"step {t}" for t in range(len(steps))])
        ax.set_ylabel("query-key pairs / (N/P)^2")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe", type=pathlib.Path, help="the 13_ring_attention executable")
    ap.add_argument("out_dir", nargs="?", type=pathlib.Path, default=pathlib.Path(__file__).parent / "figures",
                    help="where the PNGs go (default: the chapter's figures/)")
    args = ap.parse_args()
    if not args.exe.is_file():
        ap.error(f"{args.exe}: no such file (cmake --build build --target 13_ring_attention)")
    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    # Its CPU part only: the schedules are the same on any machine.
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    text = subprocess.run([str(args.exe)], capture_output=True, text=True, env=env).stdout
    sched = parse(text)
    if (("plain", 4) not in sched) or (("zigzag", 4) not in sched):
        ap.error(f"{args.exe} printed no P = 4 schedules")
    schedule_figure(sched, 4, out / "schedule.png")
    balance_figure(sched, 4, out / "load_balance.png")


if __name__ == "__main__":
    main()
