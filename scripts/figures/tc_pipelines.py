#!/usr/bin/env python3
"""Chapter 09: the two pipelines as modelled schedules, drawn from 09_tensor_core_matmul_schedule
(the kernels' loops played on schedule_model.h, sizes from tcmm::tiling()).

    scripts/figures/tc_pipelines.py [BUILD_DIR]
      -> 09_tensor_core_matmul/figures/cp_async_pipeline.png   steps 1-3 vs step 4: what each
                                                                 shared-memory buffer holds, per k16 slice
      -> 09_tensor_core_matmul/figures/warp_specialised.png    steps 6a, 6b: the TMA producer, the
                                                                 full/empty mbarriers, the consumers' wgmma
"""
import matplotlib.pyplot as plt

from common import model_csv
from timeline import AGENT_COLOURS, COPY, HELD, STORE, WAIT, bar, cli, fits, lane_axis, merged, panels, save_small

TOOL = "09_tensor_core_matmul_schedule"


def pipeline_figure():
    data = panels(model_csv(TOOL, "--what", "pipeline"))
    end = max(b["end"] for p in data.values() for b in p["bars"])
    fig, axes = plt.subplots(len(data), 1, figsize=(13, 5.6), gridspec_kw={"height_ratios": [2, 4]})
    for ax, (name, p) in zip(axes, data.items()):
        S = int(p["params"]["stages"])
        cta = next(b["lane"] for b in p["bars"] if b["lane"].startswith("CTA"))
        lanes = [f"buffer {s}" for s in range(S)] + [cta]
        y = {lane: i for i, lane in enumerate(lanes)}
        lane_axis(ax, lanes, end, xlabel=ax is axes[-1])
        bars = merged([b for b in p["bars"] if b["category"] in ("copy", "mma") and b["lane"].startswith("buffer")])
        computed = {b["label"]: b["start"] for b in bars if b["category"] == "mma"}
        for b in bars:
            if b["category"] == "copy":
                bar(ax, y[b["lane"]], b["start"], b["end"], COPY, f"copy {b['label']}")
                bar(ax, y[b["lane"]], b["end"], computed[b["label"]], HELD, "landed", text_colour="black")
            else:
                bar(ax, y[b["lane"]], b["start"], b["end"], AGENT_COLOURS[0], f"mma on {b['label']}")
        for b in p["bars"]:
            if b["lane"] != cta:
                continue
            if b["category"] == "mma":
                bar(ax, y[cta], b["start"], b["end"], AGENT_COLOURS[0], "k16", size=6)
            elif b["category"] == "wait":
                bar(ax, y[cta], b["start"], b["end"], WAIT, b["label"].replace("cp.async.", ""), hatch="///",
                    edge="#adb5bd", text_colour="black")
            elif b["category"] == "mark":
                ax.plot([b["start"]] * 2, [y[cta] + 0.05, y[cta] + 0.95], color="black", lw=1)
        ax.set_title(f"{name}: {S} shared-memory buffer{'s' if S > 1 else ''} of one {p['params']['tile']} "
                     f"k-tile (A and B); black ticks: __syncthreads", fontsize=9, loc="left")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (COPY, HELD, AGENT_COLOURS[0], WAIT)]
    fig.legend(handles, ["cp.async copy in flight", "landed, waiting to be used", "mma.sync on the tile (4 k16 slices)",
                         "the CTA waits (cp.async.wait_group)"], loc="lower center", ncol=4, fontsize=8)
    q = data["step 4"]["params"]
    fig.suptitle(f"Chapter 09, steps 1-3 against step 4: with {q['stages']} buffers, {int(q['stages']) - 1} tiles "
                 "are always travelling while the warps compute on another\n(a schedule of the kernels' loops, not a "
                 f"measurement: one k16 slice of mma = {q['slice_cycles']} cycles at 4096 FLOP/cycle, a copy lands "
                 f"{q['copy_cycles']} cycles after it is issued)", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    save_small(fig, "09_tensor_core_matmul", "cp_async_pipeline")


def stage_lanes(ax, p, y, S):
    """Stage lanes: each TMA copy in flight, then held until its "empty" barrier completes;
    the full (F) and empty (E) phase flips, with their parity."""
    copies = sorted((b for b in p["bars"] if b["category"] == "copy"), key=lambda b: b["start"])
    empties = {}
    for f in p["flips"]:
        if f["label"].startswith("empty"):
            empties.setdefault(f["lane"], []).append(f["time"])
    used = {s: 0 for s in range(S)}
    for b in copies:
        s = int(b["lane"].split()[1])
        release = sorted(empties.get(b["lane"], []))[used[s]]
        used[s] += 1
        bar(ax, y[b["lane"]], b["start"], b["end"], COPY, f"TMA {b['label']}")
        bar(ax, y[b["lane"]], b["end"], release, HELD, f"{b['label']} full", text_colour="black")
    for f in p["flips"]:
        full = f["label"].startswith("full")
        phase = int(f["label"].rsplit(" ", 1)[1])
        ax.plot(f["time"], y[f["lane"]] + (0.1 if full else 0.9), marker="v" if full else "^", ms=4,
                color="black" if full else "#c44e52")
        ax.text(f["time"], y[f["lane"]] + (0.1 if full else 0.9), f" {'F' if full else 'E'}{phase & 1}", fontsize=5.5,
                va="center", ha="left", color="black" if full else "#c44e52")


def ws_figure():
    data = panels(model_csv(TOOL, "--what", "ws"))
    end = max(b["end"] for p in data.values() for b in p["bars"])
    fig, axes = plt.subplots(len(data), 1, figsize=(13, 8.2))
    for ax, (name, p) in zip(axes, data.items()):
        S = int(p["params"]["stages"])
        consumers = sorted({b["lane"] for b in p["bars"] if b["lane"].startswith("consumer")})
        lanes = ["producer (1 thread)"] + [f"stage {s}" for s in range(S)] + consumers + ["tensor cores"]
        y = {lane: i for i, lane in enumerate(lanes)}
        lane_axis(ax, lanes, end, xlabel=ax is axes[-1])
        stage_lanes(ax, p, y, S)
        colour = {c: AGENT_COLOURS[i] for i, c in enumerate(consumers)}
        for b in p["bars"]:
            lane = b["lane"]
            if b["category"] == "gemm":
                bar(ax, y[lane], b["start"], b["end"], colour[b["agent"]], edge=colour[b["agent"]])
            elif b["category"] == "issue":
                ax.plot(b["start"], y[lane] + 0.5, marker=">", ms=4, color=COPY)
            elif b["category"] == "wait" and b["label"] == "done":
                bar(ax, y[lane], b["start"], b["end"], "white", "exited" if lane.startswith("producer") else "",
                    edge="#dee2e6", text_colour="#868e96")
            elif b["category"] == "wait":
                bar(ax, y[lane], b["start"], b["end"], WAIT, b["label"].replace("wgmma.", ""), hatch="///",
                    edge="#adb5bd", text_colour="black", size=6)
            elif b["category"] == "store":
                bar(ax, y[lane], b["start"], b["end"], STORE, b["label"])
        for g in merged([{**b, "agent": ""} for b in p["bars"] if b["category"] == "gemm"]):  # both consumers' k-tile
            if fits(ax, g["start"], g["end"], g["label"], 6):
                ax.text((g["start"] + g["end"]) / 2, y["tensor cores"] + 0.5, g["label"], fontsize=6, ha="center",
                        va="center", color="white")
        what = ("one tile of C per CTA: the next CTA starts cold once this one has left" if name == "step 6a" else
                "persistent: the producer runs into the next tile while the consumers store this one")
        ax.set_title(f"{name}, {p['params']['tile']} tiles, {S} stages: {what}", fontsize=9, loc="left")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (COPY, HELD, *AGENT_COLOURS[:2], WAIT, STORE)]
    fig.legend(handles, ["TMA copy in flight", "stage full until the consumers release it", "consumer 1's wgmma",
                         "consumer 2's wgmma", "waits (mbarrier, wgmma.wait_group)", "stores C"],
               loc="lower center", ncol=6, fontsize=8)
    q = data["step 6a"]["params"]
    fig.suptitle("Chapter 09, steps 6a and 6b: a producer thread fills a ring of stages by TMA, two consumer "
                 "warpgroups only issue wgmma\nv F0/F1: the stage's \"full\" barrier completes a phase (the copy "
                 f"landed); ^ E0/E1: \"empty\" completes (all {q['consumer_warps']} consumer warps released it); the "
                 "digit is the parity waited on.\n(A schedule of the kernel's loops, not a measurement: one "
                 f"wgmma.m64n256k16 = {q['wgmma_cycles']} cycles at 4096 FLOP/cycle, a TMA copy lands "
                 f"{q['copy_cycles']} cycles after it is issued, storing C takes {q['store_cycles']}.)", fontsize=9.5)
    fig.tight_layout(rect=(0, 0.03, 1, 0.935))
    save_small(fig, "09_tensor_core_matmul", "warp_specialised")


def main():
    cli(__doc__)
    pipeline_figure()
    ws_figure()


if __name__ == "__main__":
    main()
