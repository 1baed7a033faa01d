"""Chapters 10, 12 and 14 on flash-attention's own accuracy matrix, against fp64 and against PyTorch.

flash-attention's test of its forward and backward (tests/test_flash_attn.py, test_flash_attn_output,
v2.5.9.post1) is the bar a FlashAttention implementation is held to. Its recipe, written out here:
- batch 4, 9 query heads, 9 / 3 / 1 KV heads (MHA, GQA, MQA), d 64 and 128, causal and not, and ten
  (seqlen_q, seqlen_k) pairs from 113 x 203 to 2048 x 2048; causal is aligned at the bottom right;
- inputs drawn in bf16 with torch.randn in the layout [batch, seqlen, heads, d] after
  torch.random.manual_seed(0): q, then k, then v, then the upstream gradient dout;
- its criterion: the kernel's largest absolute error against the reference is at most twice the
  largest error of PyTorch computing the same attention in bf16 (`attention_ref(upcast=False,
  reorder_ops=True)`), for out, dq, dk and dv.
The reference here is fp64 on the same bf16 inputs (flash-attention's is fp32). Beside its bf16
eager path, PyTorch's scaled_dot_product_attention in bf16 is the second yardstick for the forward:
the ladder's forward is held to at most twice its error too. Our own, tighter bound: the relative
error ||out - ref|| / ||ref|| within the chapters' bf16 bounds (common/compare.h).

LADDER_ACCURACY_JSON=<file> writes every case's errors (the figures of the README's correctness
sections). Needs a GPU, PyTorch and the built module (chapter 12 and 14's kernels: an H100/H200).
"""
import json
import math
import os

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the accuracy matrix needs it")
import flash_ladder as fl  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GPU = torch.cuda.is_available()
HOPPER = GPU and fl.hopper()  # (an H100 capped by LADDER_DEVICE_LIMITS is the GPU it emulates)
needs_gpu = pytest.mark.skipif(not GPU or bool(fl.module_error()),
                               reason="needs a CUDA GPU and the built module: " + (fl.module_error() or "no GPU"))

SEQLENS = [(113, 203), (128, 217), (113, 211), (108, 256), (256, 512), (512, 256), (1024, 1024), (1023, 1024),
           (1024, 1023), (2048, 2048)]
BATCH, NHEADS = 4, 9
KV_HEADS = {"mha": 9, "gqa": 3, "mqa": 1}
# The chapters' relative-error bounds for bf16 attention (common/compare.h, tests/test_ops.py).
FWD_BOUND, GRAD_BOUND = 5e-3, 1e-2

# The kernels held to the matrix: (name, chapter, step). Every bf16 forward has FA2's exact running
# max (chapter 12's WORKLOG.md, "Correctness": FA4's rule failed this matrix in bf16).
FORWARDS = [("10", "fa2", "")] + [("12:" + s, "fa3", s) for s in ("tma", "warpspec", "pingpong", "intrawg",
                                                                     "persistent")]
BACKWARDS = [("10:atomic", "fa2", "atomic"), ("10:deterministic", "fa2", "deterministic"),
             ("14:atomic", "fa3", "atomic"), ("14:bulk", "fa3", "bulk"), ("14:deterministic", "fa3", "deterministic")]
RESULTS = []


def flash_attn_inputs(seqlen_q, seqlen_k, kv_heads, d):
    """flash-attention's draw: bf16 randn in [batch, seqlen, heads, d], seed 0; returned as [B, H, N, d]."""
    torch.random.manual_seed(0)
    q = torch.randn(BATCH, seqlen_q, NHEADS, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(BATCH, seqlen_k, kv_heads, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(BATCH, seqlen_k, kv_heads, d, device="cuda", dtype=torch.bfloat16)
    dout = torch.randn(BATCH, seqlen_q, NHEADS, d, device="cuda", dtype=torch.bfloat16)
    return tuple(t.transpose(1, 2).contiguous() for t in (q, k, v, dout))


def visible(seqlen_q, seqlen_k, causal):
    """[N_q, N_k] bool: key j seen by query i (causal: j <= i + N_k - N_q, bottom-right)."""
    if not causal:
        return torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device="cuda")
    i = torch.arange(seqlen_q, device="cuda")[:, None]
    j = torch.arange(seqlen_k, device="cuda")[None, :]
    return j <= i + (seqlen_k - seqlen_q)


def eager(q, k, v, allowed, dtype):
    """Attention in PyTorch operations in `dtype` (flash-attention's attention_ref with reorder_ops=True:
    fp64 here for the reference; bf16 for its yardstick). Rows that see no key
    give 0, as flash-attention's kernels and reference do. GQA: each KV head repeated over its group."""
    g = q.shape[1] // k.shape[1]
    q, k, v = q.to(dtype), k.to(dtype).repeat_interleave(g, 1), v.to(dtype).repeat_interleave(g, 1)
    scores = q @ (k / math.sqrt(q.shape[-1])).transpose(-1, -2)  # reorder_ops: the scale on k
    seen = allowed.any(-1, keepdim=True)  # a row without keys: finite scores, then P = 0 (no NaN in autograd)
    scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(~seen, 0.0)
    p = torch.softmax(scores, dim=-1).masked_fill(~seen, 0.0)
    return p.to(dtype) @ v


def sdpa_bf16(q, k, v, allowed):
    """PyTorch's scaled_dot_product_attention in bf16, whichever backend it picks for the case (with an
    explicit mask where the bottom-right causal diagonal is not SDPA's top-left one); rows without keys 0."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    if bool(allowed.all()):
        o = F.scaled_dot_product_attention(q, k, v)
    elif allowed.shape[0] == allowed.shape[1]:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    return torch.nan_to_num(o.masked_fill(~allowed.any(-1)[:, None], 0.0), nan=0.0)


def max_err(x, ref):
    return (x.double() - ref).abs().max().item()


def rel(x, ref):
    return ((x.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def shape_of(q, k):
    s = fl.ops._module().AttentionShape()
    s.B, s.H, s.N, s.d = q.shape
    s.H_kv, s.N_kv = k.shape[1], k.shape[2]
    return s


def run_forward(chapter, step, q, k, v, causal):
    o = torch.full_like(q, float("nan"))  # poisoned: an element a kernel skips cannot pass
    lse = torch.full(q.shape[:3], float("nan"), dtype=torch.float32, device="cuda")
    fl.ops._module().chapter_forward(chapter, step, False, shape_of(q, k), causal, q.data_ptr(), k.data_ptr(),
                                     v.data_ptr(), o.data_ptr(), lse.data_ptr(), torch.cuda.current_stream().cuda_stream)
    return o, lse


def run_backward(chapter, step, q, k, v, o, lse, dout, causal):
    s = shape_of(q, k)
    dq, dk, dv = (torch.full_like(t, float("nan")) for t in (q, k, v))
    ws = torch.full((fl.ops._module().chapter_backward_workspace_floats(chapter, s, causal),), float("nan"),
                    dtype=torch.float32, device="cuda")
    fl.ops._module().chapter_backward(chapter, step, s, causal, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                      lse.data_ptr(), dout.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                                      ws.data_ptr(), torch.cuda.current_stream().cuda_stream)
    return dq, dk, dv


CASES = [(d, causal, mha, sq, sk) for d in (64, 128) for causal in (False, True) for mha in KV_HEADS
         for sq, sk in SEQLENS]


@needs_gpu
@pytest.mark.parametrize("d, causal, mha_type, seqlen_q, seqlen_k", CASES,
                         ids=[f"d{c[0]}-{'causal' if c[1] else 'dense'}-{c[2]}-{c[3]}x{c[4]}" for c in CASES])
def test_flash_attention_matrix(d, causal, mha_type, seqlen_q, seqlen_k):
    q, k, v, dout = flash_attn_inputs(seqlen_q, seqlen_k, KV_HEADS[mha_type], d)
    allowed = visible(seqlen_q, seqlen_k, causal)
    # The fp64 reference and its gradients (autograd on the upcast inputs).
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    out64 = eager(q64, k64, v64, allowed, torch.float64)
    out64.backward(dout.double())
    ref = {"out": out64.detach(), "dq": q64.grad, "dk": k64.grad, "dv": v64.grad}
    # flash-attention's yardstick: the same attention in bf16 PyTorch operations, and its gradients.
    qb, kb, vb = (t.clone().requires_grad_() for t in (q, k, v))
    out_pt = eager(qb, kb, vb, allowed, torch.bfloat16)
    out_pt.backward(dout)
    pt = {"out": max_err(out_pt, ref["out"]), "dq": max_err(qb.grad, ref["dq"]), "dk": max_err(kb.grad, ref["dk"]),
          "dv": max_err(vb.grad, ref["dv"])}
    sdpa = max_err(sdpa_bf16(q, k, v, allowed), ref["out"])
    case = dict(d=d, causal=causal, mha_type=mha_type, seqlen_q=seqlen_q, seqlen_k=seqlen_k, pt=pt, sdpa_out=sdpa,
                kernels={})
    failures = []
    saved = {}  # the backward's O and L: its own chapter's forward (chapter 12's default step for 14)
    for name, chapter, step in FORWARDS:
        if chapter == "fa3" and not HOPPER:
            continue
        o, lse = run_forward(chapter, step, q, k, v, causal)
        e, r = max_err(o, ref["out"]), rel(o, ref["out"])
        case["kernels"][name] = dict(out=e, out_rel=r, vs_pt=e / pt["out"], vs_sdpa=e / sdpa)
        if not (e <= 2 * pt["out"]):
            failures.append(f"{name} out: max error {e:.3g} > 2 x PyTorch bf16's {pt['out']:.3g}")
        if not (e <= 2 * sdpa):
            failures.append(f"{name} out: max error {e:.3g} > 2 x SDPA bf16's {sdpa:.3g}")
        if not (r <= FWD_BOUND):
            failures.append(f"{name} out: relative error {r:.3g} > {FWD_BOUND}")
        if chapter == "fa2" or step == "intrawg":
            saved[chapter] = (o, lse)
    for name, chapter, step in BACKWARDS:
        if chapter == "fa3" and not HOPPER:
            continue
        grads = dict(zip(("dq", "dk", "dv"), run_backward(chapter, step, q, k, v, *saved[chapter], dout, causal)))
        entry = {}
        for g, x in grads.items():
            e, r = max_err(x, ref[g]), rel(x, ref[g])
            entry[g], entry[g + "_rel"], entry[g + "_vs_pt"] = e, r, e / pt[g]
            if not (e <= 2 * pt[g]):
                failures.append(f"{name} {g}: max error {e:.3g} > 2 x PyTorch bf16's {pt[g]:.3g}")
            if not (r <= GRAD_BOUND):
                failures.append(f"{name} {g}: relative error {r:.3g} > {GRAD_BOUND}")
        case["kernels"][name] = entry
    RESULTS.append(case)
    assert not failures, "\n".join(failures)


def teardown_module(module):
    path = os.environ.get("LADDER_ACCURACY_JSON")
    if path and RESULTS:
        with open(path, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "cases": RESULTS}, f,
                      indent=1)
