#!/usr/bin/env python3
"""The companion's kernels timed beside PyTorch in the same run, with the ladder's method (GPU only).

    python3 triton/bench.py                          # every row; writes build/triton/bench.json
    python3 triton/bench.py --only attention --out my.json

Rows (ours first, then PyTorch's at the same shape and inputs, in that order everywhere):
  softmax    softmax.py vs torch.softmax, fp32, rows of 1024 .. 16384 columns (chapter 04)     GB/s
  matmul     matmul.py, every configuration of matmul.CONFIGS, vs cuBLAS (torch.mm) at 4096^3 in
             bf16 (fp16 on a T4) and at 2048^3 in fp32 with TF32 off (chapters 03 and 09)   TFLOP/s
  attention  attention.py forward and backward vs scaled_dot_product_attention (PyTorch's choice
             of backend) in bf16 (fp16 on a T4): B4 H16 N4096 d64 and d128, dense and causal, and
             GQA 32:8 at d128 causal (chapters 06, 07, 10)                                    TFLOP/s
Timing: the method of common/timing.h (ladder::time_gpu), as scripts/anchors/torch_anchors.py does it:
a warm-up of at least LADDER_WARMUP_MS (default 1000) ms and two runs, then 30 repeats (--repeats), each
after an L2 flush (a write of twice the L2), CUDA events around the work only, all queued before the
host waits; the median, with p10 and p90. FLOPs: 2MNK; attention 4 B H N^2 d, half of it causal, the
backward 2.5x the forward. Inputs uniform in [-1, 1), as the chapters' benchmarks draw theirs.
Without a CUDA GPU it refuses (exit status 2): run the tests under TRITON_INTERPRET=1 instead.
"""
import argparse
import datetime
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

REPEATS, MIN_WARMUP_RUNS, MAX_BATCH = 30, 2, 1000
SOFTMAX_SHAPES = [(16384, 1024), (4096, 4096), (1024, 16384)]
ATTENTION_SHAPES = [(4, 16, 16, 4096, 64, False), (4, 16, 16, 4096, 64, True), (4, 16, 16, 4096, 128, False),
                    (4, 16, 16, 4096, 128, True), (4, 32, 8, 4096, 128, True)]  # B, H, H_kv, N, d, causal


def warmup_ms():
    text = os.environ.get("LADDER_WARMUP_MS", "")
    try:
        return float(text) if text else 1000.0
    except ValueError:
        sys.exit(f"bench.py: LADDER_WARMUP_MS must be a number of milliseconds, got '{text}'")


class Timer:
    """ladder::time_gpu (common/timing.cpp) on PyTorch's current stream."""

    def __init__(self, torch, warmup, repeats):
        self.torch, self.warmup, self.repeats = torch, warmup, repeats
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20)
        self.scratch = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def time(self, fn):
        ms, runs, per_run = 0.0, 0, 0.0
        start, stop = self.event(), self.event()
        while runs < MIN_WARMUP_RUNS or ms < self.warmup:  # 1. warm-up, no flushes
            batch = 1
            if runs > 0:
                batch = min(max(math.ceil((self.warmup - ms) / per_run), 1), MAX_BATCH) if per_run > 0 else 1
                batch = max(batch, MIN_WARMUP_RUNS - runs)
            start.record()
            for _ in range(batch):
                fn()
            stop.record()
            stop.synchronize()
            t = start.elapsed_time(stop)
            ms, runs, per_run = ms + t, runs + batch, t / batch
        starts = [self.event() for _ in range(self.repeats)]
        stops = [self.event() for _ in range(self.repeats)]
        for a, b in zip(starts, stops):  # 2. repeats, each after an L2 flush outside the events
            self.scratch.zero_()
            a.record()
            fn()
            b.record()
        stops[-1].synchronize()
        t = sorted(a.elapsed_time(b) for a, b in zip(starts, stops))
        n = len(t)
        at = lambda q: t[int(q * (n - 1) + 0.5)]  # noqa: E731
        median = t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])  # 3. the median
        return dict(ms=round(median, 5), p10=round(at(0.1), 5), p90=round(at(0.9), 5), n=n,
                    warmup_ms=round(ms, 1), warmup_runs=runs)


def with_rate(m, unit, amount):
    return dict(m, **{unit: round(amount / (m["ms"] * 1e-3) / (1e12 if unit == "tflops" else 1e9), 1)})


def measure(timer, fn, unit, amount):
    try:
        return with_rate(timer.time(fn), unit, amount)
    except Exception as e:  # no kernel for this shape on this GPU, out of memory: a row that says so
        return {"error": (str(e).strip().splitlines() or [type(e).__name__])[0][:300]}


def rand(torch, shape, dtype, requires_grad=False):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1).to(dtype).requires_grad_(requires_grad)


def bench_softmax(torch, timer, add):
    import softmax as S
    for R, C in SOFTMAX_SHAPES:
        x = rand(torch, (R, C), torch.float32)
        err = (S.softmax(x) - torch.softmax(x, 1)).abs().max().item()
        for impl, fn in (("triton softmax.py", lambda: S.softmax(x)), ("torch.softmax", lambda: torch.softmax(x, 1))):
            add(dict(kind="softmax", impl=impl, shape=f"{R}x{C} fp32", max_diff_vs_torch=err,
                     **measure(timer, fn, "gbps", 2 * R * C * 4)))


def bench_matmul(torch, timer, add, lowp, lowp_name):
    import matmul as MM
    torch.backends.cuda.matmul.allow_tf32 = False  # cuBLAS fp32 as chapter 03's SGEMM: no TF32
    for n, dtype, name in ((4096, lowp, lowp_name), (2048, torch.float32, "fp32")):
        a, b = rand(torch, (n, n), dtype), rand(torch, (n, n), dtype)
        ref = torch.mm(a, b)
        for cfg in MM.CONFIGS:
            err = (MM.matmul(a, b, cfg).float() - ref.float()).abs().max().item()
            add(dict(kind="matmul", impl="triton " + MM.name(cfg), shape=f"{n}^3 {name}", max_diff_vs_torch=err,
                     config=cfg, **measure(timer, lambda: MM.matmul(a, b, cfg), "tflops", 2.0 * n ** 3)))
        add(dict(kind="matmul", impl="cuBLAS torch.mm", shape=f"{n}^3 {name}",
                 **measure(timer, lambda: torch.mm(a, b), "tflops", 2.0 * n ** 3)))


def bench_attention(torch, timer, add, dtype, dtype_name):
    import attention as A
    F = torch.nn.functional
    for B, H, H_kv, N, d, causal in ATTENTION_SHAPES:
        shape = f"B{B} H{H} Hkv{H_kv} N{N} d{d} {'causal' if causal else 'dense'} {dtype_name}"
        flops = 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
        q = rand(torch, (B, H, N, d), dtype, True)
        k, v = rand(torch, (B, H_kv, N, d), dtype, True), rand(torch, (B, H_kv, N, d), dtype, True)
        do = rand(torch, (B, H, N, d), dtype)
        kw = dict(is_causal=causal, enable_gqa=H != H_kv)
        ours = lambda: A.attention(q, k, v, causal)  # noqa: E731
        sdpa = lambda: F.scaled_dot_product_attention(q, k, v, **kw)  # noqa: E731
        try:
            err = (ours() - sdpa()).abs().max().item()
        except Exception as e:
            err = "error: " + str(e).splitlines()[0][:200]
        for impl, fn in (("triton attention.py", ours), ("sdpa", sdpa)):
            fwd = measure(timer, fn, "tflops", flops)  # as in training: inputs need gradients, L is saved
            try:
                o = fn()
                bwd = measure(timer, lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True), "tflops",
                              2.5 * flops)
            except Exception as e:
                bwd = {"error": str(e).splitlines()[0][:300]}
            add(dict(kind="attention", impl=impl, shape=shape, max_diff_vs_sdpa=err,
                     **{"fwd_" + k2: v2 for k2, v2 in fwd.items()}, **{"bwd_" + k2: v2 for k2, v2 in bwd.items()}))
            o = None
        q = k = v = do = None
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated: softmax, matmul, attention (default: all)")
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument("--out", default=os.path.join("build", "triton", "bench.json"))
    args = ap.parse_args()
    groups = args.only.split(",") if args.only else ["softmax", "matmul", "attention"]
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("bench.py times the GPU: unset TRITON_INTERPRET (the interpreter's times mean nothing)", file=sys.stderr)
        return 2
    try:
        import torch
        import triton
    except ImportError as e:
        print(f"bench.py needs PyTorch and Triton ({e}); the C++ ladder does not", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench.py needs a CUDA GPU (torch.cuda.is_available() is False). Without one, run the tests in "
              "Triton's interpreter: TRITON_INTERPRET=1 python3 -m pytest -q triton/tests", file=sys.stderr)
        return 2
    cap = torch.cuda.get_device_capability()
    lowp, lowp_name = (torch.bfloat16, "bf16") if cap[0] >= 8 else (torch.float16, "fp16")  # a T4: fp16
    timer = Timer(torch, warmup_ms(), args.repeats)
    meta = dict(kind="meta", gpu=torch.cuda.get_device_name(), capability=f"sm_{cap[0]}{cap[1]}",
                torch=torch.__version__, triton=triton.__version__, cuda=torch.version.cuda,
                date=datetime.datetime.now().isoformat(timespec="seconds"),
                method=f"warm-up >= {timer.warmup:g} ms and {MIN_WARMUP_RUNS} runs; {args.repeats} repeats, each "
                       "after an L2 flush (2x L2 written); CUDA events around the work; median (p10, p90)")
    records = [meta]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    def add(rec):
        records.append(rec)
        with open(args.out, "w") as f:  # rewritten after every row: a run stopped early keeps what it measured
            json.dump(records, f, indent=1)
        figs = [f"{k} {rec[k]}" for k in ("ms", "gbps", "tflops", "fwd_ms", "fwd_tflops", "bwd_ms", "bwd_tflops",
                                           "error", "fwd_error", "bwd_error") if k in rec]
        print(f"{rec['kind']:9} {rec['impl']:32} {rec['shape']:40} " + ", ".join(figs), flush=True)

    if "softmax" in groups:
        bench_softmax(torch, timer, add)
    if "matmul" in groups:
        bench_matmul(torch, timer, add, lowp, lowp_name)
    if "attention" in groups:
        bench_attention(torch, timer, add, lowp, lowp_name)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
