#!/usr/bin/env python3
"""The loss curves of train.py's runs over each other: do the implementations train the same model?

    python3 16_attention_in_a_model/plot_training.py results.json [--out training.png]

One colour per run: the train loss per step (faint) with its running mean over --smooth steps, and the
validation loss at its evaluation points (markers). The legend carries each run's tokens/s and peak
memory from the same JSON.
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def running_mean(xs, n):
    out, acc, window = [], 0.0, []
    for x in xs:
        x = float("nan") if x is None else x
        window.append(x)
        acc += x
        if len(window) > n:
            acc -= window.pop(0)
        out.append(acc / len(window))
    return out


def label(run):
    parts = [run["attn"]]
    if run.get("tokens_per_s"):
        parts.append(f"{run['tokens_per_s']:,.0f} tok/s")
    if run.get("peak_memory_bytes"):
        parts.append(f"{run['peak_memory_bytes'] / 2**30:.1f} GiB")
    return ", ".join(parts)


def plot(result, out, smooth=20):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, run in enumerate(result["runs"]):
        colour = f"C{i}"
        steps = range(len(run["train_loss"]))  # step s starts from the weights validated at s
        ax.plot(steps, run["train_loss"], color=colour, alpha=0.2, lw=0.8)
        ax.plot(steps, running_mean(run["train_loss"], smooth), color=colour, lw=1.5, label=label(run))
        val = [p for p in run["val_loss"] if p["loss"] is not None]
        ax.plot([p["step"] for p in val], [p["loss"] for p in val], "o", color=colour, ms=4,
                mfc="none" if i % 2 else colour)
    cfg = result["config"]
    where = result.get("gpu") or cfg["device"]
    ax.set_title(f"GPT {cfg['layers']} layers x {cfg['width']}, {cfg['heads']} heads of {cfg['head_dim']}, "
                 f"T={cfg['seq']}, batch {cfg['batch']}, {where}", fontsize=10)
    ax.set_xlabel("step")
    ax.plot([], [], "o", color="grey", ms=4, label="validation")
    ax.set_ylabel("cross-entropy (nats per byte)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="train.py --out")
    ap.add_argument("--out", default=None, help="PNG path (default: beside the JSON, .png)")
    ap.add_argument("--smooth", type=int, default=20, help="running-mean window of the train loss, in steps")
    args = ap.parse_args(argv)
    with open(args.results) as f:
        result = json.load(f)
    if not result.get("runs"):
        ap.error(f"{args.results}: no runs")
    out = args.out or os.path.splitext(args.results)[0] + ".png"
    plot(result, out, max(1, args.smooth))
    print(f"plot_training: {out}")


if __name__ == "__main__":
    main()
