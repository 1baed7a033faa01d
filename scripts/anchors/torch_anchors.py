#!/usr/bin/env python3
"""The project's PyTorch anchors: what PyTorch (cuBLAS, cuDNN, FlashAttention, PyTorch's own
kernels) reaches on this GPU at the shapes the chapters' benchmarks publish, measured in the
same GPU run as those benchmarks (scripts/gpu_check.sh, stage `anchors`).

    scripts/anchors/torch_anchors.py OUT_DIR [--only GROUP,...] [--repeats R] [--list] [--flex-text FILE]

Writes OUT_DIR/anchors.json and OUT_DIR/anchors2.json: lists of records, the first of each a
{"kind": "meta"} record (PyTorch, CUDA, cuDNN, GPU, date, method), rewritten after every
measurement so a run stopped early keeps what it measured. GROUP and what it measures (the
shapes are those of the benchmark named):
  copy       torch.copy_ and torch.add, fp32, n = 2^20 .. 2^28        (01 bench_vector_add)
             -> anchors.json {"kind": "copy"|"vector_add", "shape": "n=<n> fp32", "ms", "gbps"}
  softmax    torch.softmax over rows, fp32, the five R x C of 04      (04 bench_softmax)
             -> anchors.json {"kind": "softmax", "shape": "<R>x<C>", "ms", "gbps"}
  gemm       cuBLAS through torch.mm: fp32 (TF32 off) and tf32 at 1024^3, 4096^3, 4093^3
             (02, 03); bf16 (fp32 accumulation, B stored as B^T as in 09) at 4096^3, 8192^3
             and 4093x4095x4097 (09)
             -> anchors.json {"kind": "gemm", "impl": "cuBLAS fp32|tf32|bf16", "shape": "<n>^3"
                or "<M>x<N>x<K>", "ms", "tflops"}; bf16 at 4096^3 and 8192^3 also in anchors2.json
  gemm_fp8   torch._scaled_mm, e4m3 x e4m3 -> bf16, per-tensor scales, 4096^3 and 8192^3 (12)
             -> anchors2.json {"kind": "gemm", "impl": "cuBLAS fp8 e4m3", ...}
  attn_fp32  scaled_dot_product_attention, fp32, memory-efficient backend (the one PyTorch has
             for fp32), forward and backward, B = 16384/N, H = 16, N = 512 .. 16384, d = 64 and
             128, dense and causal (05, 06, 07)
             -> anchors.json {"kind": "attn_fwd"|"attn_bwd", "impl": "sdpa-efficient float32",
                "shape": "B<B> H16 N<N> d<d> causal=<True|False>", "ms", "tflops"}
  sdpa       scaled_dot_product_attention, bf16, each backend (flash, cudnn, efficient through
             torch.nn.attention.sdpa_kernel), forward and backward, B4 H16 N4096 d64 and d128,
             B1 H16 N16384 d128, dense and causal (10, 12)
             -> anchors2.json {"kind": "sdpa_bf16", "impl", "shape": "B4 H16 N4096 d128",
                "causal", "fwd_ms", "bwd_ms", "fwd_tflops", "bwd_tflops"}
  gqa        the same, GQA 32:8 (enable_gqa=True), B4 N4096 d128 causal (10, 12)
             -> anchors2.json {"kind": "gqa_bf16", "impl", "shape": "B4 Hq32 Hkv8 N4096 d128
                causal", "ms", "tflops", "bwd_ms", "bwd_tflops"} (ms, tflops: forward)
  decode     one query per sequence against a long KV cache, bf16, B8 Hq32 Hkv8 d128,
             N_kv = 32768 and 131072, each backend (11 bench_flash_decoding)
             -> anchors2.json {"kind": "decode_bf16", "impl", "shape": "B8 Hq32 Hkv8 Nq1
                Nkv<N> d128", "ms", "gbps"} (GB/s: the K and V bytes read, as chapter 11 counts)
  flex       torch.nn.attention.flex_attention under torch.compile, bf16, forward and backward, the
             three masks of chapter 15 (15_attention_variants/cases.h): a causal sliding window of
             1024 (q - k <= 1024) at B2 H16 N8192, seven causal documents of the chapter's lengths
             at B1 H16 N16384, softcap 50 (50 tanh(s / 50)) on causal at B4 H16 N4096; d = 128;
             the block mask from create_block_mask (128 x 128 tiles, as the chapter's)
             -> anchors2.json {"kind": "flex_bf16", "impl": "flex_attention", "case", "shape",
                "fwd_ms", "bwd_ms", "fwd_tflops", "bwd_tflops"}; useful TFLOP/s: 4 d FLOPs per
                visible (query, key) pair and head, backward 2.5x; with --flex-text FILE also
                lines `case fwd|bwd TFLOP/s` for the chapter's executable (--flex FILE)
A measurement that fails (no kernel for that backend and shape, out of memory) is a record
with "error" in place of its figures. Every record also has p10/p90 and n of its repeats.

Inputs are uniform in [-1, 1), as the chapters' benchmarks draw theirs (ladder::bench_input): the
values set the power a kernel draws and so its clock (cuDNN's attention runs measurably faster on
them than on normal ones), so an anchor is fed what the kernel it anchors is fed.
Conventions, those of common/work.h: GEMM 2MNK FLOPs; attention 4 B H N N_kv d forward, half
of it causal, backward 2.5x; GB/s counts each tensor read or written once. The forward is
timed as in training (inputs that need gradients, so the row statistics are saved, as the
chapters' kernels write L); the backward is torch.autograd.grad of that forward (no
accumulation into .grad); decode is timed as inference (torch.no_grad()).

Timing: the method of common/timing.h (ladder::time_gpu), in Python:
  1. warm-up: the op back to back, without flushes, until at least W ms of device time and at
     least two runs have passed (W: LADDER_WARMUP_MS, default 1000), so clocks are where
     sustained load keeps them;
  2. R repeats (default 30; --repeats), each after an L2 flush (a write of a buffer twice the
     L2), CUDA events around the op only, all queued before the host waits;
  3. the median (p10, p90, n).
Needs PyTorch with CUDA (2.11 on the H200); --help and --list need neither.
"""
import argparse
import datetime
import json
import math
import os
import pathlib
import sys

WARMUP_MS = 1000.0  # common/timing.h kDefaultWarmupMs
REPEATS = 30  # kDefaultRepeats
MIN_WARMUP_RUNS = 2  # kMinWarmupRuns
MAX_BATCH = 4096

# The shapes, from the chapters' bench_*.cpp.
COPY_N = [1 << k for k in range(20, 29, 2)]  # 01
SOFTMAX_RC = [(8192, 8192), (32768, 4096), (4096, 32768), (262144, 128), (2048, 65536)]  # 04
GEMM_FP32 = [(1024,) * 3, (4096,) * 3, (4093,) * 3]  # 02, 03
GEMM_BF16 = [(4096,) * 3, (8192,) * 3, (4093, 4095, 4097)]  # 09
GEMM_FP8 = [(4096,) * 3, (8192,) * 3]  # 12 (beside cuBLAS bf16 at the same shapes)
ATTN_FP32 = [(16384 // n, 16, n, d, c) for d in (64, 128) for n in (512, 1024, 2048, 4096, 8192, 16384)
             for c in (False, True)]  # 05, 06, 07: B = 16384 / N
SDPA = [(b, 16, n, d, c) for c in (False, True) for (b, n, d) in ((4, 4096, 64), (4, 4096, 128), (1, 16384, 128))]
GQA = (4, 32, 8, 4096, 128)  # B, Hq, Hkv, N, d; causal
DECODE = [(8, 32, 8, n, 128) for n in (32768, 131072)]  # B, Hq, Hkv, N_kv, d
# Chapter 15's cases (15_attention_variants/cases.h): name, B, H, N, d.
FLEX = [("window", 2, 16, 8192, 128), ("documents", 1, 16, 16384, 128), ("softcap", 4, 16, 4096, 128)]
FLEX_WINDOW, FLEX_CAP, FLEX_DOCUMENTS = 1024, 50.0, (7, 2024)  # window; cap; (count, seed) of the lengths


def document_lengths(N, count, seed):
    """cases.h's document_lengths: count - 1 cuts from a 32-bit LCG, sorted."""
    cuts = [0, N]
    for _ in range(1, count):
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        cuts.append((seed >> 8) % (N - 1) + 1)
    cuts.sort()
    return [b - a for a, b in zip(cuts, cuts[1:])]
BACKENDS = ["flash", "cudnn", "efficient"]
GROUPS = ["copy", "softmax", "gemm", "gemm_fp8", "attn_fp32", "sdpa", "gqa", "decode", "flex"]


def gemm_shape(s):
    return f"{s[0]}^3" if s[0] == s[1] == s[2] else f"{s[0]}x{s[1]}x{s[2]}"


def plan(groups):
    """What each group measures, one line per measurement (no PyTorch needed)."""
    lines = []
    for g in groups:
        if g == "copy":
            lines += [f"copy       {k} n={n} fp32" for n in COPY_N for k in ("copy", "vector_add")]
        elif g == "softmax":
            lines += [f"softmax    {r}x{c} fp32" for r, c in SOFTMAX_RC]
        elif g == "gemm":
            lines += [f"gemm       cuBLAS {p} {gemm_shape(s)}" for p in ("fp32", "tf32") for s in GEMM_FP32]
            lines += [f"gemm       cuBLAS bf16 {gemm_shape(s)}" for s in GEMM_BF16]
        elif g == "gemm_fp8":
            lines += [f"gemm_fp8   cuBLAS fp8 e4m3 {gemm_shape(s)}" for s in GEMM_FP8]
        elif g == "attn_fp32":
            lines += [f"attn_fp32  sdpa-efficient float32 fwd+bwd B{b} H{h} N{n} d{d} causal={c}"
                      for b, h, n, d, c in ATTN_FP32]
        elif g == "sdpa":
            lines += [f"sdpa       {k} bf16 fwd+bwd B{b} H{h} N{n} d{d} causal={c}"
                      for b, h, n, d, c in SDPA for k in BACKENDS]
        elif g == "gqa":
            lines += [f"gqa        {k} bf16 fwd+bwd B{GQA[0]} Hq{GQA[1]} Hkv{GQA[2]} N{GQA[3]} d{GQA[4]} causal"
                      for k in BACKENDS]
        elif g == "decode":
            lines += [f"decode     {k} bf16 B{b} Hq{hq} Hkv{hkv} Nq1 Nkv{n} d{d}" for b, hq, hkv, n, d in DECODE
                      for k in BACKENDS]
        elif g == "flex":
            lines += [f"flex       flex_attention (torch.compile) bf16 fwd+bwd {name} B{b} H{h} N{n} d{d}"
                      for name, b, h, n, d in FLEX]
    return lines


def warmup_ms():
    text = os.environ.get("LADDER_WARMUP_MS", "")
    if not text:
        return WARMUP_MS
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not (0 <= v <= 600000):
        print(f"torch_anchors: LADDER_WARMUP_MS must be a number of milliseconds in [0, 600000], got '{text}'",
              file=sys.stderr)
        sys.exit(2)
    return v


class Timer:
    """ladder::time_gpu (common/timing.cpp) on PyTorch's current stream."""

    def __init__(self, torch, warmup, repeats):
        self.torch, self.warmup, self.repeats = torch, warmup, repeats
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20)
        self.scratch = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def warm_up(self, fn):
        ms, runs, per_run = 0.0, 0, 0.0
        start, stop = self.event(), self.event()
        while runs < MIN_WARMUP_RUNS or ms < self.warmup:
            batch = 1  # the first run pays the one-time costs; later batches aim at what is left of W
            if runs > 0:
                if per_run > 0:
                    batch = min(max(math.ceil((self.warmup - ms) / per_run), 1), MAX_BATCH)
                batch = max(batch, MIN_WARMUP_RUNS - runs)
            start.record()
            for _ in range(batch):
                fn()
            stop.record()
            stop.synchronize()
            t = start.elapsed_time(stop)
            ms, runs, per_run = ms + t, runs + batch, t / batch
        return ms, runs

    def time(self, fn):
        w_ms, w_runs = self.warm_up(fn)
        starts = [self.event() for _ in range(self.repeats)]
        stops = [self.event() for _ in range(self.repeats)]
        for a, b in zip(starts, stops):
            self.scratch.zero_()  # the L2 flush, outside the events
            a.record()
            fn()
            b.record()
        stops[-1].synchronize()
        t = sorted(a.elapsed_time(b) for a, b in zip(starts, stops))
        n = len(t)
        at = lambda q: t[int(q * (n - 1) + 0.5)]  # noqa: E731 (the percentiles of ladder::summarise)
        median = t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])
        return dict(ms=median, p10=at(0.1), p90=at(0.9), n=n, warmup_ms=w_ms, warmup_runs=w_runs)


def short(err):
    lines = str(err).strip().splitlines()
    return (lines[0] if lines else type(err).__name__)[:300]


class Anchors:
    """Measures the groups asked for and keeps both files up to date."""

    def __init__(self, torch, out_dir, timer, meta):
        self.torch, self.timer = torch, timer
        self.files = {"anchors.json": [dict(meta)], "anchors2.json": [dict(meta)]}
        self.out_dir = out_dir
        self.F = torch.nn.functional
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.sdpa_kernel = sdpa_kernel
        self.backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION}

    def add(self, record, *files):
        for f in files:
            self.files[f].append(record)
            (self.out_dir / f).write_text(json.dumps(self.files[f], indent=1) + "\n")
        text = {k: v for k, v in record.items() if k not in ("kind",)}
        print(f"{record['kind']:12s} {json.dumps(text)}", flush=True)

    def measure(self, fn):
        """{"ms", "p10_ms", "p90_ms", "n"} of fn, or {"error": ...}."""
        try:
            r = self.timer.time(fn)
        except Exception as e:  # no kernel for this backend and shape, out of memory, ...
            try:
                self.torch.cuda.synchronize()
                self.torch.cuda.empty_cache()
            except Exception:
                pass  # a CUDA error that sticks: the next measurements say so themselves
            return {"error": short(e)}
        return {"ms": round(r["ms"], 4), "p10_ms": round(r["p10"], 4), "p90_ms": round(r["p90"], 4), "n": r["n"]}

    def rand(self, shape, dtype, requires_grad=False):
        x = self.torch.empty(shape, dtype=self.torch.float32, device="cuda").uniform_(-1, 1).to(dtype)
        return x.requires_grad_(requires_grad)

    # ---- 01, 04: bandwidth
    def copy(self):
        for n in COPY_N:
            a, b, c = (self.rand((n,), self.torch.float32) for _ in range(3))
            m = self.measure(lambda: c.copy_(a))
            self.add(dict(kind="copy", impl="torch.copy_", shape=f"n={n} fp32", **rate(m, "gbps", 8.0 * n)),
                     "anchors.json")
            m = self.measure(lambda: self.torch.add(a, b, out=c))
            self.add(dict(kind="vector_add", impl="torch.add", shape=f"n={n} fp32", **rate(m, "gbps", 12.0 * n)),
                     "anchors.json")

    def softmax(self):
        for r, c in SOFTMAX_RC:
            x = self.rand((r, c), self.torch.float32)
            m = self.measure(lambda: self.torch.softmax(x, dim=-1))
            self.add(dict(kind="softmax", impl="torch.softmax fp32", shape=f"{r}x{c}", **rate(m, "gbps", 8.0 * r * c)),
                     "anchors.json")

    # ---- 02, 03, 09, 12: GEMM
    def gemm(self):
        torch = self.torch
        for precision, name in (("highest", "cuBLAS fp32"), ("high", "cuBLAS tf32")):
            torch.set_float32_matmul_precision(precision)
            for s in GEMM_FP32:
                M, N, K = s
                A, B, C = self.rand((M, K), torch.float32), self.rand((K, N), torch.float32), torch.empty(
                    (M, N), device="cuda")
                m = self.measure(lambda: torch.mm(A, B, out=C))
                self.add(dict(kind="gemm", impl=name, shape=gemm_shape(s), **rate(m, "tflops", 2.0 * M * N * K)),
                         "anchors.json")
        torch.set_float32_matmul_precision("highest")
        for s in GEMM_BF16:
            rec = dict(kind="gemm", impl="cuBLAS bf16", shape=gemm_shape(s), out_dtype="bfloat16",
                       **rate(self.bf16_gemm(s), "tflops", 2.0 * s[0] * s[1] * s[2]))
            self.add(rec, *(["anchors.json", "anchors2.json"] if s in GEMM_FP8 else ["anchors.json"]))

    def bf16_gemm(self, s):
        """A [M, K] @ (B^T [N, K])^T, fp32 accumulation (no reduced-precision reductions)."""
        torch = self.torch
        M, N, K = s
        A, Bt = self.rand((M, K), torch.bfloat16), self.rand((N, K), torch.bfloat16)
        C = torch.empty((M, N), dtype=torch.bfloat16, device="cuda")
        before = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        try:
            return self.measure(lambda: torch.mm(A, Bt.t(), out=C))
        finally:
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = before

    def gemm_fp8(self):
        torch = self.torch
        for s in GEMM_FP8:
            M, N, K = s
            # Per-tensor scaling as FP8 is used: each operand scaled so its largest value is
            # e4m3's largest (448), the scale carried to the output.
            a, bt = self.rand((M, K), torch.float32), self.rand((N, K), torch.float32)
            sa, sb = (x.abs().max() / 448.0 for x in (a, bt))
            A8, Bt8 = (a / sa).to(torch.float8_e4m3fn), (bt / sb).to(torch.float8_e4m3fn)
            a = bt = None  # the fp32 copies are not needed while timing
            m = self.measure(lambda: torch._scaled_mm(A8, Bt8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16))
            self.add(dict(kind="gemm", impl="cuBLAS fp8 e4m3", shape=gemm_shape(s), out_dtype="bfloat16",
                          **rate(m, "tflops", 2.0 * M * N * K)), "anchors2.json")
            if s not in GEMM_BF16:
                self.add(dict(kind="gemm", impl="cuBLAS bf16", shape=gemm_shape(s), out_dtype="bfloat16",
                              **rate(self.bf16_gemm(s), "tflops", 2.0 * M * N * K)), "anchors2.json")

    # ---- 05-07, 10, 12: attention
    def attention(self, backend, B, Hq, Hkv, N, d, causal, dtype):
        """(forward, backward) measurements of SDPA with one backend; K, V have Hkv heads."""
        torch = self.torch
        gqa = Hkv != Hq
        q = self.rand((B, Hq, N, d), dtype, True)
        k, v = self.rand((B, Hkv, N, d), dtype, True), self.rand((B, Hkv, N, d), dtype, True)
        do = self.rand((B, Hq, N, d), dtype)
        kw = dict(is_causal=causal, enable_gqa=True) if gqa else dict(is_causal=causal)
        with self.sdpa_kernel([self.backend[backend]]):
            fwd = self.measure(lambda: self.F.scaled_dot_product_attention(q, k, v, **kw))
            if "error" in fwd:
                return fwd, {"error": "no forward"}
            try:
                o = self.F.scaled_dot_product_attention(q, k, v, **kw)
            except Exception as e:
                return fwd, {"error": short(e)}
            bwd = self.measure(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
        return fwd, bwd

    def attn_fp32(self):
        torch = self.torch
        for B, H, N, d, c in ATTN_FP32:
            fwd, bwd = self.attention("efficient", B, H, H, N, d, c, torch.float32)
            flops = attention_flops(B, H, N, d, c)
            shape = f"B{B} H{H} N{N} d{d} causal={c}"
            self.add(dict(kind="attn_fwd", impl="sdpa-efficient float32", shape=shape, **rate(fwd, "tflops", flops)),
                     "anchors.json")
            self.add(dict(kind="attn_bwd", impl="sdpa-efficient float32", shape=shape,
                          **rate(bwd, "tflops", 2.5 * flops)), "anchors.json")
            torch.cuda.empty_cache()

    def sdpa(self):
        for B, H, N, d, c in SDPA:
            for impl in BACKENDS:
                fwd, bwd = self.attention(impl, B, H, H, N, d, c, self.torch.bfloat16)
                flops = attention_flops(B, H, N, d, c)
                rec = dict(kind="sdpa_bf16", impl=impl, shape=f"B{B} H{H} N{N} d{d}", causal=c)
                rec.update(prefixed("fwd_", rate(fwd, "tflops", flops)))
                rec.update(prefixed("bwd_", rate(bwd, "tflops", 2.5 * flops)))
                self.add(rec, "anchors2.json")
            self.torch.cuda.empty_cache()

    def gqa(self):
        B, Hq, Hkv, N, d = GQA
        for impl in BACKENDS:
            fwd, bwd = self.attention(impl, B, Hq, Hkv, N, d, True, self.torch.bfloat16)
            flops = attention_flops(B, Hq, N, d, True)
            rec = dict(kind="gqa_bf16", impl=impl, shape=f"B{B} Hq{Hq} Hkv{Hkv} N{N} d{d} causal")
            rec.update(rate(fwd, "tflops", flops))
            rec.update(prefixed("bwd_", rate(bwd, "tflops", 2.5 * flops)))
            self.add(rec, "anchors2.json")

    # ---- 11: decode
    def decode(self):
        torch = self.torch
        for B, Hq, Hkv, N, d in DECODE:
            q = self.rand((B, Hq, 1, d), torch.bfloat16)
            k, v = self.rand((B, Hkv, N, d), torch.bfloat16), self.rand((B, Hkv, N, d), torch.bfloat16)
            kv_bytes = 2.0 * B * Hkv * N * d * 2
            for impl in BACKENDS:
                with torch.no_grad(), self.sdpa_kernel([self.backend[impl]]):
                    m = self.measure(lambda: self.F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
                self.add(dict(kind="decode_bf16", impl=impl, shape=f"B{B} Hq{Hq} Hkv{Hkv} Nq1 Nkv{N} d{d}",
                              **rate(m, "gbps", kv_bytes)), "anchors2.json")
            q = k = v = None  # 4 GiB of cache per shape: free it before the next one
            torch.cuda.empty_cache()


    # ---- 15: FlexAttention
    def flex(self):
        torch = self.torch
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        import torch._functorch.config as functorch_config
        # The backward is timed again and again on one forward's graph (retain_graph), which
        # compiled backwards with donated buffers refuse.
        functorch_config.donated_buffer = False
        compiled = torch.compile(flex_attention)
        for name, B, H, N, d in FLEX:
            if name == "window":
                mask = lambda b, h, q, k: (k <= q) & (q - k <= FLEX_WINDOW)  # noqa: E731
                pairs = sum(min(q + 1, FLEX_WINDOW + 1) for q in range(N))
                score = None
            elif name == "documents":
                lengths = document_lengths(N, *FLEX_DOCUMENTS)
                doc = torch.repeat_interleave(torch.arange(len(lengths), device="cuda"),
                                              torch.tensor(lengths, device="cuda"))
                mask = lambda b, h, q, k: (doc[q] == doc[k]) & (k <= q)  # noqa: E731
                pairs = sum(n * (n + 1) // 2 for n in lengths)
                score = None
            else:
                mask = lambda b, h, q, k: k <= q  # noqa: E731
                pairs = N * (N + 1) // 2
                score = lambda s, b, h, q, k: FLEX_CAP * torch.tanh(s / FLEX_CAP)  # noqa: E731
            bm = create_block_mask(mask, None, None, N, N, device="cuda")
            q, k, v = (self.rand((B, H, N, d), torch.bfloat16, True) for _ in range(3))
            do = self.rand((B, H, N, d), torch.bfloat16)
            run = lambda: compiled(q, k, v, score_mod=score, block_mask=bm)  # noqa: E731
            fwd = self.measure(run)
            bwd = {"error": "no forward"}
            if "error" not in fwd:
                o = run()
                bwd = self.measure(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
                if "error" in bwd:  # forward + backward on a fresh graph each time, less the forward
                    both = self.measure(lambda: torch.autograd.grad(run(), (q, k, v), do))
                    if "error" not in both:
                        bwd = {key: round(both[key] - fwd[key], 4) for key in ("ms", "p10_ms", "p90_ms")}
                        bwd.update(n=both["n"], method="(forward + backward) - forward")
            flops = 4.0 * B * H * pairs * d
            rec = dict(kind="flex_bf16", impl="flex_attention", case=name, shape=f"B{B} H{H} N{N} d{d}")
            rec.update(prefixed("fwd_", rate(fwd, "tflops", flops)))
            rec.update(prefixed("bwd_", rate(bwd, "tflops", 2.5 * flops)))
            self.add(rec, "anchors2.json")
            if self.flex_text and rec.get("fwd_tflops") and rec.get("bwd_tflops"):
                with open(self.flex_text, "a") as f:
                    f.write(f"{name} fwd {rec['fwd_tflops']}\n{name} bwd {rec['bwd_tflops']}\n")
            q = k = v = do = o = None
            torch.cuda.empty_cache()


def attention_flops(B, H, N, d, causal):
    return 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)


def rate(m, unit, amount):
    """The measurement with its rate (TFLOP/s from FLOPs, GB/s from bytes) beside the times."""
    if "error" in m:
        return dict(m)
    scale = 1e12 if unit == "tflops" else 1e9
    return dict(m, **{unit: round(amount / (m["ms"] * 1e-3) / scale, 1)})


def prefixed(prefix, m):
    """fwd_ms, fwd_tflops, ...; a failed measurement keeps its keys (None) beside fwd_error."""
    if "error" in m:
        return {prefix + "ms": None, prefix + "tflops": None, prefix + "error": m["error"]}
    return {prefix + k: v for k, v in m.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=pathlib.Path, nargs="?", help="where anchors.json and anchors2.json go")
    ap.add_argument("--only", default=",".join(GROUPS), help="comma-separated groups (default: all): " + ", ".join(GROUPS))
    ap.add_argument("--repeats", type=int, default=REPEATS, help=f"timed repeats per measurement (default {REPEATS})")
    ap.add_argument("--list", action="store_true", help="print what would be measured and exit (no GPU needed)")
    ap.add_argument("--flex-text", type=pathlib.Path, help="group flex: also write `case fwd|bwd TFLOP/s` lines here")
    args = ap.parse_args()
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        ap.error(f"--only: unknown group(s) {', '.join(unknown) or '(none given)'}; the groups are {', '.join(GROUPS)}")
    if not 1 <= args.repeats <= 10000:
        ap.error(f"--repeats must be in [1, 10000], got {args.repeats}")
    if args.list:
        print("\n".join(plan(groups)))
        return 0
    if args.out_dir is None:
        ap.error("OUT_DIR is required (or --list)")
    w = warmup_ms()
    try:
        import torch
    except ImportError as e:
        sys.exit(f"torch_anchors: PyTorch is not installed ({e}): no anchors measured")
    if not torch.cuda.is_available():
        sys.exit("torch_anchors: PyTorch sees no CUDA device (torch.cuda.is_available() is False): no anchors measured")
    try:
        args.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        sys.exit(f"torch_anchors: cannot create {args.out_dir}: {e.strerror}")

    meta = dict(kind="meta", script="scripts/anchors/torch_anchors.py", torch=torch.__version__,
                cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(), gpu=torch.cuda.get_device_name(0),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                commit=os.environ.get("LADDER_COMMIT", "unknown"), warmup_ms=w, repeats=args.repeats,
                method=f"common/timing.h in Python: warm-up >= {w:g} ms and >= {MIN_WARMUP_RUNS} runs back to back; "
                       f"{args.repeats} repeats, each after an L2 flush (2x L2 written); CUDA events around the op; "
                       "median (p10, p90)")
    anchors = Anchors(torch, args.out_dir, Timer(torch, w, args.repeats), meta)
    anchors.flex_text = args.flex_text
    if args.flex_text:
        args.flex_text.write_text("")
    print(f"torch_anchors: PyTorch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
          f"{torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}; groups {', '.join(groups)}", flush=True)
    failed = []
    for g in groups:
        try:
            getattr(anchors, g)()
        except Exception as e:  # outside a measurement (allocating the inputs): the group stops, the rest go on
            failed.append(g)
            print(f"torch_anchors: group {g} stopped: {short(e)}", file=sys.stderr, flush=True)
    if failed:
        print(f"torch_anchors: groups that stopped early: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
