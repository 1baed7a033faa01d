#!/usr/bin/env python3
"""Chapter 10's README tables from one GPU run: every number from the benchmark JSON, the ncu
CSV and the PyTorch anchors measured in the same session.

    python3 10_fa2_tensor_cores/step_table.py BENCH_JSON NCU_CSV ANCHORS_JSON
            [--readme 10_fa2_tensor_cores/README.md] [--summary-json results/summary.json]
            [--only anchors,normalisation,configs,rescale] [--publish]

BENCH_JSON:   10_fa2_tensor_cores_bench --benchmark_out (names <variant>/d=../N=../B=../H=..[/H_kv=..]/causal=..)
NCU_CSV:      what .handoff/10/request.sh writes: for each profile (fwd, bwd, fwd_fa1norm) a line
              "# profile <name>" and the `ncu --csv --page details` rows of its one launch
ANCHORS_JSON: scripts/anchors/torch_anchors.py's anchors2.json (a list of records), same session
Prints four markdown tables (anchors, the FA1/FA2 normalisation lesson, the tile configs,
skiprescale on random and on rising logits); with --readme, replaces what stands between
<!-- results:10_fa2_tensor_cores:NAME --> and <!-- /results:10_fa2_tensor_cores:NAME --> for
NAME in anchors, normalisation, configs, rescale.
With --summary-json, sets "10_fa2_tensor_cores": {"fwd_vs_sdpa_flash", "bwd_vs_sdpa_flash",
"fwd_vs_sdpa_cudnn"} at B=4 H=16 N=4096 d=128 dense (created if missing).
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

NAME = "10_fa2_tensor_cores"


def bench(path):
    """{(variant, keys): TFLOP/s} from Google Benchmark JSON."""
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("error_occurred") or "TFLOP/s" not in b:
            continue
        name = b.get("run_name", b["name"]).replace("/manual_time", "")
        variant, _, keys = name.partition("/")
        out[(variant, keys)] = b["TFLOP/s"]
    return out


def keys(d, N, B, H, causal, H_kv=None):
    return f"d={d}/N={N}/B={B}/H={H}" + (f"/H_kv={H_kv}" if H_kv else "") + f"/causal={int(causal)}"


def anchors(path):
    """{(impl, B, H, N, d, causal): (fwd, bwd)} and {impl: gqa fwd} from scripts/anchors/torch_anchors.py's anchors2.json."""
    sdpa, gqa = {}, {}
    for r in json.load(open(path)):
        if r.get("kind") == "sdpa_bf16" and "fwd_tflops" in r:
            B, H, N, d = (int(x) for x in re.match(r"B(\d+) H(\d+) N(\d+) d(\d+)", r["shape"]).groups())
            sdpa[(r["impl"], B, H, N, d, bool(r["causal"]))] = (r["fwd_tflops"], r["bwd_tflops"])
        elif r.get("kind") == "gqa_bf16" and "tflops" in r:
            gqa[r["impl"]] = r["tflops"]
    return sdpa, gqa


def ncu(path):
    """{profile: {metric name: value}} from the request's concatenated ncu CSV (first kernel of each)."""
    out, profile, header = {}, None, None
    for line in open(path):
        if line.startswith("# profile"):
            profile, header = line.split()[2], None
            out[profile] = {}
            continue
        row = next(csv.reader([line]))
        if header is None:
            header = row
            continue
        rec = dict(zip(header, row))
        if profile is None or "Metric Name" not in rec:
            continue
        out[profile].setdefault(rec["Metric Name"], (rec.get("Metric Value", ""), rec.get("Metric Unit", "")))
    return out


def fmt(x, spec=".0f"):
    return "—" if x is None else format(x, spec)


def ratio(a, b):
    return None if a is None or not b else a / b


def anchor_table(tf, sdpa, gqa):
    rows = ["| shape | fwd | SDPA flash | × flash | cuDNN | × cuDNN | bwd | SDPA flash | × flash | cuDNN | × cuDNN |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (B, H, N, d) in [(4, 16, 4096, 64), (4, 16, 4096, 128), (1, 16, 16384, 128)]:
        for causal in (False, True):
            k = keys(d, N, B, H, causal)
            f, b = tf.get(("fwd", k)), tf.get(("bwd", k))
            ff, fb = sdpa.get(("flash", B, H, N, d, causal), (None, None))
            cf, cb = sdpa.get(("cudnn", B, H, N, d, causal), (None, None))
            rows.append(f"| B={B} H={H} N={N} d={d}{' causal' if causal else ''} | {fmt(f)} | {fmt(ff)} | "
                        f"{fmt(ratio(f, ff), '.2f')} | {fmt(cf)} | {fmt(ratio(f, cf), '.2f')} | {fmt(b)} | {fmt(fb)} | "
                        f"{fmt(ratio(b, fb), '.2f')} | {fmt(cb)} | {fmt(ratio(b, cb), '.2f')} |")
    k = keys(128, 4096, 4, 32, True, 8)
    f, b = tf.get(("fwd", k)), tf.get(("bwd", k))
    rows.append(f"| GQA 32:8 B=4 N=4096 d=128 causal | {fmt(f)} | {fmt(gqa.get('flash'))} | "
                f"{fmt(ratio(f, gqa.get('flash')), '.2f')} | {fmt(gqa.get('cudnn'))} | "
                f"{fmt(ratio(f, gqa.get('cudnn')), '.2f')} | {fmt(b)} | — | — | — | — |")
    return "TFLOP/s (FA convention: 4·B·H·N²·d forward, halved causal, backward 2.5×), one session\n\n" + \
        "\n".join(rows)


def normalisation_table(tf, context=None):
    rows = ["| d | tensor cores | FA2 norm | FA1 norm | FA1 time / FA2 time | fp32 (ch. 06), FA2 norm | "
            "fp32, FA1 norm | FA1 time / FA2 time |", "|---|---|---|---|---|---|---|---|"]
    for d in (64, 128):
        k = keys(d, 4096, 4, 16, False)
        f2, f1 = tf.get(("fp32_fwd_fa2norm", k)), tf.get(("fp32_fwd_fa1norm", k))
        cfg1 = sorted({v[len("fwd_fa1norm_"):] for (v, kk) in tf if v.startswith("fwd_fa1norm_cfg1_") and kk == k})
        kernels = [("default (cfg0)", "fwd", "fwd_fa1norm")] + [(f"`{c}`", f"fwd_{c}", f"fwd_fa1norm_{c}") for c in cfg1]
        for label, v2, v1 in kernels:
            t2, t1 = tf.get((v2, k)), tf.get((v1, k))
            rows.append(f"| {d} | {label} | {fmt(t2)} | {fmt(t1)} | {fmt(ratio(t2, t1), '.2f')} | {fmt(f2, '.1f')} | "
                        f"{fmt(f1, '.1f')} | {fmt(ratio(f2, f1), '.2f')} |")
    stamp = ""
    if context:
        stamp = (f"\n\nMeasured on {context.get('gpu', '?')}, {context.get('date', '?')}, commit "
                 f"{context.get('git_commit', '?')}.")
    return "TFLOP/s at B=4 H=16 N=4096, dense\n\n" + "\n".join(rows) + stamp


def config_table(tf, prof):
    cols = [(d, c) for d in (64, 128) for c in (False, True)]
    variants = sorted({v for (v, _) in tf if v.startswith(("fwd", "bwd", "fp32"))},
                      key=lambda v: (v.startswith("fp32"), v.startswith("bwd"),
                                     [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", v)]))
    head = "| variant | " + " | ".join(f"d={d}{' causal' if c else ''}" for d, c in cols) + " |"
    rows = [head, "|---" * (len(cols) + 1) + "|"]
    for v in variants:
        vals = [tf.get((v, keys(d, 4096, 4, 16, c))) for d, c in cols]
        if all(x is None for x in vals):
            continue
        rows.append(f"| `{v}` | " + " | ".join(fmt(x, ".1f") for x in vals) + " |")
    out = "TFLOP/s at B=4 H=16 N=4096 (cfg0 = the default, `fwd` / `bwd`)\n\n" + "\n".join(rows)
    want = [("Duration", "time"), ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                                   "tensor pipe %"),
            ("Achieved Occupancy", "achieved occupancy %"), ("Registers Per Thread", "registers"),
            ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "smem ld bank conflicts"),
            ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "smem st bank conflicts"),
            ("dram__bytes_read.sum", "DRAM read"), ("dram__bytes_write.sum", "DRAM write")]
    if prof:
        out += "\n\nncu, one launch at B=4 H=16 N=4096 d=128 dense (`--clock-control none`)\n\n"
        out += "| kernel | " + " | ".join(w for _, w in want) + " |\n" + "|---" * (len(want) + 1) + "|\n"
        for p in ("fwd", "fwd_fa1norm", "bwd"):
            m = prof.get(p, {})
            out += f"| {p} | " + " | ".join(" ".join(m[k]).strip() if k in m else "—" for k, _ in want) + " |\n"
    return out


def rescale_table(tf, sdpa, gqa):
    """skiprescale's dependence on the data: at the d = 128 targets, the default and its twin
    without skiprescale (the fwd_cfg variant the benchmark also ran on rising logits), on the
    usual random inputs and on logits that rise at every key tile (no rescale skipped)."""
    twins = sorted({v for (v, k) in tf if k.endswith("/logits=rising") and v != "fwd"})
    twin = twins[0] if twins else None
    rows = ["| shape | SDPA flash | default | × flash | default, rising logits | × flash | "
            f"{'`' + twin + '`' if twin else 'without skiprescale'} | × flash | the same, rising logits | × flash |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    shapes = [(f"B={B} H={H} N={N} d=128{' causal' if c else ''}", keys(128, N, B, H, c),
               sdpa.get(("flash", B, H, N, 128, c), (None, None))[0])
              for (B, H, N) in [(4, 16, 4096), (1, 16, 16384)] for c in (False, True)]
    shapes.append(("GQA 32:8 B=4 N=4096 d=128 causal", keys(128, 4096, 4, 32, True, 8), gqa.get("flash")))
    for label, k, flash in shapes:
        cells = []
        for v, suffix in (("fwd", ""), ("fwd", "/logits=rising"), (twin, ""), (twin, "/logits=rising")):
            x = tf.get((v, k + suffix)) if v else None
            cells += [fmt(x), fmt(ratio(x, flash), ".2f")]
        rows.append(f"| {label} | {fmt(flash)} | " + " | ".join(cells) + " |")
    return "TFLOP/s, the default with and without skiprescale; rising logits: every key tile raises the row maxima " \
        "(fa2_tc_problem.h), one session\n\n" + "\n".join(rows)


def replace(readme, name, text):
    start, end = f"<!-- results:{NAME}:{name} -->", f"<!-- /results:{NAME}:{name} -->"
    src = readme.read_text()
    if start not in src or end not in src:
        sys.exit(f"{readme}: no {start} ... {end}")
    readme.write_text(src.split(start)[0] + start + "\n" + text.rstrip() + "\n" + end + src.split(end, 1)[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json")
    ap.add_argument("ncu_csv", help="read when the file exists")
    ap.add_argument("anchors_json")
    ap.add_argument("--readme", help="the README whose blocks receive the tables")
    ap.add_argument("--summary-json", help="the summary.json that receives the ratios")
    ap.add_argument("--only", help="a comma-separated subset of anchors,normalisation,configs,rescale")
    publish.add_flag(ap)
    args = ap.parse_args()
    for f in (args.bench_json, args.anchors_json):
        if not pathlib.Path(f).is_file():
            ap.error(f"{f}: no such file")
    tf = bench(args.bench_json)
    prof = ncu(args.ncu_csv) if pathlib.Path(args.ncu_csv).is_file() else {}
    sdpa, gqa = anchors(args.anchors_json)
    context = json.load(open(args.bench_json)).get("context", {})
    tables = {"anchors": anchor_table(tf, sdpa, gqa), "normalisation": normalisation_table(tf, context),
              "configs": config_table(tf, prof), "rescale": rescale_table(tf, sdpa, gqa)}
    if args.only:  # a run that re-measured some tables only (e.g. --only normalisation)
        unknown = set(args.only.split(",")) - set(tables)
        if unknown:
            ap.error(f"--only: unknown table {', '.join(sorted(unknown))}; the tables are {', '.join(tables)}")
        tables = {k: v for k, v in tables.items() if k in args.only.split(",")}
    for name, text in tables.items():
        print(f"## {name}\n\n{text}\n")
    if args.readme:
        readme = publish.destination(args.readme, args.publish)
        for name, text in tables.items():
            replace(readme, name, text)
    if args.summary_json:
        k = keys(128, 4096, 4, 16, False)
        ff, fb = sdpa.get(("flash", 4, 16, 4096, 128, False), (None, None))
        cf, _ = sdpa.get(("cudnn", 4, 16, 4096, 128, False), (None, None))
        r = lambda a, b: None if a is None or not b else round(a / b, 3)
        path = publish.destination(args.summary_json, args.publish)
        summary = json.loads(path.read_text()) if path.is_file() else {}
        summary[NAME] = {"fwd_vs_sdpa_flash": r(tf.get(("fwd", k)), ff), "bwd_vs_sdpa_flash": r(tf.get(("bwd", k)), fb),
                         "fwd_vs_sdpa_cudnn": r(tf.get(("fwd", k)), cf)}
        path.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
