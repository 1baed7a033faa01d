#!/usr/bin/env python3
"""Chapter 14: why the deterministic step adds the key tiles' dQ blocks from the last key tile
down. The grid of the main shape (B = 4, H = 16, N = 4096: 64 heads x 32 key tiles) on 132 SMs,
played on the chapter's schedule model (14_fa3_backward/dq_order_model.h: one time unit per
query tile of one CTA, CTAs started in launch order, each holding its SM until its last dQ
addition): how many SMs are busy over time with no order, going up the key tiles, and going down.
A model, not a measurement; the benchmark's step:deterministic against step:bulk is the measurement.

    scripts/figures/dq_order.py [BUILD_DIR]      -> 14_fa3_backward/figures/dq_order.png
"""
import matplotlib.pyplot as plt

from common import model_csv
from timeline import cli, save_small

STYLE = {"fast": ("#495057", "no order (step:bulk)"), "ascending": ("#e8590c", "key tile 0 first"),
         "descending": ("#1c7ed6", "the last key tile first (step:deterministic)")}


def busy(ctas):
    """(times, busy SMs) as a step function from the CTAs' [start, finish) intervals."""
    delta = {}
    for c in ctas:  # a CTA that starts when another finishes: both at one time, summed
        delta[float(c["start"])] = delta.get(float(c["start"]), 0) + 1
        delta[float(c["finish"])] = delta.get(float(c["finish"]), 0) - 1
    n, xs, ys = 0, [0.0], [0]
    for time in sorted(delta):
        xs.append(time), ys.append(n)
        n += delta[time]
        xs.append(time), ys.append(n)
    return xs, ys


def main():
    cli(__doc__)
    rows = model_csv("14_fa3_backward_dq_order")
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.2), sharey=True)
    for ax, causal in zip(axes, ("1", "0")):
        for order, (colour, label) in STYLE.items():
            ctas = [r for r in rows if r["causal"] == causal and r["order"] == order]
            xs, ys = busy(ctas)
            ax.plot(xs, ys, color=colour, lw=1.4, ls="--" if order == "fast" else "-", zorder=3 if order == "fast" else 2,
                    label=f"{label}: done at {float(ctas[0]['makespan']):.0f}")
        ax.set_title(("causal" if causal == "1" else "dense") + ": SMs holding a CTA", fontsize=10)
        ax.set_xlabel("time (query-tile steps of one CTA; a dQ addition lands 0.25 after its tile)", fontsize=8)
        ax.legend(fontsize=7.5, loc="lower left")
        ax.tick_params(labelsize=8)
    axes[0].set_ylabel("busy SMs (of 132)", fontsize=9)
    fig.suptitle("The deterministic step's order of dQ additions, on the chapter's schedule model "
                 "(B=4 H=16 N=4096: 2048 CTAs)", fontsize=10)
    fig.tight_layout()
    save_small(fig, "14_fa3_backward", "dq_order")


if __name__ == "__main__":
    main()
