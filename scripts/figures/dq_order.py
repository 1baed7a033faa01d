#!/usr/bin/env python3
"""Chapter 14: the order in which the backward's CTAs start, and the order in which they add their
dQ blocks. The grid of the main shape (B = 4, H = 16, N = 4096: 64 heads x 32 key tiles) on 132
SMs, played on the chapter's schedule model (14_fa3_backward/dq_order_model.h: one time unit per
query tile of one CTA, CTAs started in launch order, each holding its SM until its last dQ
addition): how many SMs are busy over time with no order of the additions (launched head by head,
and in the sections of heads of fa3_bwd_scheduler.h), and with the two fixed orders (head by head,
as the deterministic step launches). A model, not a measurement; the benchmark's
order:head_by_head and step:deterministic against step:bulk are the measurements.

    scripts/figures/dq_order.py [BUILD_DIR]      -> 14_fa3_backward/figures/dq_order.png
"""
import matplotlib.pyplot as plt

from common import model_csv
from timeline import cli, save_small

# (order, heads per section: "1" or "sections") -> colour, label, line style, per panel
STYLE = {
    "1": {("fast", "1"): ("#adb5bd", "no order, head by head", "--"),
          ("fast", "sections"): ("#212529", "no order, in sections of heads (step:bulk)", "-"),
          ("descending", "1"): ("#1c7ed6", "the last key tile first (step:deterministic)", "-"),
          ("ascending", "1"): ("#e8590c", "key tile 0 first", "-")},
    "0": {("fast", "sections"): ("#212529", "no order, in sections of heads (step:bulk)", "-"),
          ("ascending", "1"): ("#e8590c", "key tile 0 first (step:deterministic)", "-"),
          ("descending", "1"): ("#1c7ed6", "the last key tile first", "-")},
}


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
        for (order, sections), (colour, label, style) in STYLE[causal].items():
            ctas = [r for r in rows if r["causal"] == causal and r["order"] == order
                    and (r["heads_per_section"] == "1") == (sections == "1")]
            xs, ys = busy(ctas)
            ax.plot(xs, ys, color=colour, lw=1.4, ls=style, zorder=3 if order == "fast" else 2,
                    label=f"{label}: done at {float(ctas[0]['makespan']):.0f}")
        ax.set_title(("causal" if causal == "1" else "dense") + ": SMs holding a CTA", fontsize=10)
        ax.set_xlabel("time (query-tile steps of one CTA; a dQ addition lands 0.25 after its tile)", fontsize=8)
        ax.legend(fontsize=7.5, loc="lower left")
        ax.tick_params(labelsize=8)
    axes[0].set_ylabel("busy SMs (of 132)", fontsize=9)
    fig.suptitle("The launch order and the order of dQ additions, on the chapter's schedule model "
                 "(B=4 H=16 N=4096: 2048 CTAs)", fontsize=10)
    fig.tight_layout()
    save_small(fig, "14_fa3_backward", "dq_order")


if __name__ == "__main__":
    main()
