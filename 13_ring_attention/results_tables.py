#!/usr/bin/env python3
"""Chapter 13's README results from one GPU run: nothing here is typed by hand.

    python3 13_ring_attention/results_tables.py RUN_DIR [--readme 13_ring_attention/README.md]
                                                [--gpu TEXT] [--date TEXT] [--commit TEXT] [--publish]

RUN_DIR holds the files of one run (the one-GPU commands under "Run it" in the README, or
run_two_gpu.sh on two GPUs):
  limit.csv        13_ring_attention --limit --limit-csv      (else limit.log's table is read)
  ring_*.csv       13_ring_attention --weak --csv             (one row per timed case)
  timeline_*.csv   13_ring_attention --timeline               (per rank and step: compute, add, kv, dkv)
  env.log          nvidia-smi, and the lines `date: ...`, `commit: ...` the run appended
Prints the markdown; with --readme, replaces the blocks between <!-- results:13_ring_attention:NAME -->
and <!-- /results:13_ring_attention:NAME --> for NAME = limit, loopback, overlap (and nccl when a
ring CSV of the NCCL transport is there). Figures go to 13_ring_attention/figures/: limit.png
(time per token and memory against N) and timeline_<transport>.png (the per-step timeline).
A file of the repository is overwritten only with --publish (else: build/local/, scripts/publish.py).
"""
import argparse
import csv
import json
import pathlib
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
FIGURES = HERE / "figures"
CHAPTER = "13_ring_attention"
sys.path.insert(0, str(HERE.parent / "scripts"))
import publish  # noqa: E402


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(row, key, default=None):
    v = row.get(key)
    return float(v) if v not in (None, "") else default


# ---- where the numbers come from ----

def provenance(run, args):
    """GPU, date and commit: the arguments win, then env.log, then the benchmark JSON's context."""
    info = {"gpu": None, "date": None, "commit": None}
    env = run / "env.log"
    if env.exists():
        lines = env.read_text().splitlines()
        for line in lines:
            m = re.match(r"(date|commit|gpu):\s*(.+)", line)
            if m:
                info[m.group(1)] = m.group(2).strip()
        if not info["gpu"] and len(lines) > 1 and lines[0].startswith("name"):
            info["gpu"] = lines[1].split(",")[0].strip()
    for log in ("loopback.log", "limit.log", "weak.log"):  # the executable's own description of the GPU
        p = run / log
        if p.exists():
            m = re.search(r"^13_ring_attention on (.+)$", p.read_text(), re.M)
            if m:
                info["gpu"] = m.group(1).strip()
                break
    for bench in sorted(run.glob("bench*.json")):
        ctx = json.loads(bench.read_text()).get("context", {})
        info["date"] = info["date"] or ctx.get("date")
        info["commit"] = info["commit"] or ctx.get("git_commit")
    for k in info:
        if args.get(k):
            info[k] = args[k]
    return info


def source_line(info, what):
    return (f"*Written by `{CHAPTER}/results_tables.py` from {what} of the run on {info['date'] or 'an unknown date'}, "
            f"{info['gpu'] or 'unknown GPU'}, commit {info['commit'] or 'unknown'}.*")


# ---- the single-GPU limit ----

def limit_rows(run):
    p = run / "limit.csv"
    if p.exists():
        return read_csv(p)
    log = run / "limit.log"  # a run without --limit-csv: read the printed table
    if not log.exists():
        return []
    text = log.read_text()
    mem = re.search(r"memory: (\d+) B/token forward, (\d+) B/token forward\+backward; ([\d.]+) GB free -> largest N "
                    r"(\d+) \(forward\), (\d+)", text)
    rows = []
    for m in re.finditer(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)$",
                         text, re.M):
        r = dict(zip(["N", "fwd_ms", "bwd_ms", "fwd_tflops", "bwd_tflops", "fwd_ns_per_token", "bwd_ns_per_token",
                      "model_mb", "measured_mb"], m.groups()))
        if mem:
            r.update(zip(["fwd_bytes_per_token", "fwdbwd_bytes_per_token", "free_gb", "fwd_max_N", "fwdbwd_max_N"],
                         mem.groups()))
        rows.append(r)
    return rows


def limit_block(rows, info):
    if not rows:
        return []
    out = [source_line(info, "`limit.csv`"), "",
           "Chapter 10 alone, causal, B=1, H=8, d=128; time per token = time / N; memory = what the buffers took "
           "(`cudaMemGetInfo` before and after allocating) against the model.", "",
           "| N | fwd ms | bwd ms | fwd TFLOP/s | bwd TFLOP/s | fwd ns/token | bwd ns/token | per token vs N/2 "
           "| memory model MB | measured MB |", "|---" * 10 + "|"]
    prev = None
    for r in rows:
        N, f, b = int(num(r, "N")), num(r, "fwd_ms"), num(r, "bwd_ms")
        per_token = (f + b) / N
        growth = f"{per_token / prev[1]:.2f}x" if prev and int(prev[0]) * 2 == N else "-"
        out.append(f"| {N} | {f:.2f} | {b:.2f} | {num(r, 'fwd_tflops'):.0f} | {num(r, 'bwd_tflops'):.0f} "
                   f"| {1e6 * f / N:.0f} | {1e6 * b / N:.0f} | {growth} | {num(r, 'model_mb'):.0f} "
                   f"| {num(r, 'measured_mb'):.0f} |")
        prev = (N, per_token)
    last = rows[-1]
    if num(last, "fwdbwd_max_N"):
        Nl, fl, bl = num(last, "N"), num(last, "fwd_ms"), num(last, "bwd_ms")
        nmax, nfwd = num(last, "fwdbwd_max_N"), num(last, "fwd_max_N")
        scale = (nmax / Nl) ** 2
        # The forward's end can be chapter 10's int row index (N·d < 2^31) rather than memory.
        fwd_by = "memory" if nfwd * num(last, "fwd_bytes_per_token") > 0.99e9 * num(last, "free_gb") else \
            "chapter 10's `int` row index (N·d < 2³¹), before memory"
        bwd_by = "memory" if nmax * num(last, "fwdbwd_bytes_per_token") > 0.99e9 * num(last, "free_gb") else \
            "chapter 10's `int` row index, before memory"
        out += ["", f"Memory: {num(last, 'fwd_bytes_per_token'):.0f} bytes per token for the forward, "
                    f"{num(last, 'fwdbwd_bytes_per_token'):.0f} for forward + backward; with "
                    f"{num(last, 'free_gb'):.1f} GB free, the forward fits up to N = {nfwd:.0f} (set by {fwd_by}) "
                    f"and forward + backward up to N = {nmax:.0f} (set by {bwd_by}). At that N one causal "
                    f"forward + backward of this one layer "
                    f"would take {(fl + bl) * scale / 1e3:.0f} s (the largest measured N = {Nl:.0f}, "
                    f"{(fl + bl) / 1e3:.2f} s, scaled by N²); N = 1M would take "
                    f"{(fl + bl) * (2 ** 20 / Nl) ** 2 / 1e3:.1f} s."]
    out += ["", "![time per token and memory against N](figures/limit.png)"]
    return out


def limit_figure(rows, png):
    if not rows:
        return
    N = [num(r, "N") for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label in (("fwd_ms", "forward"), ("bwd_ms", "backward")):
        per = [1e6 * num(r, key) / n for r, n in zip(rows, N)]
        a.plot(N, per, marker="o", label=label)
        a.plot(N, [per[0] * n / N[0] for n in N], linestyle=":", color="gray")
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xlabel("N (tokens)")
    a.set_ylabel("ns per token")
    a.set_title("time per token (dotted: proportional to N)")
    a.legend()
    a.grid(True, which="both", alpha=0.3)
    b.plot(N, [num(r, "measured_mb") / 1e3 for r in rows], marker="o", linestyle="", label="measured (fwd+bwd)")
    last = rows[-1]
    if num(last, "fwdbwd_max_N"):
        top = max(num(last, "fwd_max_N"), N[-1])
        xs = [N[0], top]
        for key, label in (("fwd_bytes_per_token", "model, forward"), ("fwdbwd_bytes_per_token",
                                                                         "model, forward+backward")):
            b.plot(xs, [x * num(last, key) / 1e9 for x in xs], label=label)
        b.axhline(num(last, "free_gb"), color="gray", linestyle="--", label="free memory")
        for key in ("fwd_max_N", "fwdbwd_max_N"):
            b.axvline(num(last, key), color="gray", linestyle=":")
    b.set_xscale("log", base=2)
    b.set_yscale("log")
    b.set_xlabel("N (tokens)")
    b.set_ylabel("GB")
    b.set_title("memory (dotted: where it ends)")
    b.legend(fontsize=8)
    b.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


# ---- the ring ----

def ring_rows(run):
    rows = []
    for p in sorted(run.glob("ring_*.csv")):
        rows += read_csv(p)
    return rows


def shape_of(r):
    P, N = int(num(r, "P")), int(num(r, "N_total"))
    return f"{P} x {N // P}"


def ring_block(rows, info, transport):
    rows = [r for r in rows if r["transport"] == transport and not r["case"].startswith("million")]
    if not rows:
        return []
    one = ("one chapter-10 call on the whole sequence, on the same GPU" if transport == "loopback"
           else "P x one GPU's chapter-10 call at n tokens")
    out = [source_line(info, f"the ring CSV ({transport})"), "",
           f"B=1, H=8, d=128. Ideal = {one}; x ideal = ring TFLOP/s / ideal TFLOP/s.", "",
           "| case | P x n | fwd ms | fwd TFLOP/s | x ideal | fwd+bwd ms | fwd+bwd TFLOP/s | x ideal |", "|---" * 8 + "|"]
    for r in rows:
        f, b = num(r, "fwd_ms"), num(r, "bwd_ms")
        out.append(f"| {r['case']} | {shape_of(r)} | {f:.2f} | {num(r, 'fwd_tflops'):.0f} | {num(r, 'fwd_eff'):.3f} "
                   f"| {f + b:.2f} | {num(r, 'fwdbwd_tflops'):.0f} | {num(r, 'fwdbwd_eff'):.3f} |")
    return out


def million_line(rows):
    for r in rows:
        if r["case"].startswith("million"):
            f, b = num(r, "fwd_ms"), num(r, "bwd_ms")
            return ["", f"One causal zigzag run of {int(num(r, 'N_total'))} tokens over {int(num(r, 'P'))} "
                        f"{'GPUs' if r['transport'] == 'nccl' else 'virtual ranks'}: forward {f / 1e3:.2f} s "
                        f"({num(r, 'fwd_tflops'):.0f} TFLOP/s), backward {b / 1e3:.2f} s, one run each."]
    return []


def shared_gpu_caption(timeline_csv):
    """What the loopback timeline shows that two GPUs would not (ring.cpp's stream and event order):
    both virtual ranks share one GPU, so a bar includes the time its kernels queued behind the other
    rank's. Names the longest `add` of the run as the example."""
    text = ("Both virtual ranks run on one GPU, so a bar spans its stream's events, time spent queueing for "
            "the GPU included: on two GPUs each rank would have its own.")
    adds = [r for r in read_csv(timeline_csv) if r["kind"] == "add"] if timeline_csv.exists() else []
    if not adds:
        return text
    a = max(adds, key=lambda r: float(r["end_ms"]) - float(r["start_ms"]))
    case, rank, ms = a["case"].rsplit("/", 1)[0], int(a["rank"]), float(a["end_ms"]) - float(a["start_ms"])
    text += (f" The longest `add`, rank {rank}'s at step {a['step']} of {case}'s backward ({ms:.1f} ms), is mostly "
             "such a queue: on its own an add is one pass over the dK/dV sums, a fraction of a millisecond.")
    if case.startswith("causal_plain") and rank == 0:
        text += (" With the plain split rank 0 has no tile after step 0, so its add may start as soon as the "
                 "dK/dV sums of the step before land, and then waits behind rank 1's attention kernels, which "
                 "hold the SMs.")
    return text


def overlap_block(rows, info, transport, caption=""):
    rows = [r for r in rows if r["transport"] == transport and not r["case"].startswith("million")]
    if not rows:
        return []
    out = [source_line(info, f"the ring CSV and timeline ({transport})"), "",
           "Hidden = (T_compute + T_comm − T_both) / T_comm from three runs of the same schedule; timeline = the "
           "share of each shift's interval during which the same rank was computing. The bound is what the "
           "schedule allows: the backward's last dK/dV hop comes after all compute, about 1/(3P−2) of its bytes.",
           "", "| case | P x n | pass | comm only ms | compute only ms | both ms | hidden | bound | timeline |",
           "|---" * 9 + "|"]
    for r in rows:
        P = int(num(r, "P"))
        for pas, bound in (("fwd", 1.0), ("bwd", 1 - 1 / (3 * P - 2) if P > 1 else 1.0)):
            comm, comp = num(r, f"{pas}_comm_only_ms"), num(r, f"{pas}_compute_only_ms")
            measured = bool(comm)
            cell = lambda x: f"{x:.3f}" if measured and x is not None else "-"
            hidden = num(r, f"{pas}_hidden") if measured or num(r, f"{pas}_hidden") else None
            out.append(f"| {r['case']} | {shape_of(r)} | {pas} | {cell(comm)} | {cell(comp)} "
                       f"| {cell(num(r, f'{pas}_ms')) if measured else '-'} "
                       f"| {f'{hidden:.2f}' if hidden is not None else '-'} | {bound:.2f} "
                       f"| {num(r, f'{pas}_overlap'):.2f} |")
    out += ["", f"![per-step timeline: compute and communication streams of every rank](figures/timeline_{transport}.png)"]
    if caption:
        out += ["", caption]
    return out



COLORS = {"compute": "#4c72b0", "add": "#8fb0e0", "kv": "#dd8452", "dkv": "#c44e52"}
LABELS = {"compute": "attention calls + merges", "add": "add the arriving dK/dV sums", "kv": "K/V shift",
          "dkv": "dK/dV shift"}


def timeline_figure(path, transport, png):
    rows = read_csv(path)
    if not rows:
        return
    cases = list(dict.fromkeys(r["case"].rsplit("/", 1)[0] for r in rows))
    fig, axes = plt.subplots(len(cases), 2, figsize=(13, 1.25 + 1.05 * len(cases) * 2), squeeze=False)
    for i, case in enumerate(cases):
        for j, pas in enumerate(("fwd", "bwd")):
            ax = axes[i][j]
            sel = [r for r in rows if r["case"] == f"{case}/{pas}"]
            ranks = sorted({int(r["rank"]) for r in sel})
            lanes = []
            for rank in ranks:
                lanes += [(rank, "compute"), (rank, "comm")]
            for r in sel:
                lane = lanes.index((int(r["rank"]), "comm" if r["kind"] in ("kv", "dkv") else "compute"))
                s, e = float(r["start_ms"]), float(r["end_ms"])
                ax.barh(lane, e - s, left=s, height=0.7, color=COLORS[r["kind"]], edgecolor="white", linewidth=0.3)
                if r["kind"] in ("compute", "kv", "dkv") and e - s > 0:
                    ax.text(s + (e - s) / 2, lane, r["step"], ha="center", va="center", fontsize=6, color="white")
            ax.set_yticks(range(len(lanes)))
            ax.set_yticklabels([f"rank {k} {w}" for k, w in lanes], fontsize=7)
            ax.invert_yaxis()
            ax.set_title(f"{case}, {'forward' if pas == 'fwd' else 'backward'}", fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
            if i == len(cases) - 1:
                ax.set_xlabel("ms from the rank's start of the run", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in COLORS]
    fig.legend(handles, [LABELS[k] for k in COLORS], loc="upper center", ncol=4, fontsize=8,
               title=f"{transport} ring: one lane per stream of each rank; the number on a bar is its step"
               + ("\nboth ranks share one GPU: a bar includes time queued behind the other rank's kernels"
                  if transport == "loopback" else ""),
               title_fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.93 if transport == "loopback" else 0.95))
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def fill(readme, name, lines):
    text = readme.read_text()
    start, end = f"<!-- results:{CHAPTER}:{name} -->", f"<!-- /results:{CHAPTER}:{name} -->"
    if start not in text or end not in text:
        print(f"{readme}: no markers {start} ... {end}; left as it is", file=sys.stderr)
        return
    a, b = text.index(start) + len(start), text.index(end)
    readme.write_text(text[:a] + "\n" + "\n".join(lines) + "\n" + text[b:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=pathlib.Path)
    ap.add_argument("--readme", help="the README whose blocks receive the tables")
    ap.add_argument("--gpu", help="the GPU's name (else env.log's, or the executable's log)")
    ap.add_argument("--date", help="the run's date (else env.log's, or the benchmark JSON's)")
    ap.add_argument("--commit", help="the run's commit (else env.log's, or the benchmark JSON's)")
    publish.add_flag(ap)
    args = ap.parse_args()
    if not args.run_dir.is_dir():
        ap.error(f"{args.run_dir}: no such folder")
    run = args.run_dir
    opts = {k: v for k, v in vars(args).items() if k in ("readme", "gpu", "date", "commit") and v is not None}
    info = provenance(run, opts)
    readme = publish.destination(args.readme, args.publish) if args.readme else None
    lim = limit_rows(run)
    if lim:
        limit_figure(lim, publish.destination(FIGURES / "limit.png", args.publish))
    rings = ring_rows(run)
    on = {t: [r for r in rings if r["transport"] == t] for t in ("loopback", "nccl")}
    blocks = {"limit": limit_block(lim, info),
              "loopback": ring_block(rings, info, "loopback") + million_line(on["loopback"]),
              "overlap": overlap_block(rings, info, "loopback", shared_gpu_caption(run / "timeline_loopback.csv")),
              "nccl": ring_block(rings, info, "nccl") + million_line(on["nccl"]) + [""]
              + overlap_block(rings, info, "nccl")}
    for p in sorted(run.glob("timeline_*.csv")):
        transport = p.stem.split("_", 1)[1]
        timeline_figure(p, transport, publish.destination(FIGURES / f"timeline_{transport}.png", args.publish))
    for name, lines in blocks.items():
        if lines and any(lines):
            print(f"<!-- {name} -->\n" + "\n".join(lines) + "\n")
            if args.readme:
                fill(readme, name, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
