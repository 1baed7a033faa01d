#!/usr/bin/env python3
"""The README's step table, from one GPU run: every number from the benchmark JSON and the ncu CSV.

    python3 09_tensor_core_matmul/step_table.py BENCH_JSON NCU_CSV [--readme 09_tensor_core_matmul/README.md]
                                                [--summary-json results/summary.json] [--publish]

BENCH_JSON: 09_tensor_core_matmul_bench --benchmark_out (names <step>/M=../N=../K=.., anchor:cublas_bf16/...).
NCU_CSV:    ncu_steps.sh's ncu_09.csv: ncu --csv --page raw, one launch per step in step order, then cuBLAS
            (09_tensor_core_matmul --profile <every step>,cublas_bf16).
Prints the markdown table; with --readme, replaces what stands between
<!-- results:09_tensor_core_matmul:steps --> and <!-- /results:09_tensor_core_matmul:steps -->.
With --summary-json, sets "09_tensor_core_matmul": {"vs_cublas_bf16": best step / cuBLAS at 4096^3}
in that file (created if missing). The one-change column is read from tc_matmul.cu's idea().
A file of the repository is overwritten only with --publish (else: build/local/, scripts/publish.py).
"""
import argparse
import csv
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))
import publish  # noqa: E402
NAME = "09_tensor_core_matmul"


def steps_and_ideas():
    """[(step number, variant name, idea)] in ladder order, from tc_matmul.cu itself."""
    src = (HERE / "tc_matmul.cu").read_text()

    def switch(fn):
        body = re.search(r"const char\* " + fn + r"\(Variant v\) \{(.*?)\n\}", src, re.S).group(1)
        return dict(re.findall(r'case Variant::(\w+): return "([^"]*)";', body))

    names, ideas = switch("name"), switch("idea")
    order = re.search(r"kAll\[\] = \{(.*?)\};", (HERE / "tc_matmul.h").read_text(), re.S).group(1)
    enums = re.findall(r"Variant::(\w+)", order)
    numbers = ["1", "2", "3", "4", "5", "6a", "6b", "6c"]
    return [(numbers[i], names[e], ideas[e]) for i, e in enumerate(enums)]


def tflops(bench_json):
    """{(variant, 'M=../N=../K=..'): TFLOP/s}"""
    out = {}
    for b in json.loads(pathlib.Path(bench_json).read_text())["benchmarks"]:
        if b.get("error_occurred") or "TFLOP/s" not in b:
            continue
        parts = b["name"].split("/")
        variant, shape = parts[0], "/".join(p for p in parts[1:] if "=" in p)
        out[(variant, shape)] = b["TFLOP/s"]
    return out


# The kernel each step launches, as ncu names it (cuBLAS: anything else).
KERNEL_OF = {"wmma": "wmma_kernel<", "mma_ldmatrix": "mma_single_stage<", "mma_swizzle": "mma_single_stage<",
             "mma_pipeline": "mma_pipeline<", "wgmma_tma": "wgmma_tma_kernel<", "wgmma_ws": "wgmma_ws_kernel<1,",
             "wgmma_persistent": "wgmma_ws_kernel<1,", "wgmma_cluster": "wgmma_ws_kernel<2,"}


def ncu_rows(ncu_csv, order):
    """{variant: {metric: value}}: the CSV's launches, in --profile order (steps a GPU cannot
    run are absent: each row goes to the next step in order whose kernel it is)."""
    lines = [l for l in pathlib.Path(ncu_csv).read_text().splitlines() if l.startswith('"')]
    if len(lines) < 3:
        return {}
    rows = list(csv.DictReader(lines[:1] + lines[2:]))  # line 2 holds the units
    out, i = {}, 0
    for r in rows:
        name = r.get("Kernel Name", "")
        while i < len(order) and order[i] != "cublas_bf16" and KERNEL_OF[order[i]] not in name:
            i += 1
        if i >= len(order):
            break
        out.setdefault(order[i], r)
        if order[i] != "cublas_bf16":  # cuBLAS may launch more than one kernel: it is last
            i += 1
    return out


def num(row, metric):
    try:
        return float(str(row.get(metric, "")).replace(",", ""))
    except ValueError:
        return None


def flops_per_active_cycle(row, flops):
    """FLOPs per SM per cycle the tensor pipe was active: 4096 is wgmma's dense bf16 rate."""
    t, clock, sms = num(row, "gpu__time_duration.sum"), num(row, "sm__cycles_elapsed.avg.per_second"), \
        num(row, "launch__sm_count") or num(row, "device__attribute_multiprocessor_count")
    pipe = [num(row, m) for m in ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                                  "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")]
    pipe = max((p for p in pipe if p is not None), default=None)
    if not (t and clock and sms and pipe):
        return None
    return flops / (t * 1e-9 * clock * sms * pipe / 100.0)


def moved(row, flops=2.0 * 4096 ** 3):
    """What ncu says: bank conflicts, tensor pipe activity, FLOPs per active pipe cycle,
    achieved occupancy, DRAM bytes."""
    if not row:
        return "", "", "", "", ""
    conflicts = num(row, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
    pipe = [num(row, m) for m in ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                                  "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                                  "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")]
    pipe = max((p for p in pipe if p is not None), default=None)
    occ = num(row, "sm__warps_active.avg.pct_of_peak_sustained_active")
    dram = [num(row, m) for m in ("dram__bytes_read.sum", "dram__bytes_write.sum")]
    dram = sum(d for d in dram if d is not None) if any(d is not None for d in dram) else None
    f = lambda v, fmt: "" if v is None else fmt.format(v)
    return (f(conflicts, "{:,.0f}"), f(pipe, "{:.1f} %"), f(flops_per_active_cycle(row, flops), "{:,.0f}"),
            f(occ, "{:.1f} %"), f(dram / 1e6 if dram else None, "{:.0f}"))


def table(bench_json, ncu_csv):
    steps = steps_and_ideas()
    t = tflops(bench_json)
    order = [s[1] for s in steps] + ["cublas_bf16"]
    ncu = ncu_rows(ncu_csv, order) if ncu_csv and pathlib.Path(ncu_csv).exists() else {}
    shapes = ["M=4096/N=4096/K=4096", "M=8192/N=8192/K=8192"]
    anchor = {s: t.get(("anchor:cublas_bf16", s)) for s in shapes}
    head = ("| step | variant | the one change | TFLOP/s 4096³ | × cuBLAS | TFLOP/s 8192³ | × cuBLAS | "
            "smem ld bank conflicts | tensor pipe active | FLOP / SM / active pipe cycle | achieved occupancy | DRAM MB |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    best = None
    for number, variant, idea in steps:
        cells = []
        for s in shapes:
            v = t.get((variant, s))
            cells += ["" if v is None else f"{v:.1f}",
                      "" if v is None or not anchor[s] else f"{v / anchor[s]:.2f}"]
        v4 = t.get((variant, shapes[0]))
        if v4 is not None and (best is None or v4 > best[1]):
            best = (variant, v4)
        lines.append(f"| {number} | `{variant}` | {idea} | " + " | ".join(cells) + " | " +
                     " | ".join(moved(ncu.get(variant))) + " |")
    a = [f"{anchor[s]:.1f}" if anchor[s] else "" for s in shapes]
    lines.append(f"| | `cublas_bf16` | the anchor (GemmEx, bf16 in, fp32 compute and out) | {a[0]} | 1.00 | {a[1]} | 1.00 | " +
                 " | ".join(moved(ncu.get("cublas_bf16"))) + " |")
    ratio = best[1] / anchor[shapes[0]] if best and anchor[shapes[0]] else None
    return "\n".join(lines) + "\n", best, ratio


def fill(readme, block, content):
    text = readme.read_text()
    start, end = f"<!-- results:{block} -->", f"<!-- /results:{block} -->"
    if start not in text or end not in text:
        sys.exit(f"{readme}: no {start} ... {end} block")
    before, rest = text.split(start, 1)
    readme.write_text(before + start + "\n" + content + end + rest.split(end, 1)[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json", type=pathlib.Path)
    ap.add_argument("ncu_csv", nargs="?", type=pathlib.Path)
    ap.add_argument("--readme", type=pathlib.Path, help="the README whose steps block receives the table")
    ap.add_argument("--summary-json", type=pathlib.Path, help="the summary.json that receives the ratio")
    publish.add_flag(ap)
    args = ap.parse_args()
    if not args.bench_json.is_file():
        ap.error(f"{args.bench_json}: no such file")
    readme = publish.destination(args.readme, args.publish) if args.readme else None
    summary = publish.destination(args.summary_json, args.publish) if args.summary_json else None
    md, best, ratio = table(args.bench_json, args.ncu_csv)
    print(md)
    if best:
        print(f"best {best[0]} {best[1]:.2f} TFLOP/s = {ratio:.2f}x cuBLAS bf16 at M=N=K=4096" if ratio else "")
    if readme:
        fill(readme, f"{NAME}:steps", md)
    if summary and ratio is not None:
        data = json.loads(summary.read_text()) if summary.exists() else {}
        data[NAME] = {"vs_cublas_bf16": round(ratio, 3)}
        summary.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
