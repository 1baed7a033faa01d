#!/usr/bin/env python3
"""Chapter 14: the backward's main loop as modelled schedules of one CTA, drawn from
14_fa3_backward_schedule (fa3_bwd_kernel.cuh's program order per role, the kernel's Cfg, played on
chapter 09's schedule model): the producer's TMA loads, the two consumer warpgroups' GEMMs,
exponentials, element-wise work, stores and waits, the dQ writer, and what the tensor cores run.
Two panels: each step's dQ waited for alone (the loop before), and with the next query tile's S^T
issued behind it (Consumer::step).

    scripts/figures/bwd_schedule.py [BUILD_DIR]
      -> 14_fa3_backward/figures/bwd_schedule.png
"""
import matplotlib.pyplot as plt

from common import model_csv
from timeline import AGENT_COLOURS, COPY, STORE, WAIT, bar, cli, draw_consumers, lane_axis, panels, save_small

SOFT = ["#a1c4e8", "#c3b6de"]  # consumer 1's, consumer 2's exponentials
ELEMENTWISE = "#ccb974"
WHAT = {"waited": "dQ waited for alone: wgmma.wait_group 0 after dQ, then the hand-off, then the next tile's "
                  "S^T and dP^T",
        "overlapped": "the next tile's S^T behind dQ: wgmma.wait_group 1 waits for dQ only, the hand-off runs "
                      "under S^T"}
LANES = ["producer (1 thread)", "K_j, V_j", "stage 0", "stage 1", "consumer 1", "consumer 2",
         "dQ writer (1 thread)", "tensor cores"]


def extra(ax, b, y):
    """The categories only this picture has: the copies (TMA, the writer's reduce-add) and dS."""
    if b["category"] == "copy":
        bar(ax, y[b["lane"]], b["start"], b["end"], COPY, b["label"], size=6)
    elif b["category"] == "elementwise":
        bar(ax, y[b["lane"]], b["start"], b["end"], ELEMENTWISE, b["label"], text_colour="black", size=6)


def main():
    cli(__doc__)
    data = {k: v for k, v in panels(model_csv("14_fa3_backward_schedule")).items() if k in WHAT}
    end = max(b["end"] for p in data.values() for b in p["bars"])
    consumers = ["consumer 1", "consumer 2"]
    fig, axes = plt.subplots(len(data), 1, figsize=(13, 8))
    for ax, (name, p) in zip(axes, data.items()):
        y = {lane: i for i, lane in enumerate(LANES)}
        lane_axis(ax, LANES, end, xlabel=ax is axes[-1])
        draw_consumers(ax, p, y, consumers, SOFT, extra)
        ax.set_title(f"{name}: {WHAT[name]} (the CTA ends at cycle {p['params']['end']})", fontsize=8.5, loc="left")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (COPY, *AGENT_COLOURS[:2], *SOFT, ELEMENTWISE, STORE, WAIT)]
    fig.legend(handles, ["TMA copy in flight; the writer's reduce-add reading its block", "consumer 1's GEMMs",
                         "consumer 2's GEMMs", "consumer 1's exponentials", "consumer 2's exponentials",
                         "dS (element-wise)", "stores to shared memory (dS^T, the dQ block)",
                         "waits (mbarrier, named barrier, wait_group)"], loc="lower center", ncol=4, fontsize=8)
    q = data["overlapped"]["params"]
    fig.suptitle(f"Chapter 14: one CTA's key tile (two consumer warpgroups, d = {q['d']}) over {q['query_tiles']} "
                 "query tiles, numbered from 0\n(a schedule of the kernel's program order, not a measurement: each "
                 f"of the five GEMMs of a warpgroup's step = {q['gemm_cycles']} tensor-core cycles at 4096 FLOP/cycle,\n"
                 f"the exponentials = {q['softmax_cycles']} cycles at 16 per cycle, element-wise work and each store "
                 f"= {q['elementwise_cycles']} cycles, a TMA copy lands {q['copy_cycles']} cycles after its issue, "
                 f"a reduce-add has read its block after {q['reduce_cycles']})", fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 0.94))
    save_small(fig, "14_fa3_backward", "bwd_schedule")


if __name__ == "__main__":
    main()
