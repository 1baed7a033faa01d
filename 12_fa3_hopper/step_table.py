#!/usr/bin/env python3
"""Chapter 12's result tables, from one GPU run.

  step_table.py BENCH_JSON [BENCH_JSON...] ANCHORS2_JSON [ncu_<variant>.log ...] [--readme README.md] [--publish]
                [--targets results/targets.json]

BENCH_JSON: Google Benchmark JSON of 12_fa3_hopper_bench (bench.json, bench_persistent.json).
With --benchmark_repetitions the value of a row is the MEDIAN of its repetitions (one run can be
~10% off at these sizes: clocks and power move). ANCHORS2_JSON: scripts/anchors/torch_anchors.py's anchors2.json records
({"kind": "sdpa_bf16", "impl": "cudnn", "shape": "B4 H16 N4096 d128", "causal": false,
"fwd_tflops": ...}, GQA as "gqa_bf16" with "tflops"). ncu_<variant>.log: `ncu --page details
--print-details all` text of one launch of `12_fa3_hopper --profile <variant>` (sections
SpeedOfLight, ComputeWorkloadAnalysis, WarpStateStats); the variant is the file name's.

The goals come from results/targets.json (scripts/targets.py: met, missed, or within noise when met by
less than the spread between a row's repetitions). A block's provenance line names the run of the file its
rows come from (the d = 256 rows may be another run's BENCH_JSON).

Prints five Markdown blocks; with --readme, writes each between its markers
<!-- results:12_fa3_hopper:NAME --> and <!-- /results:12_fa3_hopper:NAME --> (NAME: steps,
anchors, fp8steps, fp8, fp8d256; --blocks picks some) and leaves the rest of the file alone. A file of the repository is overwritten
only with --publish (else: build/local/, scripts/publish.py).
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import publish  # noqa: E402
import targets as goals  # noqa: E402

STEPS = [  # (bench variant, what the step adds)
    ("anchor:fa2_tc/fwd", "chapter 10: `mma.sync`, `cp.async`, 8 equal warps (reference)"),
    ("step:tma", "TMA into an mbarrier ring + `wgmma` (S from shared memory, P̃ V with P̃ in registers)"),
    ("step:warpspec", "a producer warpgroup for the copies, `setmaxnreg` 24 / 240"),
    ("step:pingpong", "named barriers: one warpgroup's softmax under the other's GEMMs"),
    ("step:intrawg", "`S_{j+1}` issued before the softmax of `S_j` (two S tiles live)"),
    ("step:persistent", "one CTA per SM walks row tiles; the next tile's `Q_i`, `K_0` load early (dense); `O` by TMA store"),
    ("tune:intrawg_stages3", "`intrawg` with 3 K/V stages instead of 2 (experiment)"),
    ("tune:intrawg_eager", "`intrawg` with FA2's max rule: `O` rescaled whenever a row's max moves (every row above "
     "has FA4's)"),
    ("tune:persistent_eager", "`persistent` with FA2's max rule"),
    ("tune:intrawg_spec", "`intrawg` with the speculative max: the exponentials against the current `m_i`, the "
     "tile's max checked after"),
    ("tune:persistent_spec", "`persistent` with the speculative max"),
]
NCU_NAME = {"step:tma": "tma", "step:warpspec": "warpspec", "step:pingpong": "pingpong",
            "step:intrawg": "intrawg", "step:persistent": "persistent"}
D128 = "d=128/N=4096/B=4/H=16"
N16K = "d=128/N=16384/B=1/H=16"
GQA = "d=128/N=4096/B=4/H=32/H_kv=8"
D256 = {"d=256/N=4096/B=4/H=8": "B4 H8 N4096 d256", "d=256/N=16384/B=1/H=8": "B1 H8 N16384 d256"}
SHAPE = {D128: "B4 H16 N4096 d128", N16K: "B1 H16 N16384 d128"}
CHAPTER = "12_fa3_hopper"
# results/targets.json's keys of this chapter's anchors block, per (shape, causal)
CUDNN_KEY = {(D128, 0): "fwd_vs_sdpa_cudnn", (D128, 1): "causal_fwd_vs_sdpa_cudnn",
             (N16K, 0): "n16384_fwd_vs_sdpa_cudnn", (N16K, 1): "n16384_causal_fwd_vs_sdpa_cudnn"}
FP8_KEY = {(D128, 0): "fp8_vs_bf16", (D128, 1): "causal_fp8_vs_bf16",
           (N16K, 0): "n16384_fp8_vs_bf16", (N16K, 1): "n16384_causal_fp8_vs_bf16"}
FP8_STEPS = [  # (bench variant, the idea it measures), each on its own beside the 128-key kernel
    ("tune:fp8_keys128", "`B_c` = 128 keys, every exponential on the MUFU (the FP8 kernel of `intrawg`; this row "
     "and every row below but the `_eager` ones with FA4's max rule)"),
    ("tune:fp8_poly2", "2 of every 8 exponentials as a cubic on the FMA pipes (`soft_exp2.h`)"),
    ("tune:fp8_poly4", "4 of every 8 on the FMA pipes"),
    ("tune:fp8_keys192", "wider key tiles: `B_c` = 192 (3 K/V stages)"),
    ("tune:fp8_keys224", "`B_c` = 224 (2 K/V stages: 3 do not fit)"),
    ("tune:fp8_keys224_poly2", "224 keys and 2 eighths on the FMA pipes"),
    ("tune:fp8_keys192_noturns", "192 keys without the turns at the exponentials (every row above has them)"),
    ("tune:fp8_keys128_expturns", "128 keys, turns at the exponentials but none at the GEMMs"),
    ("tune:fp8_keys128_free", "128 keys, no turns at all: the two consumers run free"),
    ("tune:fp8_keys192_expturns", "192 keys, turns at the exponentials but none at the GEMMs"),
    ("tune:fp8_keys192_free", "192 keys, no turns at all"),
    ("tune:fp8_keys128_persistent", "128 keys, persistent CTAs: the next row tile's loads under this one's end "
     "(causal: one CTA per row tile, `O` by TMA store)"),
    ("tune:fp8_keys192_persistent", "192 keys, persistent CTAs"),
    ("tune:fp8_keys128_eager", "128 keys with FA2's max rule: `O` rescaled whenever a row's max moves"),
    ("tune:fp8_keys192_eager", "192 keys, FA2's max rule"),
    ("tune:fp8_keys128_persistent_eager", "128 keys, persistent, FA2's max rule"),
    ("tune:fp8_keys192_persistent_eager", "192 keys, persistent, FA2's max rule"),
    ("tune:fp8_keys128_spec", "128 keys, the speculative max: the exponentials against the current `m_i` with "
     "the tile's max beside them, `P̃` packed as it comes"),
    ("tune:fp8_keys128_persistent_spec", "128 keys, persistent, the speculative max"),
    ("fp8", "the defaults: persistent CTAs (`kFp8BestStep`), the tile policy's 128 keys (`kFp8KeyTile`)"),
    ("anchor:cudnn/fp8", "cuDNN's FP8 attention, same inputs quantised per tensor (reference)"),
]


def read_json(path):
    """A whole JSON file, or from one cut short (a benchmark killed by its timeout) the runs it holds."""
    text = Path(path).read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        runs, dec = [], json.JSONDecoder()
        i = text.find("[", text.find('"benchmarks"')) + 1
        while i > 0:
            j = text.find("{", i)
            if j < 0:
                break
            try:
                obj, i = dec.raw_decode(text, j)
            except json.JSONDecodeError:
                break
            runs.append(obj)
        ctx = text.find('"context"')
        context = dec.raw_decode(text, text.find("{", ctx))[0] if ctx >= 0 else {}
        print(f"step_table.py: {path} was cut short; {len(runs)} runs read", file=sys.stderr)
        return {"context": context, "benchmarks": runs}


def load_bench(paths):
    """{(variant, keys): median TFLOP/s}, keys like 'd=128/N=4096/B=4/H=16/causal=0'; each row's
    (min, max) over its repetitions; the first file's context; and the context of the file each row came from."""
    samples, medians, context, row_context = {}, {}, {}, {}
    for path in paths:
        data = read_json(path)
        context = context or data.get("context", {})
        for b in data.get("benchmarks", []):
            if "TFLOP/s" not in b or b.get("error_occurred"):
                continue
            name = re.sub(r"/repeats:\d+", "", b.get("run_name", b["name"]).replace("/manual_time", ""))
            name = re.sub(r"_(mean|median|stddev|cv)$", "", name)
            variant, _, keys = name.partition("/d=")
            key = (variant, "d=" + keys)
            row_context.setdefault(key, data.get("context", {}))
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    medians[key] = b["TFLOP/s"]
            else:
                samples.setdefault(key, []).append(b["TFLOP/s"])
    rows = {k: statistics.median(v) for k, v in samples.items()}
    rows.update({k: v for k, v in medians.items() if k not in rows})
    spread = {k: (min(v), max(v)) for k, v in samples.items() if len(v) > 1}
    return rows, spread, context, row_context, samples


def load_anchors(path):
    out = {}
    for r in json.loads(Path(path).read_text()):
        if "error" in r:
            continue
        if r.get("kind") == "sdpa_bf16":
            out[(r["impl"], r["shape"], bool(r["causal"]))] = r["fwd_tflops"]
        elif r.get("kind") == "gqa_bf16":
            out[(r["impl"], "gqa", True)] = r["tflops"]
        elif r.get("kind") == "gemm":
            out[(r["impl"], r["shape"], None)] = r["tflops"]
    return out


def num(text, label):
    m = re.search(r"^\s*" + re.escape(label) + r"\s+(?:[%\w/.]+\s+)?([\d,.]+)\s*$", text, re.M)
    return float(m.group(1).replace(",", "")) if m else None


def load_ncu(path):
    """The few numbers that say what moved: duration, tensor pipe, issue, smem wavefronts, top stalls."""
    text = Path(path).read_text(errors="replace")
    r = {"duration_ms": num(text, "Duration"), "sm_ghz": num(text, "SM Frequency"),
         "tensor": num(text, "Tensor (All)") or num(text, "SM: Pipe Tensor Cycles Active"),
         "issue": num(text, "Issue Slots Busy"), "smem": num(text, "L1: Data Pipe Lsu Wavefronts"),
         "xu": num(text, "SM: Inst Executed Pipe Xu"), "cpi": num(text, "Warp Cycles Per Issued Instruction")}
    unit = re.search(r"^\s*Duration\s+(\S+)\s+[\d,.]+\s*$", text, re.M)
    if r["duration_ms"] is not None and unit and unit.group(1) in ("us", "usecond"):
        r["duration_ms"] /= 1000
    table = re.search(r"Warp State \(All Cycles\)(.*?)\n\s*-+ -+ -+\n\n", text, re.S)
    stalls = re.findall(r"Stall ([A-Za-z ]+?)\s+inst\s+([\d.]+)", table.group(1) if table else "")
    r["stalls"] = sorted(((float(v), k) for k, v in stalls), reverse=True)[:3]
    return r


def fmt(x, nd=1):
    return "—" if x is None else f"{x:.{nd}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def ncu_cell(n):
    if not n:
        return "—"
    parts = [f"tensor {fmt(n['tensor'], 0)} %", f"issue slots {fmt(n['issue'], 0)} %"]
    if n["smem"] is not None:
        parts.append(f"smem {fmt(n['smem'], 0)} %")
    if n["duration_ms"] is not None:
        parts.append(f"{n['duration_ms'] * 1000:.0f} µs")
    return ", ".join(parts)


def steps_block(rows, spread, ncu):
    cols = [(D128, 0), (D128, 1), (N16K, 0), (N16K, 1)]
    out = ["| step | what it adds | d128 dense | d128 causal | N16k dense | N16k causal | "
           "gain (d128 dense / causal) | ncu (d128 dense, one launch, boost clock) |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    prev = None
    for variant, what in STEPS:
        vals = [rows.get((variant, f"{k}/causal={c}")) for k, c in cols]
        if all(v is None for v in vals):
            continue
        gain = "—"
        if prev is not None and variant.startswith("step:") and variant != "step:tma":
            g = [ratio(vals[i], prev[i]) for i in (0, 1)]
            gain = " / ".join("—" if x is None else f"{(x - 1) * 100:+.0f} %" for x in g)
        out.append(f"| `{variant}` | {what} | " + " | ".join(fmt(v) for v in vals) +
                   f" | {gain} | {ncu_cell(ncu.get(NCU_NAME.get(variant, variant)))} |")
        if variant.startswith("step:"):
            prev = [v if v is not None else (prev[i] if prev else None) for i, v in enumerate(vals)]
    out.append("")
    out.append("TFLOP/s (FA convention, halved when causal), median of the benchmark's repetitions; "
               "gain = over the step above. `persistent` causal keeps one CTA per row tile (heaviest first), "
               "with the persistent step's epilogue.")
    if spread:
        worst = max(spread.items(), key=lambda kv: (kv[1][1] - kv[1][0]) / kv[1][1])
        lo, hi = worst[1]
        out.append(f"Largest spread between repetitions of one row: {(hi - lo) / hi * 100:.0f} % "
                   f"(`{worst[0][0]}/{worst[0][1]}`): read differences between steps smaller than that with care.")
    return "\n".join(out)


def judged(targets, key, value, spread, level="target"):
    """The target's reading of value (scripts/targets.py), or None when targets.json has no such target."""
    t = goals.find(targets, CHAPTER, key, level)
    return None if t is None or value is None else goals.judge(value, t["goal"], t["direction"], spread)


def goal(targets, key, level="target"):
    return goals.find(targets, CHAPTER, key, level)["goal"]


def anchors_block(rows, anchors, context, samples, targets):
    best = "fwd"
    rng = lambda k: goals.relative_range(samples.get(k, []))  # noqa: E731
    out = ["| shape | causal | this chapter (`fwd`) | SDPA cuDNN | SDPA flash | ratio to cuDNN | "
           f"target ≥ {goals.goal_text(goal(targets, CUDNN_KEY[(D128, 0)]))}× |",
           "|---|---|---:|---:|---:|---:|---|"]
    for keys, shape in ((D128, SHAPE[D128]), (N16K, SHAPE[N16K])):
        for c in (0, 1):
            ours = rows.get((best, f"{keys}/causal={c}"))
            cud, fla = anchors.get(("cudnn", shape, bool(c))), anchors.get(("flash", shape, bool(c)))
            r = ratio(ours, cud)
            spread = goals.spread_of(rng((best, f"{keys}/causal={c}")))  # PyTorch's anchor: one call
            key = CUDNN_KEY[(keys, c)]
            met = judged(targets, key, r, spread)
            moon = judged(targets, key, r, spread, "moonshot")
            cell = "—" if met is None else ("met" if met[0] == "met" else
                                           "**missed**" if met[0] == "missed" else met[1])
            if moon and moon[0] != "missed":
                cell += (f" (moonshot ≥ {goals.goal_text(goal(targets, key, 'moonshot'))}× " +
                         ("met)" if moon[0] == "met" else "within noise)"))
            out.append(f"| {shape} | {'yes' if c else 'no'} | {fmt(ours)} | {fmt(cud)} | {fmt(fla)} | "
                       f"{fmt(r, 2)}× | {cell} |")
    ours = rows.get((best, f"{GQA}/causal=1"))
    cud, fla = anchors.get(("cudnn", "gqa", True)), anchors.get(("flash", "gqa", True))
    out.append(f"| B4 H32 H_kv8 N4096 d128 (GQA) | yes | {fmt(ours)} | {fmt(cud)} | {fmt(fla)} | "
               f"{fmt(ratio(ours, cud), 2)}× | (not a target) |")
    dense, causal = goal(targets, FP8_KEY[(D128, 0)]), goal(targets, FP8_KEY[(D128, 1)])
    out += ["", "| FP8 (e4m3) vs this chapter's bf16 | causal | fp8 | bf16 (`fwd`) | ratio | "
            f"target ≥ {goals.goal_text(dense)}× dense, ≥ {goals.goal_text(causal)}× causal |",
            "|---|---|---:|---:|---:|---|"]
    for keys, shape in ((D128, SHAPE[D128]), (N16K, SHAPE[N16K])):
        for c in (0, 1):
            k8, kb = ("fp8", f"{keys}/causal={c}"), (best, f"{keys}/causal={c}")
            f8, bf = rows.get(k8), rows.get(kb)
            r = ratio(f8, bf)
            met = judged(targets, FP8_KEY[(keys, c)], r, goals.spread_of(rng(k8), rng(kb)))
            cell = "—" if met is None else ("met" if met[0] == "met" else
                                           f"**missed** by {goals.number(goal(targets, FP8_KEY[(keys, c)]) - r)}"
                                           if met[0] == "missed" else met[1])
            out.append(f"| {shape} | {'yes' if c else 'no'} | {fmt(f8)} | {fmt(bf)} | {fmt(r, 2)}× | {cell} |")
    g8, g16 = anchors.get(("cuBLAS fp8 e4m3", "8192^3", None)), anchors.get(("cuBLAS bf16", "8192^3", None))
    if g8 and g16:
        out.append(f"\nFor scale: cuBLAS's 8192³ GEMM in the same anchor run, fp8 {g8:.0f} vs bf16 {g16:.0f} "
                   f"TFLOP/s = {g8 / g16:.2f}× — the most FP8 buys where nothing but the tensor cores works.")
    out.append("\nA target is met *within noise* when it is met by less than the spread between the repetitions "
               "of the rows it divides (results/targets.json, scripts/targets.py).")
    out.append("\n" + provenance(context))
    return "\n".join(out)


def provenance(context):
    return (f"Measured on {context.get('gpu', 'an unknown GPU')}, {context.get('date', 'unknown date')}, "
            f"commit {context.get('git_commit', 'unknown')}; cuDNN and flash: PyTorch SDPA (scripts/anchors/torch_anchors.py) "
            f"in the same GPU session.")


def fp8_steps_block(rows, targets):
    cols = [(D128, 0), (D128, 1), (N16K, 0), (N16K, 1), (GQA, 1)]
    out = ["| FP8 step | the idea | d128 dense | d128 causal | N16k dense | N16k causal | GQA causal | "
           "vs `tune:fp8_keys128` (d128 dense / causal) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    base = [rows.get(("tune:fp8_keys128", f"{k}/causal={c}")) for k, c in cols]
    for variant, what in FP8_STEPS:
        vals = [rows.get((variant, f"{k}/causal={c}")) for k, c in cols]
        if all(v is None for v in vals):
            continue
        gain = " / ".join("—" if r is None else f"{r:.2f}×" for r in (ratio(vals[0], base[0]), ratio(vals[1], base[1])))
        out.append(f"| `{variant}` | {what} | " + " | ".join(fmt(v) for v in vals) + f" | {gain} |")
    f8, bf = rows.get(("fp8", f"{D128}/causal=0")), rows.get(("fwd", f"{D128}/causal=0"))
    out += ["", "TFLOP/s (FA convention, halved when causal), median of the benchmark's repetitions. Targets at "
            f"B4 H16 N4096 d128: FP8 ≥ {goals.goal_text(goal(targets, 'fp8_tflops'))} TFLOP/s and ≥ "
            f"{goals.goal_text(goal(targets, FP8_KEY[(D128, 0)]))}× the bf16 `fwd` dense "
            f"(≥ {goals.goal_text(goal(targets, FP8_KEY[(D128, 1)]))}× "
            f"causal); here `fp8` dense reads {fmt(f8)} TFLOP/s, {fmt(ratio(f8, bf), 2)}× `fwd`'s {fmt(bf)}."]
    return "\n".join(out)


def fp8_block(rows, ncu, targets):
    f8, bf = rows.get(("fp8", f"{D128}/causal=0")), rows.get(("fwd", f"{D128}/causal=0"))
    a, b = ncu.get("intrawg"), ncu.get("fp8")
    out = [f"At B4 H16 N4096 d128 (dense) FP8 runs at {fmt(f8)} TFLOP/s, {fmt(ratio(f8, bf), 2)}× the bf16 "
           f"kernel's {fmt(bf)} (target {goals.goal_text(goal(targets, FP8_KEY[(D128, 0)]))}×)."]
    if a and b:
        out += ["", "| ncu, one launch, boost clock | bf16 (`intrawg`) | fp8 (`B_c` = 128) |", "|---|---:|---:|"]
        for label, k, nd in (("duration (µs)", "duration_ms", 0), ("tensor pipe active (%)", "tensor", 1),
                             ("issue slots busy (%)", "issue", 1), ("XU (MUFU: exp2, converts) issued (%)", "xu", 1),
                             ("shared-memory wavefronts (% of peak)", "smem", 1),
                             ("warp cycles per issued instruction", "cpi", 2)):
            va, vb = a[k], b[k]
            if k == "duration_ms":
                va, vb = (None if va is None else va * 1000), (None if vb is None else vb * 1000)
            out.append(f"| {label} | {fmt(va, nd)} | {fmt(vb, nd)} |")
        out.append("| top stalls (cycles per instruction) | " +
                   " | ".join(", ".join(f"{k} {v:.2f}" for v, k in n["stalls"]) or "—" for n in (a, b)) + " |")
        if a["duration_ms"] and b["duration_ms"] and a["tensor"] and b["tensor"]:
            busy_a, busy_b = a["duration_ms"] * a["tensor"], b["duration_ms"] * b["tensor"]
            out.append(f"\nTensor-pipe busy time, fp8 / bf16: {busy_b / busy_a:.2f} (0.50 if a busy cycle does twice "
                       f"the work in FP8); the time the pipe sits idle: bf16 {a['duration_ms'] * (100 - a['tensor']) * 10:.0f} µs, "
                       f"fp8 {b['duration_ms'] * (100 - b['tensor']) * 10:.0f} µs.")
    return "\n".join(out)


def fp8_d256_block(rows, row_context):
    context = {}
    out = ["| shape | causal | `fp8` (persistent) | `tune:fp8_keys128` (intra-warpgroup) | cuDNN FP8 | cuDNN bf16 | "
           "`fp8` / cuDNN FP8 | `fp8` / cuDNN bf16 |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for keys, shape in D256.items():
        for c in (0, 1):
            k = f"{keys}/causal={c}"
            f8, iw = rows.get(("fp8", k)), rows.get(("tune:fp8_keys128", k))
            c8, cb = rows.get(("anchor:cudnn/fp8", k)), rows.get(("anchor:cudnn/fwd", k))
            if all(v is None for v in (f8, iw, c8, cb)):
                continue
            context = context or row_context.get(("fp8", k), {})  # the run these rows come from
            out.append(f"| {shape} | {'yes' if c else 'no'} | {fmt(f8)} | {fmt(iw)} | {fmt(c8)} | {fmt(cb)} | "
                       f"{fmt(ratio(f8, c8), 2)}× | {fmt(ratio(f8, cb), 2)}× |")
    out += ["", "TFLOP/s (FA convention, halved when causal), median of the benchmark's repetitions; cuDNN's "
            "attention called from the benchmark (C++, the cuDNN frontend), FP8 on the same inputs quantised per "
            "tensor. " + provenance(context).split(";")[0] + "."]
    return "\n".join(out)


def replace_block(text, name, body):
    start, end = f"<!-- results:12_fa3_hopper:{name} -->", f"<!-- /results:12_fa3_hopper:{name} -->"
    if start not in text or end not in text:
        sys.exit(f"step_table.py: README has no {start} ... {end}")
    head, rest = text.split(start, 1)
    return head + start + "\n" + body + "\n" + end + rest.split(end, 1)[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", metavar="FILE",
                    help="BENCH_JSON [BENCH_JSON...] ANCHORS2_JSON [ncu_<variant>.log ...]")
    ap.add_argument("--readme", help="the README whose blocks receive the tables")
    ap.add_argument("--blocks", help="comma-separated block names to print and write (default: all)")
    ap.add_argument("--targets", default=str(goals.PATH), help="the targets file (default: results/targets.json)")
    publish.add_flag(ap)
    args = ap.parse_args()
    for f in args.files:
        if not Path(f).is_file():
            ap.error(f"{f}: no such file")
    readme = publish.destination(args.readme, args.publish) if args.readme else None
    ncu_files = [a for a in args.files if Path(a).name.startswith("ncu_")]
    jsons = [a for a in args.files if a not in ncu_files]
    if len(jsons) < 2:
        ap.error("needs at least one BENCH_JSON and the ANCHORS2_JSON")
    rows, spread, context, row_context, samples = load_bench(jsons[:-1])
    anchors = load_anchors(jsons[-1])
    targets = goals.load(args.targets)
    ncu = {}
    for f in ncu_files:
        n = load_ncu(f)
        if n["duration_ms"] is not None:
            ncu[Path(f).stem[len("ncu_"):]] = n
    blocks = {"steps": steps_block(rows, spread, ncu),
              "anchors": anchors_block(rows, anchors, context, samples, targets),
              "fp8steps": fp8_steps_block(rows, targets), "fp8": fp8_block(rows, ncu, targets),
              "fp8d256": fp8_d256_block(rows, row_context)}
    if args.blocks:
        unknown = set(args.blocks.split(",")) - set(blocks)
        if unknown:
            ap.error(f"--blocks: no block {', '.join(sorted(unknown))} (there are {', '.join(blocks)})")
        blocks = {k: v for k, v in blocks.items() if k in args.blocks.split(",")}
    for name, body in blocks.items():
        print(f"## {name}\n{body}\n")
    if readme:
        text = Path(readme).read_text()
        for name, body in blocks.items():
            text = replace_block(text, name, body)
        Path(readme).write_text(text)


if __name__ == "__main__":
    main()
