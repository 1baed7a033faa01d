#!/usr/bin/env python3
"""The chapter's figures in the ladder's formats, from run_model.sh's JSON:

    python3 16_attention_in_a_model/report.py MODEL_DIR BENCH_DIR

BENCH_DIR/16_attention_in_a_model.json   one row per (implementation, what, shape) in Google
                                         Benchmark's JSON (variant/key=value names, "tok/s", "ms"),
                                         so that scripts/results.py tabulates it as any chapter's
BENCH_DIR/16_attention_in_a_model.summary.json
                                         train_vs_sdpa_cudnn (tokens/s at T = 8192), val_loss_rel_diff
                                         (|ladder - SDPA cuDNN| / SDPA cuDNN, final validation loss,
                                         same seed), decode_vs_sdpa (tokens/s at batch 32 on the 32K
                                         cache, over the fastest SDPA backend that ran)
MODEL_DIR/report.md                      what the tokens/s table leaves out: per training run its
                                         peak memory, final validation loss and attention's share
                                         of the GPU time; the greedy samples' agreement
stdout                                   the summary line, PASS or FAIL first: PASS when every run
                                         trained to a finite loss and the ladder's final validation
                                         loss is within the spread of two SDPA seeds
"""
import argparse
import json
import pathlib


def load(path):
    return json.loads(path.read_text()) if path.exists() else None


def runs(doc):
    return {r["attn"]: r for r in (doc or {}).get("runs", [])}


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def markdown(docs, gen):
    """report.md: the training runs' other columns, and how the greedy continuations compare."""
    lines = ["| run | attention | tokens/s | peak memory (GiB) | final val loss | attention's share of GPU time |",
             "|---|---|---:|---:|---:|---:|"]
    for label, doc in docs:
        for attn, r in runs(doc).items():
            share = (r.get("profile") or {}).get("attention_share_of_gpu_time")
            peak = r.get("peak_memory_bytes")
            lines.append(f"| {label} | `{attn}` | {fmt(r['tokens_per_s'], '.0f')} | "
                         f"{fmt(peak / 2**30 if peak else None, '.2f')} | {fmt(r['final_val_loss'], '.4f')} | "
                         f"{fmt(share, '.2f')} |")
    for a in (gen or {}).get("agreement", []):
        lines.append("")
        lines.append(f"Greedy continuation, `{a['attn']}` against `{a['reference']}`: " +
                     ("identical." if a["identical"] else f"the first {a['first_difference']} new tokens agree."))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir", metavar="MODEL_DIR", type=pathlib.Path,
                    help="run_model.sh's OUTDIR/model: train_T8192.json, train_T8192_seed2.json, train_T2048.json, "
                         "generate.json (those there); report.md is written here")
    ap.add_argument("bench_dir", metavar="BENCH_DIR", type=pathlib.Path,
                    help="where 16_attention_in_a_model.json and 16_attention_in_a_model.summary.json go "
                         "(an existing directory)")
    args = ap.parse_args()
    model, bench = args.model_dir, args.bench_dir
    for name, d in (("MODEL_DIR", model), ("BENCH_DIR", bench)):
        if not d.is_dir():
            ap.error(f"{name} {d} is not a directory")
    long_, seed2 = load(model / "train_T8192.json"), load(model / "train_T8192_seed2.json")
    short, gen = load(model / "train_T2048.json"), load(model / "generate.json")
    first = next((d for d in (long_, short, gen) if d), None)
    if first is None:
        ap.error(f"MODEL_DIR {model} holds none of train_T8192.json, train_T2048.json, generate.json "
                 "(16_attention_in_a_model/run_model.sh writes them)")
    rows = []
    for doc in (long_, short):
        if not doc:
            continue
        c = doc["config"]
        for attn, r in runs(doc).items():
            if r["tokens_per_s"]:
                rows.append({"name": f"{attn}/step=train/T={c['seq']}/B={c['batch']}/d={c['head_dim']}",
                             "tok/s": r["tokens_per_s"], "ms": r["step_ms"]["median"],
                             "p10_ms": r["step_ms"]["p10"], "p90_ms": r["step_ms"]["p90"]})
    for case in (gen or {}).get("decode", []):
        name = f"{case['attn']}/step=decode/N_kv={case['cache_len']}/B={case['batch']}"
        if case.get("error"):
            rows.append({"name": name, "error_occurred": True, "error_message": case["error"][:120]})
        else:
            rows.append({"name": name, "tok/s": case["tokens_per_s"], "ms": case["step_ms"]["median"],
                         "p10_ms": case["step_ms"]["p10"], "p90_ms": case["step_ms"]["p90"]})
    for r in rows:
        r.update(run_name=r["name"], run_type="iteration", iterations=1, time_unit="ms", real_time=r.get("ms", 0))
    context = {"date": first["date"], "git_commit": first.get("commit") or "unknown", "gpu": first.get("gpu_line")
               or first.get("gpu"), "timing": first.get("timing"),
               "executable": "16_attention_in_a_model/run_model.sh (train.py, generate.py)"}
    (bench / "16_attention_in_a_model.json").write_text(json.dumps({"context": context, "benchmarks": rows}, indent=1))
    docs = [(f"T={d['config']['seq']} B={d['config']['batch']}" + (", seed 2" if d is seed2 else ""), d)
            for d in (long_, seed2, short) if d]
    (model / "report.md").write_text(markdown(docs, gen))

    summary, words, ok = {}, [], True
    t = runs(long_)
    ok &= "ladder" in t and "sdpa_cudnn" in t
    if ok:
        ours, theirs = t["ladder"], t["sdpa_cudnn"]
        summary["train_vs_sdpa_cudnn"] = round(ours["tokens_per_s"] / theirs["tokens_per_s"], 3)
        a, b = ours["final_val_loss"], theirs["final_val_loss"]
        ok &= a is not None and b is not None
        if ok:
            summary["val_loss_rel_diff"] = round(abs(a - b) / b, 4)
            other = runs(seed2).get("sdpa_cudnn", {}).get("final_val_loss")
            spread = abs(other - b) if other is not None else None
            ok &= spread is not None and abs(a - b) <= spread
            words.append(f"GPT T={long_['config']['seq']} B={long_['config']['batch']}: train "
                         f"{ours['tokens_per_s']:.0f} tok/s = {summary['train_vs_sdpa_cudnn']:.2f}x SDPA cuDNN, "
                         f"val loss {a:.4f} vs {b:.4f} (seed spread {spread if spread is None else round(spread, 4)})")
    ok &= all(r["final_val_loss"] is not None for d in (long_, short, seed2) for r in runs(d).values())
    done = [c for c in (gen or {}).get("decode", []) if not c.get("error") and c["batch"] == 32]
    ladder = [c for c in done if c["attn"] == "ladder"]
    sdpa = [c for c in done if c["attn"].startswith("sdpa")]
    if ladder and sdpa:
        best = max(sdpa, key=lambda c: c["tokens_per_s"])
        summary["decode_vs_sdpa"] = round(ladder[0]["tokens_per_s"] / best["tokens_per_s"], 3)
        words.append(f"decode B=32 N_kv={best['cache_len']} {ladder[0]['tokens_per_s']:.0f} tok/s = "
                     f"{summary['decode_vs_sdpa']:.2f}x SDPA ({best['attn']})")
    (bench / "16_attention_in_a_model.summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(("PASS " if ok else "FAIL ") + "; ".join(words))


if __name__ == "__main__":
    main()
