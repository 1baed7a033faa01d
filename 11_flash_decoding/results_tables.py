#!/usr/bin/env python3
"""Chapter 11's README tables from one GPU run: nothing here is typed by hand.

    python3 11_flash_decoding/results_tables.py BENCH_JSON ANCHORS_JSON [NCU_CSV] [--readme README.md] [--publish]

BENCH_JSON: the Google Benchmark JSON of 11_flash_decoding_bench; ANCHORS_JSON: PyTorch's
figures of the same session (scripts/anchors/torch_anchors.py: kind "decode_bf16"); NCU_CSV:
`ncu --import REPORT --csv --page raw --print-units base` of `11_flash_decoding --profile auto`.
Prints the markdown; with --readme, replaces the block between
<!-- results:11_flash_decoding:tables --> and <!-- /results:11_flash_decoding:tables -->.
A file of the repository is overwritten only with --publish (else: build/local/, scripts/publish.py).
"""
import argparse
import csv
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scripts"))
import publish  # noqa: E402

HEAD = {"B": "8", "Hq": "32", "Hkv": "8", "d": "128"}


def rows_of(path):
    data = json.loads(pathlib.Path(path).read_text())
    out = []
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        variant, *rest = re.sub(r"/manual_time$", "", b["name"]).split("/")
        out.append(dict(variant=variant, p=dict(x.split("=", 1) for x in rest), ms=b.get("ms"), gbps=b.get("GB/s"),
                        splits=b.get("splits"), blocks=b.get("blocks")))
    return data.get("context", {}), out


def find(rows, variant, **params):
    """The row of `variant` whose parameters are exactly `params` (no extra keys)."""
    for r in rows:
        if r["variant"] == variant and r["p"] == {k: str(v) for k, v in params.items()}:
            return r
    return None


def anchor(anchors, impl, n_kv):
    for a in anchors:
        if a.get("kind") == "decode_bf16" and a.get("impl") == impl and a.get("shape", "").endswith(
                f"Nkv{n_kv} d128") and a.get("gbps"):
            return a["gbps"]
    return None


def headline(rows, anchors):
    out = ["**Headline: B=8, H_q=32, H_kv=8, d=128, one query per sequence.** GB/s = K/V bytes read / time; the copy "
           "counts bytes read + written; PyTorch's SDPA figures are from the same session.", "",
           "| N_kv | ours (contiguous, auto) | copy | x copy | SDPA flash | x flash | SDPA cuDNN | x cuDNN | paged16 "
           "| paged64 | paged16 / contiguous | paged64 / contiguous |", "|---" * 12 + "|"]
    for n in ("32768", "131072"):
        key = dict(HEAD, Nkv=n, layout="contiguous", splits="auto")
        ours, copy = find(rows, "decode", **key), find(rows, "anchor:cudaMemcpy_d2d", **key)
        p16 = find(rows, "decode", **dict(key, layout="paged16"))
        p64 = find(rows, "decode", **dict(key, layout="paged64"))
        flash, cudnn = anchor(anchors, "flash", n), anchor(anchors, "cudnn", n)
        if not (ours and copy):
            continue
        g = ours["gbps"]
        cell = lambda x: f"{x:.0f}" if x else "-"
        ratio = lambda a, b: f"{a / b:.3f}" if a and b else "-"
        out.append(f"| {n} | {g:.0f} | {copy['gbps']:.0f} | {ratio(g, copy['gbps'])} | {cell(flash)} | {ratio(g, flash)} "
                   f"| {cell(cudnn)} | {ratio(g, cudnn)} | {cell(p16 and p16['gbps'])} | {cell(p64 and p64['gbps'])} "
                   f"| {ratio(p16 and p16['gbps'], g)} | {ratio(p64 and p64['gbps'], g)} |")
    return out


def sweep(rows):
    out = ["", "**The split sweep** (contiguous; blocks = B · H_kv · splits; auto = `choose_splits`):", "",
           "| splits | N_kv=32768 blocks | GB/s | / best | N_kv=131072 blocks | GB/s | / best |", "|---" * 7 + "|"]
    table = {}
    for n in ("32768", "131072"):
        pts = [r for r in rows if r["variant"] == "decode" and set(r["p"]) == set(HEAD) | {"Nkv", "layout", "splits"}
               and all(r["p"][k] == v for k, v in HEAD.items()) and r["p"]["Nkv"] == n
               and r["p"]["layout"] == "contiguous"]
        best = max((r["gbps"] for r in pts), default=None)
        for r in pts:
            table.setdefault(r["p"]["splits"], {})[n] = (r, best)
    order = sorted((s for s in table if s != "auto"), key=int) + (["auto"] if "auto" in table else [])
    for s in order:
        cells = []
        for n in ("32768", "131072"):
            if n in table[s]:
                r, best = table[s][n]
                name = f"{r['blocks']:.0f}" + (f" ({r['splits']:.0f} splits)" if s == "auto" else "")
                cells += [name, f"{r['gbps']:.0f}", f"{r['gbps'] / best:.3f}"]
            else:
                cells += ["", "", ""]
        out.append(f"| {s} | " + " | ".join(cells) + " |")
    return out


def batch(rows):
    out = ["", "**Why split: GB/s against the number of blocks** (N_kv=32768; without splits the grid is B · H_kv "
           "blocks on 132 SMs):", "", "| B | no split: blocks | GB/s | auto: splits | blocks | GB/s | auto / no split |",
           "|---" * 7 + "|"]
    for B in sorted({int(r["p"]["B"]) for r in rows if r["variant"] == "decode" and r["p"].get("Nkv") == "32768"}):
        key = dict(HEAD, B=B, Nkv=32768, layout="contiguous")
        one, auto = find(rows, "decode", **key, splits=1), find(rows, "decode", **key, splits="auto")
        if one and auto:
            out.append(f"| {B} | {one['blocks']:.0f} | {one['gbps']:.0f} | {auto['splits']:.0f} | {auto['blocks']:.0f} "
                       f"| {auto['gbps']:.0f} | {auto['gbps'] / one['gbps']:.2f} |")
    return out


def others(rows):
    out = ["", "**Variants against the headline row** (same N_kv, same run):", "",
           "| variant | N_kv | GB/s | / contiguous auto |", "|---|---|---|---|"]
    for n in ("32768", "131072"):
        base = find(rows, "decode", **dict(HEAD, Nkv=n, layout="contiguous", splits="auto"))
        if not base:
            continue
        cands = [(f"tile config {r['p']['config']} ({r['splits']:.0f} splits)", r) for r in rows
                 if r["variant"] == "decode" and r["p"].get("config") and r["p"].get("Nkv") == n
                 and r["p"].get("d") == "128" and r["p"].get("B") == "8"]
        cands.append(("no programmatic dependent launch (`decode_nopdl`)",
                      find(rows, "decode_nopdl", **dict(HEAD, Nkv=n, layout="contiguous", splits="auto"))))
        cands.append(("no split (64 blocks)", find(rows, "decode", **dict(HEAD, Nkv=n, layout="contiguous", splits=1))))
        cands.append(("chapter 10's forward (`fa2tc_forward`)",
                      find(rows, "fa2tc_forward", **dict(HEAD, Nkv=n, layout="contiguous"))))
        for layout in ("contiguous", "paged16"):
            cands.append((f"4 queries per sequence (n_q=4), {layout}",
                          find(rows, "decode", **dict(HEAD, nq=4, Nkv=n, layout=layout, splits="auto"))))
        for name, r in cands:
            if r:
                out.append(f"| {name} | {n} | {r['gbps']:.0f} | {r['gbps'] / base['gbps']:.3f} |")
    d64 = [r for r in rows if r["variant"] == "decode" and r["p"].get("d") == "64"]
    for r in d64:
        extra = f", config {r['p']['config']}" if r["p"].get("config") else ""
        out.append(f"| d=64, {r['p']['layout']}{extra} ({r['splits']:.0f} splits) | {r['p']['Nkv']} | {r['gbps']:.0f} | |")
    return out


def ncu(path):
    lines = [l for l in pathlib.Path(path).read_text().splitlines() if l.strip()]
    recs = list(csv.reader(lines))
    if len(recs) < 3:
        return []
    hdr = recs[0]
    kernels = [dict(zip(hdr, r)) for r in recs[2:]]
    num = lambda v: float(v.replace(",", "")) if v not in ("", None) else 0.0
    out = ["", "**Nsight Compute** (`ncu --clock-control none`, one launch of `--profile auto` at N_kv=131072):", "",
           "| kernel | time µs | DRAM % of peak | L2 % of peak | registers | blocks/SM (smem, regs limit) | warps/SM "
           "theoretical % | achieved % | issue active % | cycles per issued instruction | of them waiting on memory "
           "(long scoreboard) |", "|---" * 11 + "|"]
    for k in kernels:
        name = "decode_kernel" if "decode_kernel" in k.get("Kernel Name", "") else "combine_kernel"
        out.append(
            f"| {name} | {num(k['gpu__time_duration.sum']) / 1e3:.1f} "
            f"| {num(k['gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed']):.1f} "
            f"| {num(k['lts__throughput.avg.pct_of_peak_sustained_elapsed']):.1f} "
            f"| {k['launch__registers_per_thread']} | {k['launch__occupancy_limit_shared_mem']}, "
            f"{k['launch__occupancy_limit_registers']} | {num(k['sm__maximum_warps_per_active_cycle_pct']):.1f} "
            f"| {num(k['sm__warps_active.avg.pct_of_peak_sustained_active']):.1f} "
            f"| {num(k['sm__issue_active.avg.pct_of_peak_sustained_elapsed']):.1f} "
            f"| {num(k['smsp__average_warp_latency_per_inst_issued.ratio']):.2f} "
            f"| {num(k['smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio']):.2f} |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json")
    ap.add_argument("anchors_json")
    ap.add_argument("ncu_csv", nargs="?")
    ap.add_argument("--readme", help="the README whose tables block receives the markdown")
    publish.add_flag(ap)
    opts = ap.parse_args()
    args = [a for a in (opts.bench_json, opts.anchors_json, opts.ncu_csv) if a]
    for f in args:
        if not pathlib.Path(f).is_file():
            ap.error(f"{f}: no such file")
    readme = opts.readme
    context, rows = rows_of(args[0])
    anchors = json.loads(pathlib.Path(args[1]).read_text())
    text = [f"*Written by `11_flash_decoding/results_tables.py` from the benchmark JSON of the run on "
            f"{context.get('date', '?')} and PyTorch's anchors of the same session.*", ""]
    text += headline(rows, anchors) + sweep(rows) + batch(rows) + others(rows)
    if len(args) > 2:
        text += ncu(args[2])
    block = "\n".join(text) + "\n"
    if readme:
        path = publish.destination(readme, opts.publish)
        start, end = "<!-- results:11_flash_decoding:tables -->", "<!-- /results:11_flash_decoding:tables -->"
        doc = path.read_text()
        if start not in doc or end not in doc:
            sys.exit(f"{readme}: no {start} ... {end} block")
        doc = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: f"{start}\n{block}{end}", doc, flags=re.S)
        path.write_text(doc)
    print(block)


if __name__ == "__main__":
    main()
