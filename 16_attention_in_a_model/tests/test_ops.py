"""The operators against fp64 references, SDPA, PyTorch's operator checks and torch.compile.

CPU: the registration, fake tensors and autograd on the meta device, the bad-input errors.
GPU (skipped without one, or without the built module): every output and gradient against an
fp64 reference on the bf16-rounded inputs, with the chapters' bounds; flash-attention's
criterion against SDPA (error at most twice SDPA's own); opcheck; torch.compile(fullgraph=True);
decode against attention on the same cache.
"""
import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the operators need it")
import flash_ladder as fl  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU or bool(fl.module_error()),
                               reason="needs a CUDA GPU and the built module: " + (fl.module_error() or "no GPU"))
needs_module = pytest.mark.skipif(bool(fl.module_error()), reason=fl.module_error() or "")
HOPPER = GPU and fl.hopper()  # (an H100 capped by LADDER_DEVICE_LIMITS is the GPU it emulates)
needs_hopper = pytest.mark.skipif(not HOPPER or bool(fl.module_error()),
                                  reason="chapter 15's kernels need an sm_90a GPU (H100/H200) and the module")

# The chapters' bounds on ||out - ref|| / ||ref|| (common/compare.h): P and O rounded to bf16,
# 2 x 2^-8 / sqrt(3) with a x2 margin; the gradients add dS's rounding, x3.5 margin.
FWD_BOUND, GRAD_BOUND = 5e-3, 1e-2


# ---- CPU: registration, fake tensors, autograd wiring, errors --------------------------------------
def meta(*shape, grad=True):
    return torch.empty(shape, device="meta", dtype=torch.bfloat16, requires_grad=grad)


def test_operators_are_registered_with_their_schemas():
    for name in ("attention_forward", "attention_backward", "decode", "append_kv"):
        assert hasattr(torch.ops.flash_ladder, name), name
    schema = str(torch.ops.flash_ladder.attention_forward.default._schema)
    assert "Tensor q" in schema and "-> (Tensor, Tensor)" in schema
    # The step writes the cache: declared, so torch.compile orders it and functionalises it.
    schema = str(torch.ops.flash_ladder.decode.default._schema)
    assert "Tensor(a1!) k_cache" in schema and "Tensor(a2!) v_cache" in schema, schema


def test_decode_checks_show_on_meta_tensors():
    q, kc = meta(2, 4, 1, 128, grad=False), meta(2, 2, 256, 128, grad=False)
    lens = torch.zeros(2, dtype=torch.int32, device="meta")
    assert fl.decode(q, kc, kc, lens, k=meta(2, 2, 1, 128, grad=False), v=meta(2, 2, 1, 128, grad=False)).shape == q.shape
    with pytest.raises(ValueError, match="new keys and values"):
        fl.decode(q, kc, kc, lens, k=meta(2, 4, 1, 128, grad=False), v=meta(2, 4, 1, 128, grad=False))
    with pytest.raises(ValueError, match="both new keys and new values"):
        fl.decode(q, kc, kc, lens, k=meta(2, 2, 1, 128, grad=False))
    with pytest.raises(ValueError, match="capacity 256"):
        fl.decode(q, kc, kc, lens, max_seqlen=257)


def test_meta_tensors_give_shapes_and_gradients_through_autograd():
    q, k, v = meta(2, 8, 300, 128), meta(2, 2, 500, 128), meta(2, 2, 500, 128)  # GQA, N_kv > N
    o = fl.attention(q, k, v, causal=True)
    assert o.shape == q.shape and o.dtype == torch.bfloat16
    o.sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape and v.grad.shape == v.shape


def test_export_sees_one_node_per_direction():
    class Attn(torch.nn.Module):
        def forward(self, q, k, v):
            return fl.attention(q, k, v, causal=True)

    args = tuple(meta(1, 4, 256, 64, grad=False) for _ in range(3))
    graph = torch.export.export(Attn(), args).graph_module.code
    assert "flash_ladder.attention_forward" in graph


def test_compile_fullgraph_traces_forward_and_backward_on_meta():
    """No graph break anywhere in the operators' Python (checks, masks, packed documents): dynamo and
    AOTAutograd trace them whole; on meta tensors the fake implementations stand in for the kernels."""
    def f(q, k, v, cu):
        a = fl.attention(q, k, v, causal=True)
        b = fl.attention(q, k, v, mask="sliding_window", window=(64, 0))
        c = fl.attention(q[:1].contiguous(), k[:1].contiguous(), v[:1].contiguous(), causal=True, cu_seqlens_q=cu)
        return a.sum() + b.sum() + c.sum()

    q, k, v = meta(2, 4, 256, 128), meta(2, 2, 256, 128), meta(2, 2, 256, 128)
    cu = torch.tensor([0, 100, 256], dtype=torch.int32, device="meta")
    torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v, cu).backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape


@pytest.mark.parametrize("bad, expect", [
    (lambda: fl.attention(*[torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)] * 3), "CUDA tensors only"),
    (lambda: fl.attention(*[torch.empty(1, 2, 8, 64, device="meta", dtype=torch.float16)] * 3), "supported: torch.bfloat16"),
    (lambda: fl.attention(*[meta(1, 2, 8, 96)] * 3), "head dim 96"),
    (lambda: fl.attention(meta(1, 6, 8, 64), meta(1, 4, 8, 64), meta(1, 4, 8, 64)), "multiple of H_kv"),
    (lambda: fl.attention(*[meta(1, 8, 2, 64).transpose(1, 2)] * 3), "not contiguous"),
    (lambda: fl.attention(*[meta(1, 2, 8, 128)] * 3, mask="window"), "mask 'window'"),
    (lambda: fl.attention(*[meta(1, 2, 8, 128)] * 3, mask="sliding_window"), "window=(left, right)"),
    (lambda: fl.attention(*[meta(1, 2, 8, 128)] * 3, causal=True, mask="prefix_lm", prefix=4), "give one of them"),
    (lambda: fl.attention(*[meta(2, 2, 8, 128)] * 3, causal=True,
                          cu_seqlens_q=torch.zeros(3, dtype=torch.int32, device="meta")), "B = 1"),
    (lambda: fl.attention(*[meta(1, 2, 8, 128)] * 3, softcap=30.0), "causal attention only"),
    (lambda: fl.attention(*[meta(1, 2, 8, 128)] * 3, causal=True,
                          cu_seqlens_q=torch.zeros(1, dtype=torch.int32, device="meta")), "2 or more offsets"),
])
def test_bad_input_is_refused_before_any_launch(bad, expect):
    with pytest.raises(ValueError, match=expect.replace("(", r"\(").replace(")", r"\)")):
        bad()


# The registered operators called directly (as torch.compile, opcheck and other callers do, past
# attention()'s checks): every tensor the kernels read is checked by the operator itself; on meta
# tensors by its fake implementation, with the same rules.
def _fwd_args(B=1, H=4, N=256, d=64, device="meta", **over):
    q = torch.empty(B, H, N, d, device=device, dtype=torch.bfloat16)
    a = dict(q=q, k=q.clone(), v=q.clone(), mask="none", window_left=0, window_right=0, prefix=0, doc=None,
             score_mod="none", softcap=0.0, slopes=None)
    a.update(over)
    return a


def _forward(a):
    return torch.ops.flash_ladder.attention_forward(a["q"], a["k"], a["v"], a["mask"], a["window_left"],
                                                    a["window_right"], a["prefix"], a["doc"], a["score_mod"],
                                                    a["softcap"], a["slopes"])


def _bad_forward_cases(device):
    ids = lambda *s, dtype=torch.int32, dev=device: torch.zeros(*s, dtype=dtype, device=dev)  # noqa: E731
    slopes = lambda n, dtype=torch.float32, dev=device: torch.ones(n, dtype=dtype, device=dev)  # noqa: E731
    return [
        (dict(mask="documents"), ValueError, "needs doc"),
        (dict(mask="documents", doc=ids(1, 256, dev="cpu")), ValueError, "cpu tensor"),
        (dict(mask="documents", doc=ids(1, 5)), ValueError, r"expected \[B, N\] = \[1, 256\]"),
        (dict(mask="documents", doc=ids(1, 256, dtype=torch.float32)), ValueError, "supported: torch.int32"),
        (dict(mask="documents", doc=ids(1, 512)[:, ::2]), ValueError, "not contiguous"),
        (dict(mask="none", doc=ids(1, 256)), ValueError, "mask='documents' only"),
        (dict(mask="causal", score_mod="alibi"), ValueError, "needs slopes"),
        (dict(mask="causal", score_mod="alibi", slopes=slopes(4, dev="cpu")), ValueError, "cpu tensor"),
        (dict(mask="causal", score_mod="alibi", slopes=slopes(1)), ValueError, "1 slopes for H = 4"),
        (dict(mask="causal", score_mod="alibi", slopes=slopes(4, dtype=torch.bfloat16)), ValueError,
         "supported: torch.float32"),
        (dict(mask="causal", slopes=slopes(4)), ValueError, "score_mod='alibi' only"),
        (dict(mask="causal", score_mod="softcap", softcap=0.0), ValueError, "finite and > 0"),
        (dict(mask="causal", score_mod="softcap", softcap=float("nan")), ValueError, "finite and > 0"),
        (dict(mask="none", score_mod="softcap", softcap=30.0), ValueError, "causal attention only"),
        (dict(mask="window"), ValueError, "mask 'window'"),
        (dict(mask="sliding_window", window_left=-1), ValueError, "window_left = -1"),
        (dict(score_mod="tanh"), ValueError, "score_mod 'tanh'"),
    ]


def _bad_backward_cases(device):
    q = torch.empty(1, 4, 256, 64, device=device, dtype=torch.bfloat16)
    lse = torch.empty(1, 4, 256, device=device, dtype=torch.float32)
    return [
        (dict(lse=lse[..., :-1].contiguous()), r"expected \[B, H, N\]"),
        (dict(lse=lse.to(torch.float16)), "supported: torch.float32"),
        (dict(o=q.float()), "supported: torch.bfloat16"),
        (dict(o=q[..., :32].contiguous()), "expected q's"),
        (dict(do=q[:, :2].contiguous()), "expected q's"),
        (dict(lse=torch.empty(1, 4, 256, dtype=torch.float32)), "cpu tensor"),
    ]


def _backward(device, **over):
    q = torch.empty(1, 4, 256, 64, device=device, dtype=torch.bfloat16)
    a = dict(do=q.clone(), q=q, k=q.clone(), v=q.clone(), o=q.clone(),
             lse=torch.empty(1, 4, 256, device=device, dtype=torch.float32))
    a.update(over)
    return torch.ops.flash_ladder.attention_backward(a["do"], a["q"], a["k"], a["v"], a["o"], a["lse"], "none", 0,
                                                     0, 0, None, "none", 0.0, None)


@pytest.mark.parametrize("case", range(len(_bad_forward_cases("meta"))))
def test_the_forward_operator_checks_its_own_tensors_on_meta(case):
    over, error, expect = _bad_forward_cases("meta")[case]
    with pytest.raises(error, match=expect):
        _forward(_fwd_args(**over))


@pytest.mark.parametrize("case", range(len(_bad_backward_cases("meta"))))
def test_the_backward_operator_checks_its_own_tensors_on_meta(case):
    over, expect = _bad_backward_cases("meta")[case]
    with pytest.raises(ValueError, match=expect):
        _backward("meta", **over)


@needs_hopper
def test_the_operators_refuse_bad_tensors_on_the_gpu_before_any_launch():
    """The same refusals with CUDA tensors: a ValueError each, nothing launched, and the CUDA context
    intact after them (a valid call still runs and is synchronised without an error)."""
    for over, error, expect in _bad_forward_cases("cuda"):
        with pytest.raises(error, match=expect):
            _forward(_fwd_args(device="cuda", **over))
    for over, expect in _bad_backward_cases("cuda"):
        with pytest.raises(ValueError, match=expect):
            _backward("cuda", **over)
    torch.cuda.synchronize()
    q, k, v, _ = inputs(1, 4, 4, 256, 256, 64, seed=11)
    o, lse = _forward(_fwd_args(q=q.detach(), k=k.detach(), v=v.detach(), mask="documents",
                                doc=torch.zeros(1, 256, dtype=torch.int32, device="cuda")))
    torch.cuda.synchronize()
    assert torch.isfinite(o.float()).all() and torch.isfinite(lse).all()


@needs_module
def test_kernel_choice_is_the_chapters():
    assert fl.kernels_for((2, 8, 4096, 128), (2, 8, 4096, 128), mask="causal", hopper=True).startswith("fa3")
    assert fl.kernels_for((2, 8, 4096, 64), (2, 8, 4096, 64), mask="causal", hopper=False).startswith("fa2")
    assert fl.kernels_for((1, 8, 4096, 128), (1, 8, 4096, 128), mask="sliding_window", hopper=True).startswith("flex")
    assert fl.kernels_for((1, 8, 4096, 64), (1, 8, 4096, 64), mask="prefix_lm", hopper=True).startswith("flex")
    with pytest.raises(ValueError, match="sm_90a"):
        fl.kernels_for((1, 8, 4096, 128), (1, 8, 4096, 128), mask="prefix_lm", hopper=False)


# ---- GPU: numbers ---------------------------------------------------------------------------------
def allowed_keys(N, N_kv, mask, window=(0, 0), prefix=0, cu=None, device="cuda"):
    """[N, N_kv] bool: which keys each query sees (the operators' documented masks)."""
    q = torch.arange(N, device=device)[:, None]
    k = torch.arange(N_kv, device=device)[None, :]
    diag = q + (N_kv - N)
    if mask == "none":
        return torch.ones(N, N_kv, dtype=torch.bool, device=device)
    if mask == "causal":
        return k <= diag
    if mask == "sliding_window":
        return (k >= diag - window[0]) & (k <= diag + window[1])
    if mask == "prefix_lm":
        return (k < prefix) | (k <= q)
    if mask == "documents":
        doc = torch.searchsorted(cu[1:].to(torch.int64), torch.arange(N, device=device), right=True)
        return (doc[:, None] == doc[None, :]) & (k <= q)
    raise ValueError(mask)


def reference(q, k, v, do, allowed, softcap=None, slopes=None):
    """fp64 attention on the bf16 inputs, and its gradients (autograd in fp64). A query that sees
    no key gets O = 0 and zero gradients, as the kernels give it."""
    qd, kd, vd = (x.detach().double().requires_grad_() for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    kk, vv = kd.repeat_interleave(g, 1), vd.repeat_interleave(g, 1)
    s = qd @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    if slopes is not None:
        N, N_kv = s.shape[-2:]
        dist = (torch.arange(N_kv, device=s.device)[None, :] - torch.arange(N, device=s.device)[:, None]
                - (N_kv - N))
        s = s + slopes.double()[None, :, None, None] * dist
    s = torch.where(allowed, s, -math.inf)
    m = s.amax(-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    p = e / e.sum(-1, keepdim=True).clamp_min(1e-300)
    o = p @ vv
    o.backward(do.double())
    return o.detach(), qd.grad, kd.grad, vd.grad


def rel(x, ref):
    return ((x.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def inputs(B, H, H_kv, N, N_kv, d, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda *s: torch.randn(*s, device="cuda", generator=gen).to(torch.bfloat16)  # noqa: E731
    q, k, v = mk(B, H, N, d), mk(B, H_kv, N_kv, d), mk(B, H_kv, N_kv, d)
    return q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), mk(B, H, N, d)


def run(q, k, v, do, **kw):
    for t in (q, k, v):
        t.grad = None
    o = fl.attention(q, k, v, **kw)
    o.backward(do)
    return o.detach(), q.grad, k.grad, v.grad


def check_against_reference(got, ref, what):
    for name, x, r, bound in zip(("O", "dQ", "dK", "dV"), got, ref, (FWD_BOUND,) + (GRAD_BOUND,) * 3):
        assert torch.isfinite(x).all(), f"{what}: {name} has non-finite values"
        if r.norm() <= 1e-12 * r.numel() ** 0.5:
            # Zero but for fp64's rounding (one key per query: P = 1, so dS = P (dP - D) = 0): no
            # relative error exists; the kernels' fp32 dP - D leaves a few ulps of it.
            assert x.abs().max() <= 1e-4, f"{what}: {name} should be 0, max |{name}| = {x.abs().max():.2e}"
            continue
        err = rel(x, r)
        assert err <= bound, f"{what}: {name} relative error {err:.2e} > {bound:.0e}"


# The edge shapes of chapters 10 and 12: one row, sizes off the tiles, N_kv on either side of N
# (causal with N_kv < N: the first queries see no key), GQA.
EDGE = [(1, 2, 2, 1, 1), (2, 4, 4, 17, 17), (1, 4, 2, 200, 333), (2, 8, 2, 300, 129), (1, 2, 1, 1000, 1000)]


@needs_gpu
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("B,H,H_kv,N,N_kv", EDGE)
def test_attention_against_fp64(B, H, H_kv, N, N_kv, d, causal):
    q, k, v, do = inputs(B, H, H_kv, N, N_kv, d, seed=N * 7 + d + causal)
    got = run(q, k, v, do, causal=causal)
    ref = reference(q, k, v, do, allowed_keys(N, N_kv, "causal" if causal else "none"))
    check_against_reference(got, ref, f"B={B} H={H}/{H_kv} N={N} N_kv={N_kv} d={d} causal={causal}")


def at_most_twice_sdpa(q, k, v, do, got, ref, allowed, what):
    """flash-attention's criterion: against the fp64 result, the kernels' largest error is at most
    twice that of PyTorch's attention in bf16 (SDPA with the same boolean mask), plus a floor for
    exact zeros. Queries that see no key are left out (SDPA gives them NaN; test_attention_against_fp64
    checks the kernels give them zeros): they are the first rows, and they add nothing to dK, dV."""
    first = int((~allowed.any(-1)).sum().item())
    assert not allowed[first:].logical_not().all(-1).any(), "rows without keys come first (bottom-right causal)"
    qs, ks, vs = (x.detach().clone().requires_grad_() for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    o = F.scaled_dot_product_attention(qs[:, :, first:], ks.repeat_interleave(g, 1), vs.repeat_interleave(g, 1),
                                       attn_mask=allowed[first:])
    o.backward(do[:, :, first:])
    sdpa = (o.detach(), qs.grad[:, :, first:], ks.grad, vs.grad)
    rows = (slice(None), slice(None), slice(first, None))
    for name, x, s, r, cut in zip(("O", "dQ", "dK", "dV"), got, sdpa, ref, (True, True, False, False)):
        x, r = (x[rows], r[rows]) if cut else (x, r)
        ours, theirs = (x.double() - r).abs().max().item(), (s.double() - r).abs().max().item()
        assert ours <= 2 * theirs + 1e-5, f"{what}: {name} max error {ours:.2e} > 2 x SDPA's {theirs:.2e}"


# Chapter 14's matrix for the criterion (dQ, dK, dV through this operator are chapter 14's):
# (B, H, H_kv, N, N_kv, d, causal, logit scale).
CRITERION = [
    (1, 2, 2, 1, 1, 128, False, 1), (1, 2, 2, 2, 2, 64, True, 1), (2, 4, 4, 97, 97, 128, True, 1),
    (1, 4, 4, 4093, 4093, 64, False, 1), (2, 4, 4, 4093, 4093, 128, True, 1),
    (2, 8, 2, 97, 300, 128, True, 1), (1, 8, 1, 200, 200, 128, True, 1),  # GQA 4, MQA
    (1, 4, 2, 300, 129, 128, True, 1), (1, 4, 2, 129, 300, 64, True, 1),  # N_q != N_kv both ways
    (2, 4, 4, 256, 256, 128, True, 30), (2, 4, 4, 256, 256, 64, False, 30),  # logits x 30
    (16, 32, 8, 97, 97, 64, True, 1),  # B H large
    (1, 1, 1, 32768, 32768, 128, True, 1),
]


@needs_gpu
@pytest.mark.parametrize("B,H,H_kv,N,N_kv,d,causal,logits", CRITERION,
                         ids=lambda c: str(c) if not isinstance(c, bool) else ("causal" if c else "dense"))
def test_error_at_most_twice_sdpa(B, H, H_kv, N, N_kv, d, causal, logits):
    q, k, v, do = inputs(B, H, H_kv, N, N_kv, d, seed=N + d + logits)
    if logits != 1:
        q = (q.detach() * logits).to(torch.bfloat16).requires_grad_()
    allowed = allowed_keys(N, N_kv, "causal" if causal else "none")
    got = run(q, k, v, do, causal=causal)
    at_most_twice_sdpa(q, k, v, do, got, reference(q, k, v, do, allowed), allowed,
                       f"B={B} H={H}/{H_kv} N={N} N_kv={N_kv} d={d} causal={causal} logits x{logits}")


MASKED = [
    dict(mask="sliding_window", window=(100, 0)),
    dict(mask="sliding_window", window=(64, 30)),
    dict(mask="prefix_lm", prefix=77),
    dict(causal=True, softcap=20.0),
    dict(causal=True, alibi=True),
    dict(causal=True, documents=[1, 17, 200, 0, 301]),
]


@needs_hopper
@pytest.mark.parametrize("d", [128, 64])
@pytest.mark.parametrize("H_kv", [4, 2])
@pytest.mark.parametrize("kw", MASKED, ids=lambda kw: "-".join(str(x) for x in kw.values()))
def test_masks_and_score_modifiers_against_fp64(kw, H_kv, d):
    kw = dict(kw)
    B, H = 1, 4
    docs = kw.pop("documents", None)
    N = sum(docs) if docs else 519
    q, k, v, do = inputs(B, H, H_kv, N, N, d, seed=N + H_kv)
    cu, slopes = None, None
    if docs:
        cu = torch.tensor([0] + list(torch.tensor(docs).cumsum(0)), dtype=torch.int32, device="cuda")
        kw["cu_seqlens_q"] = cu
    if kw.pop("alibi", False):
        slopes = torch.tensor([2 ** (-8 * (h + 1) / H) for h in range(H)], device="cuda")
        kw["alibi_slopes"] = slopes
    mask = "documents" if docs else kw.get("mask", "causal")
    allowed = allowed_keys(N, N, mask, window=kw.get("window", (0, 0)), prefix=kw.get("prefix", 0), cu=cu)
    got = run(q, k, v, do, **kw)
    ref = reference(q, k, v, do, allowed, softcap=kw.get("softcap"), slopes=slopes)
    check_against_reference(got, ref, str(kw))
    if "softcap" not in kw and slopes is None:  # SDPA takes a mask, not a score modifier
        at_most_twice_sdpa(q, k, v, do, got, ref, allowed, str(kw))


@needs_gpu
def test_scale_other_than_the_default():
    q, k, v, do = inputs(1, 2, 2, 100, 100, 64, seed=3)
    got = run(q, k, v, do, causal=True, scale=0.05)
    qd = (q.detach().float() * (0.05 * 8)).to(torch.bfloat16)  # the rounding the operator's q sees
    ref = reference(qd, k, v, do, allowed_keys(100, 100, "causal"))
    assert rel(got[0], ref[0]) <= FWD_BOUND


@needs_gpu
def test_runs_on_the_current_stream_without_a_host_sync():
    """On a side stream the operators give the same bits; forward and backward, with a mask and packed
    documents, run with PyTorch's sync debug mode set to "error", which raises on any operation that
    synchronises the host with the device (a .item(), a copy to the host, a blocking wait)."""
    q, k, v, do = inputs(2, 4, 4, 1000, 1000, 128, seed=5)
    expected = fl.attention(q, k, v, causal=True).detach()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = fl.attention(q, k, v, causal=True).detach()
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(got, expected)
    q1, k1, v1 = (t[:1].detach().clone().requires_grad_() for t in (q, k, v))
    cu = torch.tensor([0, 300, 1000], dtype=torch.int32, device="cuda")
    calls = [lambda: fl.attention(q, k, v, causal=True)]
    if HOPPER:
        calls += [lambda: fl.attention(q, k, v, mask="sliding_window", window=(100, 0)),
                  lambda: fl.attention(q1, k1, v1, causal=True, cu_seqlens_q=cu)]
    for call in calls:  # the first call of a variant builds and uploads its block masks (a host copy, once)
        o = call()
        o.backward(torch.ones_like(o))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for call in calls:
            o = call()
            o.backward(torch.ones_like(o))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()


@needs_gpu
def test_opcheck():
    q, k, v, do = inputs(1, 4, 2, 130, 200, 128, seed=9)
    args = (q, k, v, "causal", 0, 0, 0, None, "none", 0.0, None)
    torch.library.opcheck(torch.ops.flash_ladder.attention_forward.default, args)
    o, lse = (t.detach() for t in torch.ops.flash_ladder.attention_forward(*args))
    # The backward's inputs as autograd gives them (no gradient of the backward itself: no double backward).
    bwd = (do, q.detach(), k.detach(), v.detach(), o, lse, "causal", 0, 0, 0, None, "none", 0.0, None)
    torch.library.opcheck(torch.ops.flash_ladder.attention_backward.default, bwd)
    kc, vc = (torch.randn(2, 2, 256, 128, device="cuda").to(torch.bfloat16) for _ in range(2))
    qd = torch.randn(2, 4, 1, 128, device="cuda").to(torch.bfloat16)
    lens = torch.tensor([100, 256], dtype=torch.int32, device="cuda")
    torch.library.opcheck(torch.ops.flash_ladder.decode.default, (qd, kc, vc, lens, None, None, None, 256))
    kn, vn = (torch.randn(2, 2, 3, 128, device="cuda").to(torch.bfloat16) for _ in range(2))
    torch.library.opcheck(torch.ops.flash_ladder.decode.default, (qd, kc, vc, lens, None, kn, vn, 0))
    torch.library.opcheck(torch.ops.flash_ladder.append_kv.default, (kc, vc, kn, vn, lens, None))


@needs_gpu
def test_compile_fullgraph_of_a_block():
    torch.manual_seed(0)
    proj = torch.nn.Linear(128, 3 * 128, device="cuda", dtype=torch.bfloat16)

    def block(x):
        B, T, C = x.shape
        q, k, v = proj(x).view(B, T, 3, 2, C // 2).permute(2, 0, 3, 1, 4).contiguous().unbind(0)
        return fl.attention(q, k, v, causal=True).transpose(1, 2).reshape(B, T, C)

    x = torch.randn(2, 300, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    eager = block(x)
    eager.sum().backward()
    g_eager, x.grad = x.grad, None
    compiled = torch.compile(block, fullgraph=True)(x)
    compiled.sum().backward()
    # The same attention kernels; the compiled graph may fuse the copies around them differently.
    assert rel(compiled.detach(), eager.detach().double()) <= FWD_BOUND
    assert rel(x.grad, g_eager.double()) <= GRAD_BOUND


def paged(k_full, v_full, page_size, gen):
    """The same caches as pages in a shuffled pool, and the block table."""
    B, H_kv, cap, d = k_full.shape
    per_seq = cap // page_size
    order = torch.randperm(B * per_seq, generator=gen, device="cpu").to("cuda")
    table = order.view(B, per_seq).to(torch.int32)
    pool_k = torch.empty(B * per_seq, H_kv, page_size, d, device="cuda", dtype=k_full.dtype)
    pool_v = torch.empty_like(pool_k)
    pool_k[table.long()] = k_full.view(B, H_kv, per_seq, page_size, d).transpose(1, 2)
    pool_v[table.long()] = v_full.view(B, H_kv, per_seq, page_size, d).transpose(1, 2)
    return pool_k, pool_v, table


@needs_gpu
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("page_size", [None, 16, 64])
def test_decode_equals_attention_on_the_same_cache(d, page_size):
    B, H, H_kv, cap, n_new = 3, 8, 2, 1024, 1
    gen = torch.Generator().manual_seed(d)
    mk = lambda *s: torch.randn(*s, generator=gen).to("cuda", torch.bfloat16)  # noqa: E731
    k_full, v_full = mk(B, H_kv, cap, d), mk(B, H_kv, cap, d)
    before = [1, 500, 1000]  # keys already cached; each sequence appends n_new
    k_new, v_new, q = mk(B, H_kv, n_new, d), mk(B, H_kv, n_new, d), mk(B, H, n_new, d)
    lens = torch.tensor(before, dtype=torch.int32, device="cuda")
    if page_size is None:
        kc, vc, table = k_full.clone(), v_full.clone(), None
    else:
        kc, vc, table = paged(k_full, v_full, page_size, gen)
    out = fl.decode(q, kc, vc, lens, table, k=k_new, v=v_new)
    for b, n in enumerate(before):
        keys = torch.cat([k_full[b:b + 1, :, :n], k_new[b:b + 1]], 2).contiguous()
        vals = torch.cat([v_full[b:b + 1, :, :n], v_new[b:b + 1]], 2).contiguous()
        ref = fl.attention(q[b:b + 1].contiguous(), keys, vals, causal=True)
        assert rel(out[b:b + 1], ref.double()) <= FWD_BOUND, f"sequence {b} ({n} cached keys)"


@needs_gpu
@pytest.mark.parametrize("page_size", [None, 16, 64])
def test_append_kv_writes_what_indexing_writes(page_size):
    """One launch against PyTorch's indexing: n keys per sequence at cache_seqlens[b] .. + n - 1, from a
    non-contiguous view (a model's projection), one sequence crossing a page, the lengths not advanced."""
    B, H_kv, cap, d, n = 3, 2, 256, 128, 37
    gen = torch.Generator().manual_seed(7)
    mk = lambda *s: torch.randn(*s, generator=gen).to("cuda", torch.bfloat16)  # noqa: E731
    k_full, v_full = mk(B, H_kv, cap, d), mk(B, H_kv, cap, d)
    k_new, v_new = (mk(B, n, H_kv, d).transpose(1, 2) for _ in range(2))  # [B, H_kv, n, d], not contiguous
    lens = torch.tensor([0, 60, 219], dtype=torch.int32, device="cuda")
    expect_k, expect_v = k_full.clone(), v_full.clone()
    for b, start in enumerate(lens.tolist()):
        expect_k[b, :, start:start + n], expect_v[b, :, start:start + n] = k_new[b], v_new[b]
    if page_size is None:
        kc, vc, table = k_full.clone(), v_full.clone(), None
    else:
        kc, vc, table = paged(k_full, v_full, page_size, gen)
    fl.append_kv(kc, vc, k_new, v_new, lens, table)
    if table is not None:  # back to [B, H_kv, cap, d] through the block table
        kc, vc = (pool[table.long()].transpose(1, 2).reshape(B, H_kv, cap, d) for pool in (kc, vc))
    assert torch.equal(kc, expect_k) and torch.equal(vc, expect_v)
    assert lens.tolist() == [0, 60, 219]


@needs_gpu
def test_bad_input_on_the_gpu_is_refused_before_any_launch():
    q = torch.zeros(1, 2, 64, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="CUDA tensors only"):
        fl.attention(q, q.cpu(), q)
    with pytest.raises(ValueError, match="different devices|CUDA"):
        fl.attention(q, q.to("meta"), q)
    kc = torch.zeros(1, 2, 32, 64, device="cuda", dtype=torch.bfloat16)
    lens = torch.zeros(1, dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match="page size 32"):
        table = torch.zeros(1, 1, dtype=torch.int32, device="cuda")
        fl.decode(q[:, :, :1].contiguous(), kc, kc, lens, block_table=table)
    with pytest.raises(ValueError, match="new queries"):
        fl.decode(torch.zeros(1, 2, 17, 64, device="cuda", dtype=torch.bfloat16), kc, kc, lens)
