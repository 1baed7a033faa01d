#!/usr/bin/env python3
"""One CTA of the FP8 forward over a few steps, from the clock64 stamps of a stamped build.

  python3 12_fa3_hopper/plot_loop_phases.py TRACE_CSV[.gz] --run TEXT [--publish]

TRACE_CSV: the stamps `loop_phases/` in the results logs describes (slot, smid, role 0/1 consumer
warpgroup or 2 producer, i, ev, clock). Draws, for the CTA whose steps take the median time, each
consumer warpgroup's phases step by step (the events of fa3_forward.cuh's intra-warpgroup loop as
that build stamped them) and the producer's copies, on the SM's clock. TEXT names the run under the
title. Writes figures/loop_phases.png (without --publish: build/local/, scripts/publish.py).
"""
import argparse
import csv
import gzip
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import publish  # noqa: E402

# A phase runs from one stamp to the next: (event before, event after) -> (label, colour).
PHASES = {
    (0, 1): ("descale loads, wait for K_j", "#e03131"),
    (1, 2): ("wait for V_j-1", "#ff8787"),
    (2, 3): ("turn at the GEMMs", "#ced4da"),
    (3, 4): ("issue S_j, P V; rescale O", "#1c7ed6"),
    (4, 8): ("wait for S_j", "#e9ecef"),
    (8, 5): ("row maxima", "#f08c00"),
    (5, 6): ("turn at the MUFU", "#ced4da"),
    (6, 7): ("exponentials, row sums", "#7048e8"),
    (7, 9): ("exponentials, row sums", "#7048e8"),
    (9, 10): ("wait for P V", "#e9ecef"),
    (10, 11): ("P~ to e4m3", "#37b24d"),
}
STEPS = range(6, 10)  # steps of the row tile to draw (its first and last ones are special)


def load(path):
    seq = defaultdict(list)
    with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
        for r in csv.DictReader(f):
            seq[(int(r["slot"]), int(r["role"]))].append((int(r["ev"]), int(r["clock"])))
    return seq


def steps(events):
    """The stamps of each step of the loop: a list per loop top (event 0)."""
    tops = [i for i, (e, _) in enumerate(events) if e == 0]
    return [events[a:b + 1] for a, b in zip(tops, tops[1:])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--run", required=True, help="the run, under the title")
    publish.add_flag(ap)
    args = ap.parse_args()
    seq = load(args.trace)
    # The CTA whose median step is the median over CTAs: a typical one, not the fastest.
    slots = sorted({s for s, r in seq if r == 0 and (s, 1) in seq})
    med = {s: statistics.median(st[-1][1] - st[0][1] for st in steps(seq[(s, 0)])) for s in slots}
    slot = sorted(slots, key=med.get)[len(slots) // 2]
    t0 = steps(seq[(slot, 0)])[STEPS[0]][0][1]
    fig, ax = plt.subplots(figsize=(12, 2.6))
    end = 0
    for row, role in enumerate((0, 1)):
        for st in steps(seq[(slot, role)])[STEPS[0]:STEPS[-1] + 1]:
            for (ea, ca), (eb, cb) in zip(st, st[1:]):
                if (ea, eb) in PHASES:
                    ax.barh(row, cb - ca, left=ca - t0, height=0.6, color=PHASES[(ea, eb)][1], linewidth=0)
            end = max(end, st[-1][1] - t0)
    copies = [(e, c - t0) for e, c in seq.get((slot, 2), []) if e in (20, 21) and 0 <= c - t0 <= end]
    for e, x in copies:
        ax.plot([x, x], [1.65, 2.05], color="#1c7ed6" if e == 20 else "#e8590c", linewidth=1.5)
    ax.set_yticks([0, 1, 1.85], ["consumer 0", "consumer 1", "producer: copy of\nK (blue), Vt (orange)"])
    ax.set_ylim(-0.5, 2.3)
    ax.set_xlim(0, end)
    ax.invert_yaxis()
    ax.set_xlabel("SM clock cycles (clock64)")
    ax.set_title(f"FP8 forward, 192 keys: one CTA, steps {STEPS[0]}-{STEPS[-1]} of its row tile\n{args.run}",
                 fontsize=9)
    seen = {}
    for label, colour in PHASES.values():
        seen.setdefault(label, colour)
    ax.legend(handles=[Patch(color=c, label=lab) for lab, c in seen.items()], fontsize=7, ncol=5,
              loc="upper center", bbox_to_anchor=(0.5, -0.32), frameon=False)
    out = publish.destination(Path(__file__).resolve().parent / "figures" / "loop_phases.png", args.publish)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
