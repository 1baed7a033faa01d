#!/usr/bin/env python3
"""Chapter 12: FA3's steps as modelled schedules of one row tile, drawn from 12_fa3_hopper_schedule
(fa3_kernel's program order per role, the stages of footprint(), played on chapter 09's
schedule model): the producer's TMA loads into the K/V ring, each consumer warpgroup's GEMMs,
softmax and waits, and what the tensor cores run.

    scripts/figures/fa3_schedule.py [BUILD_DIR]
      -> 12_fa3_hopper/figures/fa3_schedule.png   warpspec, pingpong, intrawg
"""
import matplotlib.pyplot as plt

from common import model_csv
from timeline import AGENT_COLOURS, COPY, HELD, STORE, WAIT, bar, cli, draw_consumers, lane_axis, panels, save_small

SOFT = ["#a1c4e8", "#c3b6de"]  # consumer 1's, consumer 2's softmax
WHAT = {"warpspec": "warp specialisation alone: both consumers issue at once, so their GEMMs share the tensor "
                    "cores and their softmaxes the exponential units",
        "pingpong": "ping-pong: a consumer issues only in its turn (named barriers), so one's softmax runs "
                    "while the other's GEMM does",
        "intrawg": "intra-warpgroup: S_{j+1} is issued with P_j V_j, and the softmax of S_{j+1} runs while "
                   "P_j V_j does"}


def ring(ax, p, y):
    """Q_i and the K/V stages: each copy in flight, then held until its "empty" barrier
    completes (K in the upper half of a stage's lane, V in the lower)."""
    releases = {}
    for f in p["flips"]:
        name = f["label"].rsplit(" phase ", 1)[0]
        if "empty" in name:
            releases.setdefault(name, []).append(f["time"])
    count = {}
    for b in sorted((b for b in p["bars"] if b["category"] == "copy"), key=lambda b: b["start"]):
        kind = b["label"][0]  # K, V or Q
        stage = "" if kind == "Q" else f"[{b['lane'].split()[1]}]"
        name = f"{kind} empty{stage}"
        n = count.get(name, 0)
        count[name] = n + 1
        release = sorted(releases[name])[n]
        top = {"K": 0.08, "V": 0.52, "Q": 0.15}[kind]
        h = 0.7 if kind == "Q" else 0.4
        bar(ax, y[b["lane"]], b["start"], b["end"], COPY, b["label"], height=h, top=top, size=6)
        bar(ax, y[b["lane"]], b["end"], release, HELD, f"{b['label']} held", height=h, top=top, size=6,
            text_colour="black")


def main():
    cli(__doc__)
    data = {k: v for k, v in panels(model_csv("12_fa3_hopper_schedule")).items() if k in WHAT}
    end = max(b["end"] for p in data.values() for b in p["bars"])
    fig, axes = plt.subplots(len(data), 1, figsize=(13, 10.5))
    for ax, (name, p) in zip(axes, data.items()):
        S = int(p["params"]["stages"])
        consumers = ["consumer 1", "consumer 2"]
        lanes = ["producer (1 thread)", "Q_i"] + [f"stage {s}" for s in range(S)] + consumers + ["tensor cores"]
        y = {lane: i for i, lane in enumerate(lanes)}
        lane_axis(ax, lanes, end, xlabel=ax is axes[-1])
        ring(ax, p, y)
        draw_consumers(ax, p, y, consumers, SOFT)
        ax.set_title(f"{name} ({S} K/V stages): {WHAT[name]}", fontsize=8.5, loc="left")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (COPY, HELD, *AGENT_COLOURS[:2], *SOFT, WAIT, STORE)]
    fig.legend(handles, ["TMA copy in flight", "in shared memory until released", "consumer 1's GEMMs (S_j, PV_j)",
                         "consumer 2's GEMMs", "consumer 1's softmax", "consumer 2's softmax",
                         "waits (mbarrier, turn, wait_group)", "stores O"], loc="lower center", ncol=4, fontsize=8)
    q = data["intrawg"]["params"]
    fig.suptitle(f"Chapter 12: FA3's schedule for one row tile (two consumer warpgroups) over {q['key_tiles']} key "
                 "tiles, j counting the loop's steps\n(a schedule of the kernel's program order, not a measurement: a "
                 f"{q['gemm']} GEMM = {q['gemm_cycles']} tensor-core cycles at 4096 FLOP/cycle, a "
                 f"softmax = {q['softmax_cycles']} cycles of exponentials at 16 per cycle, a TMA copy lands "
                 f"{q['copy_cycles']} cycles after it is issued)", fontsize=9.5)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    save_small(fig, "12_fa3_hopper", "fa3_schedule")


if __name__ == "__main__":
    main()
