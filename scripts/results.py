#!/usr/bin/env python3
"""Turns one scripts/gpu_check.sh run into the published results.

    scripts/results.py RUN_DIR OUT_DIR [--readme README.md]
    scripts/results.py --assemble RUN_DIR [--tree TREE]
    scripts/results.py --check [--tree TREE]

RUN_DIR holds what gpu_check.sh wrote (bench/<chapter>.json, anchors.json and anchors2.json from
scripts/anchors/torch_anchors.py, timing/ from scripts/timing_study.sh, ncu/, logs/).
OUT_DIR gets, per chapter, bench.json (the Google Benchmark JSON, unchanged), table.md and
plot.png, plus README.md (GPU, date, commit, how the figures were timed, checks, one line per
chapter, the targets), summary.json (each chapter's headline ratios) and the anchors. With --readme, each
chapter README's block between <!-- results:NN_topic --> and <!-- /results:NN_topic --> gets the
chapter's table (the top README names no figure: each chapter table's headline row, its summary.json ratios
and its count of targets are results/README.md's chapter table, and the top README shows the chart
OUT_DIR/ladder_speed.png, drawn by scripts/figures/ladder_speed.py from the tables of the run). The
executables' summary lines, timed apart from the tables, stay in logs/ladder.log. A block the run has a
table for but the README lacks is an error.
Every number comes from the JSON and logs; none is typed here. The targets the figures are read against
are in results/targets.json (scripts/targets.py).

The committed publication is made from files in the repository: results/publication.json says which file
is which part of RUN_DIR. --assemble writes that RUN_DIR (results/logs/6b007325beb8/assemble.sh calls it);
--check assembles it in a temporary folder, regenerates results/ and every README block from it there, and
compares them with the committed files, byte for byte (plots: drawn, not compared). It writes nothing in
the repository and exits 1 naming every file and block that differs. --tree checks another copy of the
repository (its results/ and READMEs) with this script.

Benchmark names follow CONTRIBUTING.md: <variant>/<key>=<value>/..., anchors anchor:<what>/...;
the variant is every leading part without '=' (anchor:cudnn/fwd). bench/<chapter>.<part>.json (a name with
a dot) is another run of a chapter that only the chapter's own README tables read (12_fa3_hopper.d256.json);
bench/<chapter>.summary.json holds ratios a chapter computes itself.
"""
import argparse
import json
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import targets as goals  # noqa: E402

# The repository whose published files are read where a run lacks them (ncu studies of earlier runs) and
# whose results/targets.json is used: this one, or --tree's.
TREE = ROOT

# The H200's peaks the tensor-core chapters (09-13) are read against. NVIDIA H200 SXM datasheet:
# BF16 tensor core 1,979 TFLOP/s with 2:4 sparsity, so 989 dense; HBM3e 4.8 TB/s.
H200_BF16_DENSE_TFLOPS = 989.0
H200_HBM_GBPS = 4800.0

# Per chapter: the metric to show, the variant every cell is compared with ("baseline"),
# the parameter on the x axis of the plot, extra ratio tables (the issues' targets), whether the
# table states the fraction of the H200's peak ("peak") and the in-process cuDNN anchor ("cudnn").
CONFIG = {
    "01_vector_add": dict(metric="GB/s", baseline="anchor:cudaMemcpy_d2d", x="n"),
    "02_matmul_naive": dict(metric="TFLOP/s", baseline="anchor:cublas_sgemm"),
    "03_matmul_tiled": dict(metric="TFLOP/s", baseline="anchor:cublas_sgemm"),
    "04_online_softmax": dict(metric="GB/s", baseline="anchor:cudaMemcpy_d2d",
                              time_ratios=[("safe_3pass", "online_2pass", "safe 3-pass time / online 2-pass time")]),
    "05_fa1_forward": dict(metric="TFLOP/s", baseline="standard", x="N"),
    "06_fa2_forward": dict(metric="TFLOP/s", baseline="standard", x="N",
                           time_ratios=[("fa1", "fa2", "FA1 time / FA2 time"),
                                        ("standard", "fa2", "standard time / FA2 time")]),
    "07_fa_backward": dict(metric="TFLOP/s", baseline="standard_backward", x="N",
                           time_ratios=[("fa2_backward_atomic", "fa2_forward", "backward (atomic) time / forward time"),
                                        ("fa2_backward_deterministic", "fa2_forward",
                                         "backward (deterministic) time / forward time"),
                                        ("standard_backward", "fa2_backward_atomic",
                                         "standard backward time / FA backward (atomic) time")]),
    "08_spilling_study": dict(metric="TFLOP/s", plot=False, csv="spill_table.csv"),
    "09_tensor_core_matmul": dict(metric="TFLOP/s", baseline="anchor:cublas_bf16", peak=True),
    "10_fa2_tensor_cores": dict(metric="TFLOP/s", plot=False, peak=("fwd", "bwd"), cudnn=("fwd", "bwd"),
                                time_ratios=[("fwd_fa1norm", "fwd", "FA1-normalised forward time / FA2 forward time"),
                                             ("bwd", "fwd", "backward time / forward time")]),
    "11_flash_decoding": dict(metric="GB/s", baseline="anchor:cudaMemcpy_d2d", plot=False, peak=("decode",)),
    "12_fa3_hopper": dict(metric="TFLOP/s", baseline="anchor:fa2_tc/fwd", plot=False, peak=True, cudnn=("fwd",),
                          time_ratios=[("fwd", "fp8", "bf16 forward time / FP8 forward time")]),
    "13_ring_attention": dict(metric="TFLOP/s", plot=False, peak=True),
    "14_fa3_backward": dict(metric="TFLOP/s", baseline="anchor:cudnn/bwd", plot=False, peak=True, cudnn=("bwd",),
                            baseline_of={"train": "anchor:cudnn/train", "anchor:cudnn/train": None},
                            time_ratios=[("anchor:fa2_tc/bwd", "step:bulk", "chapter 10's backward time / the bulk step's"),
                                         ("step:atomic", "step:bulk", "atomic step time / bulk step time"),
                                         ("step:deterministic", "step:bulk", "deterministic time / fast (bulk) time"),
                                         ("order:head_by_head", "step:bulk",
                                          "bulk step launched head by head / in sections of heads (causal)"),
                                         ("anchor:cudnn/train", "train",
                                          "cuDNN's training step time / chapters 12 + 14's"),
                                         ("part:pre", "bwd", "pre-processing time / the whole backward's"),
                                         ("part:post", "bwd", "post-processing time / the whole backward's")]),
    "15_attention_variants": dict(metric="TFLOP/s", plot=False, flex=True,
                                  baseline_of={"fwd:causal": "anchor:fa3_causal/fwd", "bwd:causal": "anchor:fa3_causal/bwd",
                                               "train:documents": None},
                                  time_ratios=[(f"{p}:tiles{t}", f"{p}:dense",
                                                f"{'forward' if p == 'fwd' else 'backward'} time at {t}% of the tiles / dense"
                                                " (target <= {tiles_goal}x the fraction of tiles visited)")
                                               for p in ("fwd", "bwd") for t in (10, 25, 50)]),
    "16_attention_in_a_model": dict(metric="tok/s", baseline="sdpa_cudnn", plot=False),
}

# The chapters the top README's chart (scripts/figures/ladder_speed.py) reads; it is drawn when all are published.
LADDER_CHART = ("05_fa1_forward", "06_fa2_forward", "10_fa2_tensor_cores", "12_fa3_hopper", "14_fa3_backward")

# Chapter 15 against FlexAttention (anchors2.json, kind flex_bf16) at its three masks.
FLEX_CASES = ("window", "documents", "softcap")


def flex_ratios(rows, anchors):
    """{case: (ours fwd, flex fwd, ours bwd, flex bwd)} in useful TFLOP/s, where both were measured."""
    out = {}
    for case in FLEX_CASES:
        f = next((a for a in anchors if a.get("kind") == "flex_bf16" and a.get("case") == case), None)
        ours = {r["variant"]: r for r in rows if not r["error"] and r["variant"] in (f"fwd:{case}", f"bwd:{case}")}
        if f and f.get("fwd_tflops") and f.get("bwd_tflops") and len(ours) == 2:
            out[case] = (value(ours[f"fwd:{case}"], "TFLOP/s"), f["fwd_tflops"], value(ours[f"bwd:{case}"], "TFLOP/s"),
                         f["bwd_tflops"])
    return out


def goal_of(chapter, key, level="target"):
    """A goal of results/targets.json as the tables write it (chapter: its number)."""
    name = next(c for c in CONFIG if c.startswith(f"{chapter:02d}_"))
    return goals.goal_text(goals.find(goals.load(TREE / "results" / "targets.json"), name, key, level)["goal"])


def flex_section(rows, anchors):
    r = flex_ratios(rows, anchors)
    if not r:
        return ""
    lines = ["", "**Against FlexAttention** (`flex_attention` under `torch.compile`, scripts/anchors/torch_anchors.py "
             "group `flex`, same GPU session; useful TFLOP/s: 4 d FLOPs per visible (query, key) pair, backward 2.5x). "
             f"Targets: forward >= {goal_of(15, 'fwd_vs_flex')}x, backward >= {goal_of(15, 'bwd_vs_flex')}x.", "",
             "| mask | fwd | flex fwd | ratio | bwd | flex bwd | ratio |", "|---|---:|---:|---:|---:|---:|---:|"]
    for case, (f, ff, b, fb) in r.items():
        lines.append(f"| {case} | {f:.1f} | {ff:.1f} | {f / ff:.2f}x | {b:.1f} | {fb:.1f} | {b / fb:.2f}x |")
    return "\n".join(lines) + "\n"



# Chapters with figures of their own: the command (after python3) given RUN_DIR and the chapter's OUT_DIR.
HOOKS = {
    "08_spilling_study": lambda run, d: [ROOT / "08_spilling_study" / "plot_heatmap.py",
                                         run / "bench" / "08_spilling_study.json", run / "ncu" / "spill_table.csv", d],
    "15_attention_variants": lambda run, d: [ROOT / "15_attention_variants" / "plot_sparsity.py",
                                             run / "bench" / "15_attention_variants.json", d,
                                             *(["--tile-sets", run / "masks" / "tile_sets.csv"]
                                               if (run / "masks" / "tile_sets.csv").exists() else [])],
}


# Chapters whose README holds tables of their own beside the chapter table (step tables with ncu
# columns, anchors, sweeps): each script's arguments (after python3) given RUN_DIR; run with the
# chapter's README and --publish when results.py is given --readme. An ncu input comes from RUN_DIR/ncu
# when the run measured it, else from the published results (an earlier run: the tables say which).
def ncu_inputs(run, in_run, published):
    found = sorted((run / "ncu").glob(in_run))
    return found or sorted((TREE / "results").glob(published))


README_TABLES = {
    "09_tensor_core_matmul": lambda run: [
        ROOT / "09_tensor_core_matmul" / "step_table.py", run / "bench" / "09_tensor_core_matmul.json",
        *ncu_inputs(run, "ncu_steps.csv", "09_tensor_core_matmul/ncu_steps.csv")],
    "10_fa2_tensor_cores": lambda run: [
        ROOT / "10_fa2_tensor_cores" / "step_table.py", run / "bench" / "10_fa2_tensor_cores.json",
        *ncu_inputs(run, "ncu_10.csv", "logs/handoff_ad3dfa1/10/ncu_10.csv"), run / "anchors2.json"],
    "11_flash_decoding": lambda run: [
        ROOT / "11_flash_decoding" / "results_tables.py", run / "bench" / "11_flash_decoding.json",
        run / "anchors2.json", *ncu_inputs(run, "ncu_decode.csv", "11_flash_decoding/ncu_decode.csv")],
    "12_fa3_hopper": lambda run: [
        ROOT / "12_fa3_hopper" / "step_table.py", run / "bench" / "12_fa3_hopper.json",
        *bench_parts(run, "12_fa3_hopper"),  # the d = 256 rows (a later call: its block names it)
        chapter_anchors_path(run, "anchors2.json", "12_fa3_hopper"),
        *ncu_inputs(run, "12/ncu_*.log", "logs/handoff_ad3dfa1/12/ncu_*.log"),
        "--targets", TREE / "results" / "targets.json"],
}


def bench_parts(run, chapter):
    """bench/<chapter>.<part>.json: other runs of a chapter that only its README tables read."""
    return [p for p in sorted((run / "bench").glob(f"{chapter}.*.json")) if not p.name.endswith(".summary.json")]


def chapter_benches(run):
    """bench/<chapter>.json, one per chapter (parts and .summary.json left out)."""
    return [p for p in sorted((run / "bench").glob("*.json")) if "." not in p.stem]


# Parts Google Benchmark appends to a name (/iterations:1, /repeats:3, /manual_time, ...).
GB_SUFFIX = re.compile(r"^(iterations|repeats|min_time|min_warmup_time|threads|manual_time|real_time|process_time)"
                       r"(:.*)?$")


def load_json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"results.py: cannot read {path}: {e}")


def parse(path):
    data = load_json(path)
    if not isinstance(data, dict):
        raise SystemExit(f"results.py: {path} is not Google Benchmark JSON (no 'benchmarks')")
    rows = []
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        parts = [p for p in b["name"].split("/") if not GB_SUFFIX.match(p)]
        lead = next((i for i, p in enumerate(parts) if "=" in p), len(parts))
        variant, rest = "/".join(parts[:lead]), parts[lead:]
        params = dict(p.split("=", 1) for p in rest if "=" in p)
        error = b.get("error_message") if (b.get("error_occurred") or b.get("skipped")) else None
        rows.append(dict(variant=variant, params=params, ms=b.get("ms"), metric={k: b.get(k) for k in ("GB/s", "TFLOP/s", "tok/s")},
                         error=error, repetitions=b.get("repetitions", 1)))
    return data.get("context", {}), median_of_repetitions(rows)


def median_of_repetitions(rows):
    """With --benchmark_repetitions, one row per benchmark: each figure the median of its repetitions."""
    groups = {}
    for r in rows:
        groups.setdefault((r["variant"], key_of(r["params"])), []).append(r)

    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    out = []
    for group in groups.values():
        row = dict(group[0])
        row["samples"] = [(g["ms"], g["metric"]) for g in group if not g["error"]]  # each repetition's figures
        if len(group) > 1:
            row["ms"] = median(g["ms"] for g in group)
            row["metric"] = {k: median(g["metric"][k] for g in group) for k in row["metric"]}
            row["error"] = next((g["error"] for g in group if g["error"]), None)
        out.append(row)
    return out


def value(row, metric):
    v = row["metric"].get(metric)
    if v is None and metric == "TFLOP/s":
        v = row["metric"].get("GB/s")
    return v


def key_of(params):
    return "/".join(f"{k}={v}" for k, v in params.items())


def table(rows, cfg, context=None):
    # cfg["baseline_of"]: variants measured against another baseline than the chapter's (a variant
    # that is itself a baseline maps to None).
    metric, base, own = cfg["metric"], cfg.get("baseline"), cfg.get("baseline_of", {})
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    shapes = list(dict.fromkeys(key_of(r["params"]) for r in rows))
    cell = {(key_of(r["params"]), r["variant"]): r for r in rows}
    reps = max((r.get("repetitions", 1) for r in rows), default=1)
    how = ((f"the median of {reps} `ladder::time_gpu` calls per row (common/timing.h), each the median of its repeats"
            if reps > 1 else "the median of one `ladder::time_gpu` call per row (common/timing.h)")
           if (context or {}).get("timing") else "median of the timed iterations")
    others = "".join(f"; `{v}`: of `{b}`" for v, b in own.items() if b)
    out = [f"{metric}, {how}" + (f"; (x) = fraction of `{base}` in the same run{others}" if base else ""),
           "", "| shape | " + " | ".join(f"`{v}`" for v in variants) + " |", "|---" * (len(variants) + 1) + "|"]
    for s in shapes:
        cells = []
        for v in variants:
            vb = own.get(v, base)
            b = cell.get((s, vb)) if vb else None
            bv = value(b, metric) if b and not b["error"] else None
            r = cell.get((s, v))
            if r is None:
                cells.append("")
            elif r["error"]:
                cells.append(f"skipped: {r['error']}")
            else:
                x = value(r, metric)
                text = f"{x:.1f}" if x is not None else f"{r['ms']:.3f} ms"
                if bv and x is not None and v != vb:
                    text += f" ({x / bv:.2f}x)"
                cells.append(text)
        out.append(f"| {s} | " + " | ".join(cells) + " |")
    for num, den, label in cfg.get("time_ratios", []):
        lines = []
        for s in shapes:
            a, b = cell.get((s, num)), cell.get((s, den))
            if a and b and not a["error"] and not b["error"] and a["ms"] and b["ms"]:
                lines.append(f"| {s} | {a['ms']:.3f} | {b['ms']:.3f} | {a['ms'] / b['ms']:.2f} |")
        if lines:
            if "{" in label:  # a target's goal, from results/targets.json
                label = label.format(tiles_goal=goal_of(15, "fwd_tiles10_time_over_fraction"))
            out += ["", f"**{label}**", "", f"| shape | `{num}` ms | `{den}` ms | ratio |", "|---|---|---|---|"] + lines
    return "\n".join(out) + "\n"


def peak_section(rows, cfg):
    """The chapter's kernels and its anchors as a fraction of the H200's peak (chapters 09-13): dense
    BF16 tensor-core FLOPs, or HBM bandwidth for a GB/s chapter. cfg["peak"]: the variants to show, or
    True for each shape's fastest (experiments, tune:*, left out); with a baseline, only the shapes
    that have it."""
    metric, base, which = cfg["metric"], cfg.get("baseline"), cfg["peak"]
    peak, what = ((H200_HBM_GBPS, "HBM3e bandwidth, 4.8 TB/s") if metric == "GB/s" else
                  (H200_BF16_DENSE_TFLOPS, "dense BF16 tensor-core peak, 989 TFLOP/s"))
    ok = [r for r in rows if not r["error"] and value(r, metric)]
    frac = lambda r: f"{value(r, metric):.1f} ({value(r, metric) / peak:.2f})"  # noqa: E731
    lines = []
    for s in dict.fromkeys(key_of(r["params"]) for r in ok):
        here = [r for r in ok if key_of(r["params"]) == s]
        if base and not any(r["variant"] == base for r in here):
            continue
        if which is True:
            # fp32 rows run on CUDA cores and FP8 has a peak of its own (twice bf16's): neither is read against bf16's.
            ours = [r for r in here if not r["variant"].startswith(("anchor:", "tune:", "fp32_", "fp8"))]
            ours = [max(ours, key=lambda r: value(r, metric))] if ours else []
        else:
            ours = [r for v in which for r in here if r["variant"] == v]
        if not ours:
            continue
        anchors = ", ".join(f"`{r['variant']}` {frac(r)}" for r in here
                            if r["variant"].startswith("anchor:") and "fp8" not in r["variant"])
        lines.append(f"| {s} | " + ", ".join(f"`{r['variant']}` {frac(r)}" for r in ours) + f" | {anchors} |")
    if not lines:
        return ""
    return "\n".join(["", f"**Against the H200's {what}** (NVIDIA H200 SXM datasheet): {metric} and, in brackets, "
                      "the fraction of that peak" +
                      (", for each shape's fastest kernel (fp32, FP8 and tune: rows left out)" if which is True else ""),
                      "", "| shape | this chapter | in-run anchors |", "|---|---|---|"] + lines) + "\n"


def pytorch_cudnn(anchors, params, direction):
    """PyTorch SDPA's cuDNN figure (TFLOP/s) at a chapter's shape, from torch_anchors' records."""
    B, H, N, d, causal = (params.get(k) for k in ("B", "H", "N", "d", "causal"))
    for a in anchors:
        if a.get("impl") != "cudnn":
            continue
        if "H_kv" in params:
            if (a.get("kind") == "gqa_bf16" and causal == "1" and
                    a.get("shape", "").startswith(f"B{B} Hq{H} Hkv{params['H_kv']} N{N} d{d}")):
                return a.get("tflops") if direction == "fwd" else a.get("bwd_tflops")
        elif (a.get("kind") == "sdpa_bf16" and a.get("shape") == f"B{B} H{H} N{N} d{d}" and
              bool(a.get("causal")) == (causal == "1")):
            return a.get(f"{direction}_tflops")
    return None


def cudnn_section(rows, cfg, anchors):
    """Chapters 10 and 12: the chapter's kernel, cuDNN's attention timed in the benchmark's own process
    (anchor:cudnn/<direction>) and PyTorch SDPA's cuDNN backend in the same run, side by side."""
    cell = {(r["variant"], key_of(r["params"])): r for r in rows if not r["error"]}
    lines = []
    for direction in cfg.get("cudnn", ()):
        for r in rows:
            if r["variant"] != f"anchor:cudnn/{direction}" or r["error"]:
                continue
            s = key_of(r["params"])
            ours, cpp = cell.get((direction, s)), value(r, "TFLOP/s")
            ours_v = value(ours, "TFLOP/s") if ours else None
            torch_v = pytorch_cudnn(anchors, r["params"], direction)
            f = lambda x: "—" if x is None else f"{x:.1f}"  # noqa: E731
            q = lambda a, b: "—" if a is None or not b else f"{a / b:.2f}"  # noqa: E731
            lines.append(f"| {s} | {direction} | {f(ours_v)} | {f(cpp)} | {q(ours_v, cpp)} | {f(torch_v)} "
                         f"| {q(cpp, torch_v)} |")
    if not lines:
        return ""
    return "\n".join(["", "**cuDNN two ways**: `anchor:cudnn` is cuDNN's fused attention called from this chapter's "
                      "benchmark (C++, the cuDNN frontend, the same inputs and timing); PyTorch SDPA cuDNN is "
                      "`torch_anchors.py` in the same run. Their ratio shows what the two routes to the same library "
                      "differ by.", "",
                      "| shape | pass | this chapter TFLOP/s | cuDNN, C++ | this chapter / cuDNN C++ | PyTorch SDPA cuDNN "
                      "| cuDNN C++ / PyTorch |", "|---|---|---|---|---|---|---|"] + lines) + "\n"


def plot(rows, cfg, title, path):
    metric, x = cfg["metric"], cfg.get("x")
    rows = [r for r in rows if not r["error"] and value(r, metric) is not None]
    if not rows:
        return False
    if x and all(x in r["params"] for r in rows):
        groups = list(dict.fromkeys(key_of({k: v for k, v in r["params"].items() if k != x}) for r in rows))
        fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 4), squeeze=False)
        for ax, g in zip(axes[0], groups):
            for variant in dict.fromkeys(r["variant"] for r in rows):
                pts = sorted((int(r["params"][x]), value(r, metric)) for r in rows
                             if r["variant"] == variant and key_of({k: v for k, v in r["params"].items() if k != x}) == g)
                if pts:
                    ax.plot(*zip(*pts), marker="o", linestyle="--" if variant.startswith("anchor:") else "-",
                            label=variant)
            ax.set_xscale("log", base=2)
            ax.set_xlabel(x)
            ax.set_ylabel(metric)
            if g:
                ax.set_title(g, fontsize=9)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)
    else:
        shapes = list(dict.fromkeys(key_of(r["params"]) for r in rows))
        variants = list(dict.fromkeys(r["variant"] for r in rows))
        fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(shapes) * len(variants) / 3), 4.5))
        width = 0.8 / len(variants)
        cell = {(key_of(r["params"]), r["variant"]): value(r, metric) for r in rows}
        for i, v in enumerate(variants):
            ax.bar([s + i * width for s in range(len(shapes))], [cell.get((s, v), 0) for s in shapes], width, label=v)
        ax.set_xticks([s + 0.4 - width / 2 for s in range(len(shapes))], shapes, fontsize=7, rotation=15)
        ax.set_ylabel(metric)
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


class MissingBlock(Exception):
    """A README block the run has a table for, and no marker to put it between."""


class PublishFailed(SystemExit):
    """What publish() could not do, each item on its own."""

    def __init__(self, items):
        super().__init__("results.py: " + "; ".join(items))
        self.items = items


def fill(readme, name, content):
    """Replaces what stands between <!-- results:NAME --> and <!-- /results:NAME --> in a README. A README
    or a start marker that is not there is an error (MissingBlock): the run has a table and nowhere to put it."""
    if not readme.exists():
        raise MissingBlock(f"{readme}: no such README for the block <!-- results:{name} -->")
    text = readme.read_text()
    start, end = f"<!-- results:{name} -->", f"<!-- /results:{name} -->"
    if start not in text:
        raise MissingBlock(f"{readme} has no {start} ... {end} block")
    if end not in text:
        text = text.replace(start, f"{start}\n{end}")
    pattern = re.escape(start) + ".*?" + re.escape(end)
    text = re.sub(pattern, lambda _: f"{start}\n{content.strip()}\n{end}", text, flags=re.S)
    readme.write_text(text)


def csv_table(path):
    import csv
    rows = list(csv.reader(path.read_text().splitlines()))
    if not rows:
        return ""
    out = ["| " + " | ".join(rows[0]) + " |", "|---" * len(rows[0]) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:] if any(r)]
    return "\n".join(out) + "\n"


def load_anchors(path):
    """torch_anchors' records (a list), or [] when the file is missing or is not such a list."""
    if not path.exists():
        return []
    data = load_json(path)
    return [a for a in data if isinstance(a, dict)] if isinstance(data, list) else []


def chapter_anchors_path(run, name, chapter):
    """A chapter re-measured in another session brings its own anchors: <name>_<chapter>.json."""
    own = run / name.replace(".json", f"_{chapter}.json")
    return own if own.exists() else run / name


def chapter_anchors(run, name, chapter):
    return load_anchors(chapter_anchors_path(run, name, chapter))


def anchors_section(run, out):
    """PyTorch's figures from the same run (scripts/anchors/torch_anchors.py), and the FA chapters next to
    PyTorch's fp32 scaled_dot_product_attention (memory-efficient backend) at the shapes both measured."""
    anchors = load_anchors(run / "anchors.json")
    if not anchors:
        return []
    meta = next((a for a in anchors if a.get("kind") == "meta"), None)
    how = (f"Measured by `scripts/anchors/torch_anchors.py` (PyTorch {meta.get('torch')}, CUDA {meta.get('cuda')}, "
           f"cuDNN {meta.get('cudnn')}) on the same GPU in the same run as the benchmarks, timed the way they are: "
           f"{meta.get('method')}." if meta else
           "Measured by `torch_anchors.py` (PyTorch 2.11, `triton.testing.do_bench`, median) on the same machine "
           "between this run's benchmarks.")
    lines = ["", "## PyTorch anchors, same run", "", how,
             "[anchors.json](anchors.json) and [anchors2.json](anchors2.json) hold them all.", "",
             "| kind | impl | shape | ms | TFLOP/s or GB/s |", "|---|---|---|---|---|"]
    for a in anchors:
        if a.get("kind") in ("copy", "vector_add", "softmax", "gemm") and "bf16" not in a.get("impl", ""):
            figure = a.get("error") or a.get("tflops", a.get("gbps"))
            lines.append(f"| {a['kind']} | {a.get('impl')} | {a.get('shape')} | {a.get('ms', '')} | {figure} |")
    ours = {}
    for chapter, variant, kind in (("06_fa2_forward", "fa2", "attn_fwd"), ("07_fa_backward", "fa2_backward_atomic",
                                                                             "attn_bwd")):
        bench = run / "bench" / f"{chapter}.json"
        if bench.exists():
            for r in parse(bench)[1]:
                if r["variant"] == variant and not r["error"]:
                    p = r["params"]
                    ours[(kind, int(p["N"]), int(p["d"]), p["causal"] == "1")] = r["metric"]["TFLOP/s"]
    rows = []
    own07 = run / "anchors_07_fa_backward.json"  # 07 re-measured in a later session, with its own anchors
    bwd_anchors = load_anchors(own07) if own07.exists() else anchors
    for a in [x for x in anchors if x.get("kind") == "attn_fwd"] + [x for x in bwd_anchors if x.get("kind") == "attn_bwd"]:
        m = re.match(r"B(\d+) H(\d+) N(\d+) d(\d+) causal=(\w+)", a.get("shape", ""))
        if a["kind"] in ("attn_fwd", "attn_bwd") and a["impl"] == "sdpa-efficient float32" and m:
            key = (a["kind"], int(m.group(3)), int(m.group(4)), m.group(5) == "True")
            if key in ours and a.get("tflops"):
                name = "FA2 forward (06)" if a["kind"] == "attn_fwd" else "FA backward, atomic (07)"
                rows.append(f"| {name} | {a['shape']} | {ours[key]:.1f} | {a['tflops']} | {ours[key] / a['tflops']:.2f}x |")
    if rows:
        lines += ["", "### The FA chapters against PyTorch's fp32 attention", "",
                  "PyTorch's `scaled_dot_product_attention` in fp32 runs the memory-efficient (xformers/CUTLASS) kernel.",
                  "", "| ours | shape | ours TFLOP/s | sdpa-efficient fp32 TFLOP/s | ratio |", "|---|---|---|---|---|"] + rows
    return lines


def spill_rows(path):
    import csv
    rows = list(csv.DictReader(path.read_text().splitlines()))
    num = lambda v: float(v.replace(",", "")) if v not in ("", None) else 0.0
    return [r for r in rows if r.get("kind") and r.get("ID", "x") != ""], num


def spill_ncu_table(path):
    rows, num = spill_rows(path)
    out = ["`ncu --clock-control none`, one launch each at B=4, H=16, N=4096, d=128 (B_r=8, B_c=32).", "",
           "| kernel | regs/thread | local loads (MB, at L1) | local stores (MB, at L1) | DRAM read MB | DRAM write MB "
           "| duration ms | achieved occupancy % | theoretical occupancy % |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['kind']} | {r['launch__registers_per_thread']} | "
                   f"{num(r['l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum']) / 1e6:.0f} | "
                   f"{num(r['l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum']) / 1e6:.0f} | "
                   f"{num(r['dram__bytes_read.sum']) / 1e6:.0f} | {num(r['dram__bytes_write.sum']) / 1e6:.0f} | "
                   f"{num(r['gpu__time_duration.sum']) / 1e6:.2f} | "
                   f"{num(r['sm__warps_active.avg.pct_of_peak_sustained_active']):.1f} | "
                   f"{num(r['sm__maximum_warps_per_active_cycle_pct']):.1f} |")
    return "\n".join(out) + "\n"


def spill_reading(table_csv, ncu_csv):
    """The chapter's reading of its own numbers, written from the run's CSVs."""
    import csv
    t = list(csv.DictReader(table_csv.read_text().splitlines()))
    f = lambda r, k: float(r[k])
    lecture = next(r for r in t if r["kind"] == "normal" and r["d"] == "128" and r["B_r"] == "8" and r["B_c"] == "32")
    local = next(r for r in t if r["kind"] == "local")
    capped = sorted((r for r in t if r["kind"] == "capped"), key=lambda r: -int(r["maxrreg"]))
    first_spill = next((r for r in capped if f(r, "spill_store_bytes") > 0), None)
    sweep = [r for r in t if r["kind"] == "normal" and r["d"] == "128"]
    best = max(sweep, key=lambda r: f(r, "tflops"))
    worst = min(sweep, key=lambda r: f(r, "tflops"))
    rows, num = spill_rows(ncu_csv)
    by = {r["kind"]: r for r in rows}
    lines = ["*Read from this run's tables by `scripts/results.py`.*", ""]
    if first_spill:
        lines.append(f"- **Where spilling starts.** The uncapped lecture kernel uses {lecture['registers']} registers. "
                     f"Capped at {first_spill['maxrreg']} it spills ({first_spill['spill_store_bytes']} B of spill "
                     f"stores per thread) and runs at {f(first_spill, 'tflops') / f(lecture, 'tflops'):.2f}x the "
                     f"lecture kernel's TFLOP/s; at {capped[-1]['maxrreg']} registers it spills "
                     f"{capped[-1]['spill_store_bytes']} B and runs at "
                     f"{f(capped[-1], 'tflops') / f(lecture, 'tflops'):.2f}x.")
    text = (f"- **What local accumulators cost.** The local variant (stack frame {local['stack_frame_bytes']} B, "
            f"spill stores {local['spill_store_bytes']} B) takes {f(local, 'ms'):.1f} ms against the lecture "
            f"kernel's {f(lecture, 'ms'):.1f} ms: {f(local, 'ms') / f(lecture, 'ms'):.2f}x slower.")
    if "local" in by and "normal" in by:
        lb = num(by["local"]["l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"]) + num(
            by["local"]["l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"])
        text += (f" Nsight Compute counts {lb / 1e9:.0f} GB of local loads and stores at L1, while its DRAM reads "
                 f"are {num(by['local']['dram__bytes_read.sum']) / 1e6:.0f} MB against the normal kernel's "
                 f"{num(by['normal']['dram__bytes_read.sum']) / 1e6:.0f} MB: the 48-byte frames stay in L1, so the "
                 f"cost is the extra LDL/STL instructions and L1 traffic in the inner loop, not HBM bytes.")
    lines.append(text)
    lines.append(f"- **Fastest sweep point.** B_r={best['B_r']}, B_c={best['B_c']}: {f(best, 'tflops'):.2f} TFLOP/s "
                 f"({best['registers']} registers, {int(f(best, 'smem_bytes')) // 1024} KB of shared memory, "
                 f"{best['blocks_per_sm']} blocks per SM), against {f(lecture, 'tflops'):.2f} for the lecture's "
                 f"B_r=8, B_c=32 and {f(worst, 'tflops'):.2f} for the slowest, B_r={worst['B_r']}, B_c={worst['B_c']} "
                 f"({worst['blocks_per_sm']} blocks per SM). More query rows per block reuse each K_j, V_j load more "
                 f"times; a wide B_c costs shared memory and so resident blocks.")
    return "\n".join(lines) + "\n"


# results/summary.json: each chapter's headline ratios, keyed as the issues name them.
# Each entry: key -> (kind, ...) evaluated on the run's benchmark JSON and anchors:
#   ("ratio", chapter, variant_a, variant_b, params, metric): value(a) / value(b)
#   ("time_ratio", chapter, variant_a, variant_b, params):     ms(a) / ms(b)
#   ("anchor", chapter, variant, params, metric, anchors_file, match, anchor_metric): ours / PyTorch's
# (the in-process cuDNN anchor of 10 and 12, anchor:cudnn/fwd and /bwd, is a "ratio": the same benchmark run)
#   ("best", chapter, base, params, metric): the best non-anchor variant / base
# (Chapters that compute their headline themselves write bench/<chapter>.summary.json,
# which is merged as it is.)
FA_SHAPE = {"d": "128", "N": "4096", "causal": "0"}
TC_SHAPE = {"d": "128", "N": "4096", "B": "4", "H": "16", "causal": "0"}
SDPA_D128 = {"kind": "sdpa_bf16", "shape": "B4 H16 N4096 d128", "causal": False}
DECODE = {"B": "8", "Hq": "32", "Hkv": "8", "Nkv": "131072", "d": "128", "layout": "contiguous", "splits": "auto"}
SUMMARY = {
    "01_vector_add": {"vs_copy": ("ratio", "01_vector_add", "float4", "anchor:cudaMemcpy_d2d", {"n": "268435456"},
                                  "GB/s")},
    "02_matmul_naive": {"vs_cublas_fp32": ("best", "02_matmul_naive", "anchor:cublas_sgemm",
                                           {"M": "4096", "N": "4096", "K": "4096"}, "TFLOP/s")},
    "03_matmul_tiled": {"vs_cublas_fp32": ("ratio", "03_matmul_tiled", "register_tiled", "anchor:cublas_sgemm",
                                           {"M": "4096", "N": "4096", "K": "4096"}, "TFLOP/s")},
    "04_online_softmax": {
        "vs_copy": ("ratio", "04_online_softmax", "block_onchip", "anchor:cudaMemcpy_d2d", {"R": "32768", "C": "4096"},
                    "GB/s"),
        "online_vs_3pass": ("time_ratio", "04_online_softmax", "safe_3pass", "online_2pass",
                            {"R": "2048", "C": "65536"})},
    "05_fa1_forward": {"vs_standard": ("time_ratio", "05_fa1_forward", "standard", "fa1",
                                       {"d": "64", "N": "4096", "causal": "0"})},
    "06_fa2_forward": {
        "vs_fa1": ("time_ratio", "06_fa2_forward", "fa1", "fa2", FA_SHAPE),
        "vs_standard": ("time_ratio", "06_fa2_forward", "standard", "fa2", FA_SHAPE),
        "vs_sdpa_efficient_fp32": ("anchor", "06_fa2_forward", "fa2", FA_SHAPE, "TFLOP/s", "anchors.json",
                                   {"kind": "attn_fwd", "impl": "sdpa-efficient float32",
                                    "shape": "B4 H16 N4096 d128 causal=False"}, "tflops")},
    "07_fa_backward": {
        "bwd_over_fwd_time": ("time_ratio", "07_fa_backward", "fa2_backward_atomic", "fa2_forward", FA_SHAPE),
        "vs_sdpa_efficient_fp32": ("anchor", "07_fa_backward", "fa2_backward_atomic", FA_SHAPE, "TFLOP/s",
                                   "anchors.json", {"kind": "attn_bwd", "impl": "sdpa-efficient float32",
                                                    "shape": "B4 H16 N4096 d128 causal=False"}, "tflops")},
    "09_tensor_core_matmul": {"vs_cublas_bf16": ("best", "09_tensor_core_matmul", "anchor:cublas_bf16",
                                                 {"M": "4096", "N": "4096", "K": "4096"}, "TFLOP/s")},
    "10_fa2_tensor_cores": {
        "fwd_vs_sdpa_flash": ("anchor", "10_fa2_tensor_cores", "fwd", TC_SHAPE, "TFLOP/s", "anchors2.json",
                              dict(SDPA_D128, impl="flash"), "fwd_tflops"),
        "bwd_vs_sdpa_flash": ("anchor", "10_fa2_tensor_cores", "bwd", TC_SHAPE, "TFLOP/s", "anchors2.json",
                              dict(SDPA_D128, impl="flash"), "bwd_tflops"),
        "fwd_vs_sdpa_cudnn": ("anchor", "10_fa2_tensor_cores", "fwd", TC_SHAPE, "TFLOP/s", "anchors2.json",
                              dict(SDPA_D128, impl="cudnn"), "fwd_tflops"),
        "fwd_vs_cudnn": ("ratio", "10_fa2_tensor_cores", "fwd", "anchor:cudnn/fwd", TC_SHAPE, "TFLOP/s"),
        "bwd_vs_cudnn": ("ratio", "10_fa2_tensor_cores", "bwd", "anchor:cudnn/bwd", TC_SHAPE, "TFLOP/s")},
    "11_flash_decoding": {
        "vs_copy": ("ratio", "11_flash_decoding", "decode", "anchor:cudaMemcpy_d2d", DECODE, "GB/s"),
        "vs_sdpa_flash": ("anchor", "11_flash_decoding", "decode", DECODE, "GB/s", "anchors2.json",
                          {"kind": "decode_bf16", "impl": "flash", "shape": "B8 Hq32 Hkv8 Nq1 Nkv131072 d128"}, "gbps")},
    "12_fa3_hopper": {
        "fwd_vs_sdpa_cudnn": ("anchor", "12_fa3_hopper", "fwd", TC_SHAPE, "TFLOP/s", "anchors2.json",
                              dict(SDPA_D128, impl="cudnn"), "fwd_tflops"),
        "fwd_vs_cudnn": ("ratio", "12_fa3_hopper", "fwd", "anchor:cudnn/fwd", TC_SHAPE, "TFLOP/s"),
        "fp8_vs_bf16": ("ratio", "12_fa3_hopper", "fp8", "fwd", TC_SHAPE, "TFLOP/s"),
        "fp8_tflops": ("value", "12_fa3_hopper", "fp8", TC_SHAPE, "TFLOP/s"),
        "fp8_vs_cudnn_fp8": ("ratio", "12_fa3_hopper", "fp8", "anchor:cudnn/fp8", TC_SHAPE, "TFLOP/s")},
    # 13_ring_attention: its run (13_ring_attention/run_two_gpu.sh) writes bench/13_ring_attention.summary.json.
    "14_fa3_backward": {
        "bwd_vs_cudnn": ("ratio", "14_fa3_backward", "bwd", "anchor:cudnn/bwd", TC_SHAPE, "TFLOP/s"),
        "causal_bwd_vs_cudnn": ("ratio", "14_fa3_backward", "bwd", "anchor:cudnn/bwd", dict(TC_SHAPE, causal="1"),
                                "TFLOP/s"),
        "d64_bwd_vs_cudnn": ("ratio", "14_fa3_backward", "bwd", "anchor:cudnn/bwd", dict(TC_SHAPE, d="64"), "TFLOP/s"),
        "n16384_causal_bwd_vs_cudnn": ("ratio", "14_fa3_backward", "bwd", "anchor:cudnn/bwd",
                                       {"d": "128", "N": "16384", "B": "1", "H": "16", "causal": "1"}, "TFLOP/s"),
        "gqa_causal_bwd_vs_cudnn": ("ratio", "14_fa3_backward", "bwd", "anchor:cudnn/bwd",
                                    {"d": "128", "N": "4096", "B": "4", "H": "32", "H_kv": "8", "causal": "1"},
                                    "TFLOP/s"),
        "det_vs_fast": ("ratio", "14_fa3_backward", "step:deterministic", "step:bulk", TC_SHAPE, "TFLOP/s"),
        "train_vs_cudnn": ("ratio", "14_fa3_backward", "train", "anchor:cudnn/train", TC_SHAPE, "TFLOP/s")},
}


def accuracy_table(csv_path, dest):
    """Chapter 07's error vs N (accuracy_vs_n.py): a table per tensor and one plot."""
    import csv
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(csv_path, dest / "accuracy.csv")
    rows = list(csv.DictReader(csv_path.read_text().splitlines()))
    Ns = sorted({int(r["N"]) for r in rows})
    tensors = list(dict.fromkeys(r["tensor"] for r in rows))
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    err = {(int(r["N"]), r["tensor"], r["impl"]): float(r["rel_l2"]) for r in rows}
    out = ["rel_l2 against an fp64 reference on the same fp32 inputs (B=1, H=2, d=64, dense, uniform [-1, 1) inputs), "
           "from `accuracy_vs_n.py` in this run ([accuracy.csv](../results/07_fa_backward/accuracy.csv)).", ""]
    fig, axes = plt.subplots(1, len(tensors), figsize=(4.2 * len(tensors), 3.8), squeeze=False)
    for ax, t in zip(axes[0], tensors):
        cols = [i for i in impls if any((n, t, i) in err for n in Ns)]
        out += [f"**{t}**", "", "| N | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for n in Ns:
            out.append(f"| {n} | " + " | ".join(f"{err[(n, t, i)]:.2e}" if (n, t, i) in err else "" for i in cols) + " |")
        out.append("")
        for i in cols:
            ax.plot(Ns, [err.get((n, t, i)) for n in Ns], marker="o", label=i,
                    linestyle="--" if "pytorch" in i else "-")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(t)
        ax.set_xlabel("N")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("rel_l2 vs fp64")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dest / "accuracy.png", dpi=110)
    plt.close(fig)
    return "![error vs N](../results/07_fa_backward/accuracy.png)\n\n" + "\n".join(out)


def summary_json(run, out):
    """results/summary.json from the run: one object per chapter, its headline ratios."""
    benches = {p.stem: parse(p)[1] for p in chapter_benches(run)}

    def find(chapter, variant, params):
        for r in benches.get(chapter, []):
            if r["variant"] == variant and not r["error"] and all(r["params"].get(k) == v for k, v in params.items()):
                return r
        return None

    result = {}
    for chapter, keys in SUMMARY.items():
        entry = {}
        for key, spec in keys.items():
            kind, ch = spec[0], spec[1]
            v = None
            if kind == "ratio":
                a, b = find(ch, spec[2], spec[4]), find(ch, spec[3], spec[4])
                if a and b and value(b, spec[5]):
                    v = value(a, spec[5]) / value(b, spec[5])
            elif kind == "time_ratio" and spec[4] is not None:
                a, b = find(ch, spec[2], spec[4]), find(ch, spec[3], spec[4])
                if a and b and b["ms"]:
                    v = a["ms"] / b["ms"]
            elif kind == "value":
                a = find(ch, spec[2], spec[3])
                if a:
                    v = value(a, spec[4])
            elif kind == "best":
                rows = [r for r in benches.get(ch, []) if not r["error"] and not r["variant"].startswith(("anchor:", "tune:"))
                        and all(r["params"].get(k) == x for k, x in spec[3].items())]
                base = find(ch, spec[2], spec[3])
                if rows and base:
                    v = max(value(r, spec[4]) for r in rows) / value(base, spec[4])
            elif kind == "anchor":
                ours = find(ch, spec[2], spec[3])
                if ours:
                    match = [a for a in chapter_anchors(run, spec[5], ch)
                             if all(a.get(k) == x for k, x in spec[6].items()) and a.get(spec[7])]
                    if match:
                        v = value(ours, spec[4]) / match[0][spec[7]]
            if v is not None:
                entry[key] = round(v, 3)
        if entry:
            result[chapter] = entry
    variants = flex_ratios(benches.get("15_attention_variants", []), chapter_anchors(run, "anchors2.json",
                                                                                   "15_attention_variants"))
    if variants:  # the lowest ratio over the three masks, each direction
        entry = result.setdefault("15_attention_variants", {})
        entry["fwd_vs_flex"] = round(min(f / ff for f, ff, _, _ in variants.values()), 3)
        entry["bwd_vs_flex"] = round(min(b / fb for _, _, b, fb in variants.values()), 3)
    docs = [r for r in benches.get("15_attention_variants", []) if not r["error"] and r["variant"] == "train:documents"]
    equal = [r for r in benches.get("15_attention_variants", []) if not r["error"]
             and r["variant"] == "anchor:equal_lengths/train"]
    if docs and equal:
        result.setdefault("15_attention_variants", {})["varlen_vs_dense"] = round(
            value(docs[0], "TFLOP/s") / value(equal[0], "TFLOP/s"), 3)
    for extra in sorted((run / "bench").glob("*.summary.json")):  # chapters that compute their own
        result.setdefault(extra.name.split(".")[0], {}).update(load_json(extra))
    # Chapter 13 on ONE GPU (its loopback ring, .handoff/13/request.sh): the same ratios against one
    # chapter-10 call on the whole sequence, under loopback_* keys; fwd_eff, fwdbwd_eff and
    # causal_zigzag_eff are two-GPU figures and come only from run_two_gpu.sh (*.summary.json above).
    # Its run is another than the chapter's table's: handoff/13/env.log (date:, commit:, gpu: lines) names it,
    # and summary.json's figure_runs says so for each of these figures.
    figure_runs = {}
    loopback = run / "handoff" / "13" / "ratios_loopback.json"
    if loopback.exists():
        entry = result.setdefault("13_ring_attention", {})
        env = run_env(loopback.parent / "env.log")
        source = env.pop("source", "handoff/13/ratios_loopback.json")
        for key, v in load_json(loopback).items():
            if "loopback_" + key not in entry:
                entry["loopback_" + key] = v
                figure_runs.setdefault("13_ring_attention", {})["loopback_" + key] = dict(
                    env, what="the loopback ring on one GPU against one chapter-10 call", file=source)
    # A publication may join chapters measured at different commits (commit_per_chapter: the commit of the run
    # each chapter's figures here come from; figure_runs: the figures measured in another run than the chapter's
    # table): the top-level commit and date are the newest run's.
    contexts = [parse(p)[0] for p in chapter_benches(run)]
    context = max((c for c in contexts if c), key=lambda c: c.get("date", ""), default={})
    commits = {p.stem: parse(p)[0].get("git_commit", "?") for p in chapter_benches(run)}
    for c, runs in figure_runs.items():
        if set(runs) == set(result[c]) and len({r["commit"] for r in runs.values()}) == 1:
            commits[c] = next(iter(runs.values()))["commit"]  # every figure of the chapter from that run
    doc = {"gpu": context.get("gpu", "?"), "date": context.get("date", "?"), "commit": context.get("git_commit", "?"),
           "commit_per_chapter": {c: commits[c] for c in result if c in commits}}
    if figure_runs:
        doc["figure_runs"] = figure_runs
    doc["chapters"] = result
    (out / "summary.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


# ---- the targets (results/targets.json): each figure met, missed or within noise ----

def summary_figure(chapter, key):
    """A SUMMARY entry as a targets.json figure (None when summary.json's figure is computed elsewhere)."""
    spec = SUMMARY.get(chapter, {}).get(key)
    if spec is None:
        return None
    kind = spec[0]
    if kind == "ratio":
        return {"kind": "ratio", "metric": spec[5], "cases": [{"a": [spec[2], spec[4]], "b": [spec[3], spec[4]]}]}
    if kind == "time_ratio":
        return {"kind": "time_ratio", "cases": [{"a": [spec[2], spec[4]], "b": [spec[3], spec[4]]}]}
    if kind == "value":
        return {"kind": "value", "metric": spec[4], "cases": [{"a": [spec[2], spec[3]]}]}
    if kind == "best":
        return {"kind": "best", "metric": spec[4], "cases": [{"b": [spec[2], spec[3]]}]}
    return {"kind": "anchor", "metric": spec[4], "cases": [{"a": [spec[2], spec[3]], "b": {
        "anchors": spec[5], "match": spec[6], "field": spec[7]}}]}


def samples(row, metric):
    """A row's figure in each of its repetitions (ms when metric is None)."""
    out = []
    for ms, m in row.get("samples", []):
        v = ms if metric is None else (m.get(metric) if m.get(metric) is not None or metric != "TFLOP/s"
                                      else m.get("GB/s"))
        out.append(v)
    return out


def tile_fractions(run):
    """masks/tile_sets.csv (15_attention_variants_block_masks --tile-sets): {(pass, density): fraction visited};
    without it, the tool's output when build/ has it (as the sparsity plot does), else {}."""
    import csv
    path, tool = run / "masks" / "tile_sets.csv", ROOT / "build" / "bin" / "15_attention_variants_block_masks"
    if path.exists():
        text = path.read_text()
    elif tool.exists():
        r = subprocess.run([str(tool), "--tile-sets"], capture_output=True, text=True)
        text = r.stdout if r.returncode == 0 else ""
    else:
        return {}
    return {(p, r["density"]): float(r[f"{p}_visited"]) for r in csv.DictReader(text.splitlines()) for p in ("fwd", "bwd")}


def figure_value(run, benches, chapter, figure, direction, fractions):
    """(value, spread, shape) of a targets.json figure in this run: the worst of its cases, or (None, None, "")."""
    def find(variant, params):
        return next((r for r in benches.get(chapter, []) if r["variant"] == variant and not r["error"] and
                     all(r["params"].get(k) == v for k, v in params.items())), None)

    kind, metric = figure["kind"], figure.get("metric")
    found = []
    for case in figure["cases"]:
        a = find(*case["a"]) if "a" in case else None
        b = find(*case["b"]) if isinstance(case.get("b"), list) else None
        v, ranges = None, []
        if kind == "ratio" and a and b and value(b, metric):
            v, ranges = value(a, metric) / value(b, metric), [samples(a, metric), samples(b, metric)]
        elif kind in ("time_ratio", "tiles") and a and b and b["ms"]:
            v, ranges = a["ms"] / b["ms"], [samples(a, None), samples(b, None)]
            if kind == "tiles":
                fraction = fractions.get((case["pass"], case["density"]))
                v = v / fraction if fraction else None
        elif kind == "value" and a:
            v, ranges = value(a, metric), [samples(a, metric)]
        elif kind == "best":
            rows = [r for r in benches.get(chapter, []) if not r["error"]
                    and not r["variant"].startswith(("anchor:", "tune:"))
                    and all(r["params"].get(k) == x for k, x in case["b"][1].items())]
            if rows and b and value(b, metric):
                a = max(rows, key=lambda r: value(r, metric))
                v, ranges = value(a, metric) / value(b, metric), [samples(a, metric), samples(b, metric)]
        elif kind == "anchor" and a:
            spec = case["b"]
            match = [x for x in chapter_anchors(run, spec["anchors"], chapter)
                     if all(x.get(k) == y for k, y in spec["match"].items()) and x.get(spec["field"])]
            if match:
                v, ranges = value(a, metric) / match[0][spec["field"]], [samples(a, metric)]
        if v is not None:
            found.append((v, goals.spread_of(*map(goals.relative_range, ranges)), a))
    if len(found) < len(figure["cases"]) or not found:
        return None, None, ""
    worst = min(found, key=lambda f: f[0]) if direction == ">=" else max(found, key=lambda f: f[0])
    if len(found) == 1:
        return worst[0], worst[1], ""
    variants = {f[2]["variant"] for f in found}  # name the worst case by what tells the cases apart
    params = {key_of(f[2]["params"]) for f in found}
    where = " ".join(([f"`{worst[2]['variant']}`"] if len(variants) > 1 else []) +
                     ([key_of(worst[2]["params"])] if len(params) > 1 else []))
    return worst[0], worst[1], where


def target_results(run, doc):
    """Every target of results/targets.json with this publication's figure and how it reads."""
    benches = {p.stem: parse(p)[1] for p in chapter_benches(run)}
    fractions = tile_fractions(run)
    out = []
    for t in goals.load(TREE / "results" / "targets.json"):
        chapter, key = t["chapter"], t["key"]
        published = doc["chapters"].get(chapter, {}).get(key)
        figure = t.get("figure") or summary_figure(chapter, key)
        v, spread, shape = (figure_value(run, benches, chapter, figure, t["direction"], fractions) if figure
                            else (None, None, ""))
        if published is not None:  # summary.json's figure: the same one, or targets.json describes another
            if v is None:
                v = published
            elif round(v, 3) != published:
                raise SystemExit(f"results.py: targets.json's {chapter} {key} reads {v:.4f}, summary.json {published}: "
                                 "its figure is not summary.json's")
        status, text = (("not measured", "not measured in this publication") if v is None else
                        goals.judge(v, t["goal"], t["direction"], spread))
        out.append(dict(t, value=v, spread=spread, shape=shape, status=status, text=text))
    return out


def target_rows(results, with_chapter):
    head = (["chapter"] if with_chapter else []) + ["figure", "level", "goal", "what it compares", "this publication",
                                                     "spread", ""]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in results:
        v = "—" if r["value"] is None else goals.number(r["value"]) + (f" (at {r['shape']})" if r["shape"] else "")
        spread = "—" if r["spread"] is None else goals.percent(r["spread"])
        text = r["text"].replace("missed", "**missed**", 1) if r["status"] == "missed" else r["text"]
        cells = ([r["chapter"]] if with_chapter else []) + [
            f"`{r['key']}`", r.get("level", "target"), f"{goals.sign(r['direction'])} {goals.goal_text(r['goal'])}",
            r["compares"] + (f"; {r['note']}" if r.get("note") else ""), v, spread, text]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return lines


TARGETS_HOW = ("**met**, **missed** (by how much, and by what fraction of the goal), or **within noise**: met by less "
               "than the figure's spread, the relative range (max - min) / median of the repetitions of the rows it "
               "divides, summed over them (`scripts/targets.py`). A row timed by one `ladder::time_gpu` call, and a "
               "PyTorch anchor, has no repetitions: a figure with none has no spread here (—) and reads met or "
               "missed as it is. A moonshot is a stretch a chapter names beside its target. A figure with several cases is "
               "its worst case (at the shape given).")


def targets_section(results, chapter):
    """A chapter table's targets (table.md), or ''."""
    mine = [r for r in results if r["chapter"] == chapter]
    if not mine:
        return ""
    return "\n".join(["", "**Targets** ([results/targets.json](../targets.json); the chapter's own statement of "
                      "each is where `stated` in that file says): " + TARGETS_HOW, ""] + target_rows(mine, False)) + "\n"


def targets_count(results, chapter):
    """'targets: 3 met, 1 within noise, 2 missed' for results/README.md's chapter table, or ''."""
    mine = [r for r in results if r["chapter"] == chapter]
    counts = [(n, s) for s in ("met", "within noise", "missed", "not measured")
              for n in [sum(r["status"] == s for r in mine)] if n]
    return "targets: " + ", ".join(f"{n} {s}" for n, s in counts) if counts else ""


def run_env(path):
    """date, commit and gpu of a run from its env.log's `date: ...`, `commit: ...`, `gpu: ...` lines ("?" where
    it has none, or there is no such file), and `source: ...` (where its files are kept) when it says."""
    info = {"commit": "?", "date": "?", "gpu": "?"}
    if path.exists():
        for line in path.read_text().splitlines():
            m = re.match(r"(date|commit|gpu|source):\s*(.+)", line)
            if m:
                info[m.group(1)] = m.group(2).strip()
    return info


def headline(doc, run, chapter):
    """results/README.md's headline of a chapter: its table's headline row (the first summary.json key's numerator,
    or the best variant) with its figure, and the chapter's summary.json ratios: every number from the tables
    of this run, measured by the one timing routine."""
    ratios = doc["chapters"].get(chapter, {})
    if not ratios:
        return None
    spec = next(iter(SUMMARY.get(chapter, {}).values()), None)
    text = ""
    if spec and spec[0] in ("ratio", "best", "anchor"):
        rows = [r for r in parse(run / "bench" / f"{chapter}.json")[1] if not r["error"]]
        params, metric = (spec[4], spec[5]) if spec[0] == "ratio" else (spec[3], spec[4])
        here = [r for r in rows if all(r["params"].get(k) == v for k, v in params.items())]
        if spec[0] in ("ratio", "anchor"):
            here = [r for r in here if r["variant"] == spec[2]]
        else:
            here = [r for r in here if not r["variant"].startswith(("anchor:", "tune:"))]
        exact = [r for r in here if set(r["params"]) <= set(params) | {"B", "H"}]  # no variant of the case
        here = exact or here
        if here:
            best = max(here, key=lambda r: value(r, metric))
            shape = " ".join(f"{k}={v}" for k, v in best["params"].items())
            text = f"`{best['variant']}` {value(best, metric):.1f} {metric} at {shape}; "
    text += ", ".join(f"{k} {v}" for k, v in ratios.items())
    runs = doc.get("figure_runs", {}).get(chapter, {})
    for r in dict.fromkeys((r["commit"], r["date"], r["what"]) for r in runs.values()):  # figures of another run
        keys = [k for k, x in runs.items() if (x["commit"], x["date"], x["what"]) == r]
        which = "" if set(keys) == set(ratios) else ", ".join(keys) + ": "
        text += f" ({which}from the run of commit {r[0]}, {r[1]}, not the table's: {r[2]})"
    return text


def ctest_line(log):
    if not log.exists():
        return "not run as one stage in this run (the text above says what ran)"
    m = re.search(r"\d+% tests passed(, \d+ tests failed)? out of \d+", log.read_text())
    return m.group(0) if m else "no summary (see the log)"


def method_section(context):
    """How the figures were timed: the paragraph of results/README.md."""
    if not context.get("timing"):
        return ["## How the figures were timed", "",
                "These benchmarks predate the single timing method of `common/timing.h`: each table row is the",
                "median of Google Benchmark's iterations (one warm-up run, then iterations until",
                "`--benchmark_min_time`, the L2 flushed before each), while the executables' summary lines are",
                "medians of `ladder::time_gpu` after two or three warm-up runs, right after their correctness",
                "checks. The two can differ by several percent for the same kernel (clocks: a GPU that has just been",
                "idle runs faster than one under sustained load); compare a summary line with a table row of the",
                "same run only with that in mind.", ""]
    return ["## How the figures were timed", "",
            "Every figure this run measured, the chapters' tables, the executables' summary lines and the PyTorch",
            "anchors, is one call of the same routine, `ladder::time_gpu` (`common/timing.h`;",
            "`scripts/anchors/torch_anchors.py` does the same steps in Python):",
            "",
            f"> {context['timing']}",
            "",
            "The warm-up runs the work back to back until the GPU's clock has settled where sustained load keeps",
            "it (an idle GPU boosts, and its power limit pulls the clock down again under heavy work), so a",
            "figure does not depend on what ran before it. A table row and a summary line of the same kernel,",
            "shape and inputs are therefore the same measurement and differ by run-to-run noise only (the",
            "executables may take fewer repeats: `--repeats`). Figures measured otherwise on purpose: chapter",
            "01's first-launch column (the lesson of that chapter), Nsight Compute's durations (one launch,",
            "serialised), and chapter 13's ring times (events on every GPU of the ring, the slowest rank).", ""]


def publish(run, out, readme=None, strict=False):
    """RUN_DIR -> OUT_DIR (and, given the top README, every README block). strict (--check): a chapter's
    figure script or README table script that fails is an error, not a warning."""
    chapters_root = readme.parent if readme else None
    out.mkdir(parents=True, exist_ok=True)
    failures, missing = [], []

    def failed(what, stderr):
        print(f"{what} failed:\n{stderr}", file=sys.stderr)
        failures.append(what)

    def put(readme, name, content):  # every block is written that can be; a missing one fails the run at the end
        try:
            fill(readme, name, content)
        except MissingBlock as e:
            print(f"results.py: {e}", file=sys.stderr)
            missing.append(str(e))

    accuracy = run / "accuracy" / "07_fa_backward.csv"
    if accuracy.exists():  # before the chapter's table.md, which links its plot
        md = accuracy_table(accuracy, out / "07_fa_backward")
        if chapters_root:
            put(chapters_root / "07_fa_backward" / "README.md", "07_fa_backward:accuracy", md)
    context, index = {}, []
    for path in chapter_benches(run):
        chapter = path.stem
        cfg = CONFIG.get(chapter, dict(metric="TFLOP/s"))
        context, rows = parse(path)
        d = out / chapter
        d.mkdir(exist_ok=True)
        shutil.copy(path, d / "bench.json")
        header = (f"# {chapter} on the H200\n\n{context.get('gpu', '?')}; {context.get('date', '?')}; "
                  f"commit {context.get('git_commit', '?')}. Produced by scripts/results.py from bench.json.\n\n")
        extra = ""
        if chapter == "16_attention_in_a_model" and (run / "model").is_dir():  # its runs' JSON and loss plots
            for f in sorted((run / "model").glob("*")):
                if f.suffix in (".json", ".png"):
                    shutil.copy(f, d / f.name)
            if (run / "model" / "report.md").exists():  # report.py: memory, losses, attention's share
                extra += "\n" + (run / "model" / "report.md").read_text()
        if chapter == "15_attention_variants" and (run / "masks" / "tile_sets.csv").exists():  # its sparsity plot's
            shutil.copy(run / "masks" / "tile_sets.csv", d / "tile_sets.csv")  # fractions, and its targets'
        if chapter in HOOKS:  # a chapter's own figures (the spilling heatmap)
            r = subprocess.run([sys.executable, *map(str, HOOKS[chapter](run, d))], capture_output=True, text=True)
            if r.returncode:
                failed(f"{chapter} hook", r.stderr)
        if cfg.get("csv") and (run / "ncu" / cfg["csv"]).exists():  # the executable's own table, same run
            extra += "\n**The executable's table** (`--csv`):\n\n" + csv_table(run / "ncu" / cfg["csv"])
        has_plot = cfg.get("plot", True) and plot(rows, cfg, f"{chapter}: {cfg['metric']} on {context.get('gpu', '?').split(' (')[0]}",
                        d / "plot.png")
        body = table(rows, cfg, context) + extra
        if cfg.get("cudnn"):
            body += cudnn_section(rows, cfg, chapter_anchors(run, "anchors2.json", chapter))
        if cfg.get("peak"):
            body += peak_section(rows, cfg)
        if cfg.get("flex"):
            body += flex_section(rows, chapter_anchors(run, "anchors2.json", chapter))
        figures = "![plot](plot.png)\n\n" if has_plot else ""
        figures += "".join(f"![{p.stem}]({p.name})\n\n" for p in sorted(d.glob("*.png")) if p.name != "plot.png")
        (d / "table.md").write_text(header + figures + body)
        index.append(chapter)
        if chapters_root:
            stamp = (f"Measured by `scripts/gpu_check.sh` on {context.get('gpu', '?')}, {context.get('date', '?')}, "
                     f"commit {context.get('git_commit', '?')} ([raw JSON](../results/{chapter}/bench.json)).\n\n")
            plot_link = f"![{chapter}](../results/{chapter}/plot.png)\n\n" if has_plot else ""
            put(chapters_root / chapter / "README.md", chapter, stamp + plot_link + body)

    for chapter in (c for c in index if chapters_root and c in README_TABLES):
        cmd = [sys.executable, *map(str, README_TABLES[chapter](run)), "--readme",
               str(chapters_root / chapter / "README.md"), "--publish"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            failed(f"{chapter}: its README tables", r.stderr)

    ladder = {}
    log = run / "logs" / "ladder.log"
    if log.exists():
        for line in log.read_text().splitlines():
            m = re.match(r"^(\d\d_\w+)\s+(PASS|FAIL|CPU-ONLY)\s+(.*)$", line)
            if m:
                ladder[m.group(1)] = (m.group(2), m.group(3))
    for path in sorted(run.glob("anchors*.json")):  # anchors.json, anchors2.json and any chapter's own
        shutil.copy(path, out / path.name)
    timing = run / "timing"  # scripts/timing_study.sh: what the warm-up changes
    if (timing / "timing_study.md").exists():
        (out / "timing").mkdir(exist_ok=True)
        for f in ("timing_study.md", "timing_study.csv", "timing_study.log", "smi.csv"):
            if (timing / f).exists():
                shutil.copy(timing / f, out / "timing" / f)
    ncu = run / "ncu"
    if ncu.exists():
        for f in ncu.glob("*.csv"):
            dest = out / ("06_fa2_forward" if f.name == "traffic.csv" else
                          "08_spilling_study" if f.name.startswith(("ncu_spill", "spill_")) else ".")
            dest.mkdir(exist_ok=True)
            shutil.copy(f, dest / f.name)
    traffic = out / "06_fa2_forward" / "traffic.csv"
    if traffic.exists():
        import csv
        rows_t = list(csv.DictReader(traffic.read_text().splitlines()))
        lines_t = ["| kernel | model read MB | ncu read MB | ncu / model | model write MB | ncu write MB | ncu / model |",
                   "|---|---|---|---|---|---|---|"]
        for r in rows_t:
            ratio = lambda a, b: f"{float(a) / float(b):.3f}" if a and b and float(b) else ""
            lines_t.append(f"| {r['impl']} | {r['model_read_MB']} | {r['ncu_read_MB']} | "
                           f"{ratio(r['ncu_read_MB'], r['model_read_MB'])} | {r['model_write_MB']} | "
                           f"{r['ncu_write_MB']} | {ratio(r['ncu_write_MB'], r['model_write_MB'])} |")
        text = ("B=1, H=16, N=16384, d=64 (K and V are 64 MiB each, past the 60 MB L2), one launch each, "
                "`ncu --clock-control none`, dram__bytes_read.sum and dram__bytes_write.sum summed over the kernels "
                "of the launch. The model counts every tile the loops load from or store to global memory; DRAM only "
                "sees what misses the L2. Why they differ: FA2's T_r re-reads of K_j, V_j come from the row-tile "
                "blocks of one head, which run at the same time and find K_j, V_j in L2, so the measured reads are a "
                "small multiple of one pass over Q, K, V. FA1 has one block per head: each streams its head's Q and "
                "O (4 MiB each) through every outer step, and 16 heads of that exceed the L2, so its round trips "
                "really reach DRAM. The standard attention's model is S written, S read and P written by the softmax, "
                "P read by PV (plus Q, K, V, O); its softmax kernel reads each row of S up to three times (max, sum, "
                "normalise) and the 17 GB S does not fit in L2.\n\n")
        table_t = "\n".join(lines_t) + "\n"
        (out / "06_fa2_forward" / "traffic.md").write_text("# DRAM traffic: tile model vs Nsight Compute\n\n" + text + table_t)
        if chapters_root:
            put(chapters_root / "06_fa2_forward" / "README.md", "06_fa2_forward:traffic", text + table_t)
    spill = out / "08_spilling_study"
    if (spill / "ncu_spill.csv").exists():
        ncu_md = spill_ncu_table(spill / "ncu_spill.csv")
        (spill / "ncu_spill.md").write_text("# Nsight Compute: normal, local, capped-24 kernels\n\n" + ncu_md)
        if chapters_root:
            put(chapters_root / "08_spilling_study" / "README.md", "08_spilling_study:ncu", ncu_md)
            if (spill / "spill_table.csv").exists():
                put(chapters_root / "08_spilling_study" / "README.md", "08_spilling_study:reading",
                     spill_reading(spill / "spill_table.csv", spill / "ncu_spill.csv"))
    if chapters_root and (spill / "spill_heatmap.png").exists():
        put(chapters_root / "08_spilling_study" / "README.md", "08_spilling_study:heatmap",
             "![heatmap](../results/08_spilling_study/spill_heatmap.png)")

    doc = summary_json(run, out)
    if all((out / c / "bench.json").exists() for c in LADDER_CHART):  # the top README's chart, from these tables
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "figures" / "ladder_speed.py"), str(out),
                            str(out / "ladder_speed.png")], capture_output=True, text=True)
        if r.returncode:
            failed("scripts/figures/ladder_speed.py", r.stderr)
    results = target_results(run, doc)
    for chapter in index:  # each chapter table's targets, and the figures of summary.json from another run
        section = targets_section(results, chapter)
        runs = doc.get("figure_runs", {}).get(chapter, {})
        for r in dict.fromkeys((r["commit"], r["date"], r["what"]) for r in runs.values()):
            section += ("\n**summary.json's figures from another run**: " + ", ".join(
                f"`{k}` {doc['chapters'][chapter][k]}" for k, x in runs.items()
                if (x["commit"], x["date"], x["what"]) == r) +
                f": commit {r[0]}, {r[1]}, {r[2]}; the table above is not their run.\n")
        if section:
            with open(out / chapter / "table.md", "a") as f:
                f.write(section)
    anchor_lines = anchors_section(run, out)
    bench_context = next((parse(p)[0] for p in chapter_benches(run) if parse(p)[0].get("timing")), context)
    method = method_section(bench_context)
    if (out / "timing" / "timing_study.md").exists():
        method += ["What the warm-up changes, measured with the clock beside it: [timing/timing_study.md]"
                   "(timing/timing_study.md) (`scripts/timing_study.sh`).", ""]
    provenance = run / "PROVENANCE.md"  # where a publication joins more than one call, it says how
    lines = [f"# Results: {context.get('gpu', '?')}", ""] + (
        provenance.read_text().strip().splitlines() if provenance.exists() else
        [f"Date {context.get('date', '?')}, commit {context.get('git_commit', '?')}; every figure below and in the",
         "chapter folders comes from one `scripts/gpu_check.sh` run on that GPU."]) + ["",
             f"- tests (CPU + GPU): {ctest_line(run / 'logs' / 'test.log')}",
             f"- compute-sanitizer (memcheck, racecheck): {ctest_line(run / 'logs' / 'sanitizer.log')}", ""] + method + [
             "## The chapters", "",
             "**correctness check**: the chapter executable's own check of its outputs against its reference, as its",
             "summary line in [logs/ladder.log](logs/ladder.log) reports it (chapter 16: every run trained to a finite",
             "loss and the ladder's validation loss within the spread of two SDPA seeds). PASS means the outputs are",
             "correct; it says nothing about speed or any target (the next section reads the targets). **headline**:",
             "the chapter table's headline row and its `summary.json` ratios, each figure from one benchmark call. The",
             "executables' summary lines time the same kernels again, in another process, and their figures (a",
             "library's included) differ from the tables' by that run-to-run noise: they are not published as",
             "figures. A chapter without ratios shows its executable's summary line, marked so.", "",
             "| chapter | correctness check | headline (the chapter's table, `summary.json`; the targets it meets) | "
             "tables and plot |",
             "|---|---|---|---|"]
    for chapter in sorted(set(index) | set(ladder)):
        status, text = ladder.get(chapter, ("", ""))
        link = f"[{chapter}/table.md]({chapter}/table.md)" if chapter in index else ""
        cell = (headline(doc, run, chapter) if chapter in index else None) or (
            f"(no ratios; the executable's summary line) {text}" if text else "")
        count = targets_count(results, chapter)
        if count:
            cell += f"; {count} ([targets](#targets))"
        lines.append(f"| {chapter} | {status} | {cell.replace('|', '/')} | {link} |")
    lines += ["", "## Targets", "", "Every target the chapters state ([targets.json](targets.json)), read against "
              "this publication's figures: " + TARGETS_HOW, ""] + target_rows(results, True)
    (out / "README.md").write_text("\n".join(lines + anchor_lines) + "\n")

    if missing or (strict and failures):
        raise PublishFailed(missing + [f"{f} failed (its error is above)" for f in (failures if strict else [])])
    return lines


# ---- the committed publication: its inputs (results/publication.json), --assemble and --check ----

def layout(tree):
    return load_json(tree / "results" / "publication.json")


def assemble(tree, run):
    """Writes RUN_DIR from the committed files results/publication.json names (and what it derives from them)."""
    spec = layout(tree)
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    for dest, src in spec["files"].items():
        if not (tree / src).is_file():
            raise SystemExit(f"results.py: publication.json: {src} (for {dest}) is not in {tree}")
        (run / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / src, run / dest)
    for dest, text in spec.get("text", {}).items():
        (run / dest).parent.mkdir(parents=True, exist_ok=True)
        (run / dest).write_text("\n".join(text) + "\n")
    for step in spec.get("derive", []):  # a script of this repository, its arguments relative to RUN_DIR
        r = subprocess.run([sys.executable, str(ROOT / step[0]), *(str(run / a) for a in step[1:])],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"results.py: publication.json: {' '.join(step)} failed:\n{r.stderr}")


# A README's generated blocks: results:NAME (chapter READMEs) and r:NN_topic (cells the top README once had: none
# is written any more, so one left behind fails --check as not regenerated).
BLOCK = re.compile(r"(<!-- (?P<name>results:(?P<n>[\w:]+)) -->)(?P<body>.*?)(<!-- /results:(?P=n) -->)"
                   r"|(<!-- (?P<cell>r:\w+) -->)(?P<cbody>.*?)(<!-- /r -->)", re.S)
UNFILLED = "(not regenerated by results.py --check)"


def blocks(text):
    """{name: content} of a README's generated blocks."""
    return {m.group("name") or m.group("cell"): m.group("body") if m.group("name") else m.group("cbody")
            for m in BLOCK.finditer(text)}


def blank_blocks(text):
    """The README with every generated block's content replaced by UNFILLED: what the run does not write
    again keeps it."""
    return BLOCK.sub(lambda m: (m.group(1) + UNFILLED + m.group(5)) if m.group("name") else
                     (m.group(6) + UNFILLED + m.group(9)), text)


def check(tree):
    """Regenerates the committed publication in a temporary folder and compares it with TREE's files; returns
    the list of differences (empty: the publication reproduces itself)."""
    spec = layout(tree)
    elsewhere = {b for names in spec.get("blocks_written_elsewhere", {}).values() for b in names}
    problems = []
    with tempfile.TemporaryDirectory(prefix="results_check_") as tmp:
        tmp = pathlib.Path(tmp)
        run, gen = tmp / "run", tmp / "tree"
        assemble(tree, run)
        readmes = [tree / "README.md"] + sorted(tree.glob("[0-9][0-9]_*/README.md"))
        for path in readmes:
            (gen / path.relative_to(tree)).parent.mkdir(parents=True, exist_ok=True)
            (gen / path.relative_to(tree)).write_text(blank_blocks(path.read_text()))
        try:
            publish(run, gen / "results", gen / "README.md", strict=True)
        except PublishFailed as e:
            return [item.replace(f"{gen}/", "") for item in e.items]
        except SystemExit as e:
            return [str(e.code).replace(f"{gen}/", "")]
        for path in readmes:
            rel = path.relative_to(tree)
            old, new = path.read_text(), (gen / rel).read_text()
            old_blocks, new_blocks = blocks(old), blocks(new)
            for name, content in old_blocks.items():
                if new_blocks.get(name) == UNFILLED:
                    if name not in elsewhere:
                        problems.append(f"{rel}: block {name} is not regenerated from the publication's files (and "
                                        "publication.json's blocks_written_elsewhere does not name it)")
                elif new_blocks.get(name) != content:
                    problems.append(f"{rel}: block {name} differs from its regeneration")
            if BLOCK.sub("", old) != BLOCK.sub("", new):
                problems.append(f"{rel}: changed outside its generated blocks (a block marker missing or broken?)")
        out = gen / "results"
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            rel = path.relative_to(gen)
            if not (tree / rel).is_file():
                problems.append(f"{rel}: regenerated but not committed")
            elif path.suffix != ".png" and path.read_bytes() != (tree / rel).read_bytes():
                problems.append(f"{rel}: differs from its regeneration")
        inputs = {"results/publication.json", "results/targets.json", *spec.get("not_written", {}),
                  *(p.relative_to(tree).as_posix() for g in spec.get("read_from_tree", []) for p in tree.glob(g))}
        for path in sorted(p for p in (tree / "results").rglob("*") if p.is_file()):
            rel = path.relative_to(tree)
            if rel.parts[1] != "logs" and rel.as_posix() not in inputs and not (gen / rel).is_file():
                problems.append(f"{rel}: committed but not regenerated (nor listed in publication.json's not_written)")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=pathlib.Path, nargs="?",
                    help="what scripts/gpu_check.sh wrote (its bench/, logs/, ...)")
    ap.add_argument("out", type=pathlib.Path, nargs="?", help="where the published results go (results/)")
    ap.add_argument("--readme", type=pathlib.Path,
                    help="the top README.md: the chapter READMEs beside it get their tables")
    ap.add_argument("--assemble", type=pathlib.Path, metavar="RUN_DIR",
                    help="write the committed publication's RUN_DIR from results/publication.json")
    ap.add_argument("--check", action="store_true",
                    help="regenerate the committed publication elsewhere and compare; exit 1 on any difference")
    ap.add_argument("--tree", type=pathlib.Path, default=ROOT,
                    help="the repository copy whose publication --assemble and --check read (default: this one)")
    args = ap.parse_args()
    global TREE
    TREE = args.tree.resolve()
    if not (TREE / "results" / "publication.json").is_file() and (args.check or args.assemble):
        ap.error(f"--tree {args.tree}: no results/publication.json there")
    if args.check:
        if args.run or args.out or args.readme or args.assemble:
            ap.error("--check takes no RUN_DIR, OUT_DIR, --readme or --assemble")
        problems = check(TREE)
        if problems:
            print(f"results.py --check: the committed publication in {TREE} does not reproduce itself:",
                  file=sys.stderr)
            print("\n".join(f"  {p}" for p in problems), file=sys.stderr)
            print("Regenerate it: results/logs/6b007325beb8/assemble.sh RUN && scripts/results.py RUN results "
                  "--readme README.md (then read the diff), or fix the committed inputs.", file=sys.stderr)
            return 1
        print(f"results.py --check: results/ and every README block regenerate byte for byte from "
              f"results/publication.json's files ({TREE})")
        return 0
    if args.assemble:
        if args.run or args.out or args.readme:
            ap.error("--assemble takes no RUN_DIR, OUT_DIR or --readme")
        assemble(TREE, args.assemble)
        return 0
    if not (args.run and args.out):
        ap.error("give RUN_DIR and OUT_DIR (or --assemble, --check)")
    run, out, readme = args.run, args.out, args.readme
    if not (run / "bench").is_dir():
        ap.error(f"{run} has no bench/ folder: give the OUTDIR of a scripts/gpu_check.sh run")
    if readme and not readme.is_file():
        ap.error(f"--readme {readme}: no such file")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        ap.error(f"cannot create {out}: {e.strerror}")
    print("\n".join(publish(run, out, readme)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
