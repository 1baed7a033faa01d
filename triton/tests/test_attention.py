"""attention.py (FA2 forward and backward) against fp64, with flash-attention's 2x criterion.

The criterion (flash-attention's tests/test_flash_attn.py and hopper/test_flash_attn.py): on the same
inputs, the largest error of our O, dQ, dK, dV against an fp64 reference is at most twice the largest
error of PyTorch's own attention in the same dtype (here scaled_dot_product_attention, on the same
device: the CPU in interpreter mode), plus twice the rounding noise of one addition in that dtype
(env.rounding_atol). Shapes are not multiples of the tiles: N = 1 (one key: O = V), 17 and 77.
"""
import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the companion's tests need it")
pytest.importorskip("triton", reason="Triton is not installed: the companion's tests need it")
import companion_env as env  # noqa: E402
import attention as A  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def causal_mask(N_q, N_kv, device):
    """Bottom-right aligned, as attention.py and flash-attention: row r sees keys c <= r + N_kv - N_q."""
    r = torch.arange(N_q, device=device)[:, None]
    c = torch.arange(N_kv, device=device)[None, :]
    return c <= r + (N_kv - N_q)


def reference(q, k, v, do, causal):
    """fp64 attention and its gradients, on the same (rounded) inputs; GQA by repeating K and V."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    kr, vr = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ kr.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(~causal_mask(q.shape[2], k.shape[2], q.device), float("-inf"))
    L = torch.logsumexp(s, -1)
    o = torch.softmax(s, -1) @ vr
    o.backward(do.double())
    return o.detach(), L.detach(), q.grad, k.grad, v.grad


def pytorch_same_dtype(q, k, v, do, causal):
    """PyTorch's scaled_dot_product_attention in the inputs' dtype: the yardstick of the 2x criterion."""
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    kw = dict(enable_gqa=True) if q.shape[1] != k.shape[1] else {}
    if causal and q.shape[2] == k.shape[2]:
        kw["is_causal"] = True  # the flash backend where there is one (its mask is top-left: the same here)
    elif causal:
        kw["attn_mask"] = causal_mask(q.shape[2], k.shape[2], q.device)
    o = F.scaled_dot_product_attention(q, k, v, **kw)
    o.backward(do)
    return o.detach(), q.grad, k.grad, v.grad


def inputs(B, H, H_kv, N_q, N_kv, d, dtype, seed=0):
    if dtype == "bf16" and (env.bf16_dot_skip() or env.bf16_gpu_skip()):
        pytest.skip(env.bf16_dot_skip() or env.bf16_gpu_skip())
    g = torch.Generator().manual_seed(seed)
    t = lambda *s: torch.randn(*s, generator=g).to(DTYPES[dtype]).to(env.DEVICE)  # noqa: E731
    return t(B, H, N_q, d), t(B, H_kv, N_kv, d), t(B, H_kv, N_kv, d), t(B, H, N_q, d)


def check(B, H, H_kv, N_q, N_kv, d, causal, dtype, backward=True):
    q, k, v, do = inputs(B, H, H_kv, N_q, N_kv, d, dtype)
    o_ref, L_ref, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal)
    o, L = A.forward(q, k, v, causal)
    # L = logsumexp of each row: fp32, from scores accumulated in fp32 (the inputs are exact in fp64).
    assert env.max_err(L, L_ref) <= 1e-4 * (1 + L_ref.abs().max().item()), "L is not the rows' logsumexp"
    got = {"O": o}
    if backward:
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        A.attention(qq, kk, vv, causal).backward(do)
        got.update(dQ=qq.grad, dK=kk.grad, dV=vv.grad)
    pt = dict(zip(("O", "dQ", "dK", "dV"), pytorch_same_dtype(q, k, v, do, causal)))
    ref = {"O": o_ref, "dQ": dq_ref, "dK": dk_ref, "dV": dv_ref}
    report = []
    for name, x in got.items():
        assert x.dtype == q.dtype and x.shape == ref[name].shape
        ours, theirs = env.max_err(x, ref[name]), env.max_err(pt[name], ref[name])
        atol = env.rounding_atol(ref[name], x.dtype)
        report.append(f"{name}: ours {ours:.2e}, PyTorch {theirs:.2e}")
        assert ours <= 2 * theirs + atol, f"{name}: error {ours:.3g} > 2 x PyTorch's {theirs:.3g} + {atol:.3g}"
    print("; ".join(report))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
@pytest.mark.parametrize("N", [1, 17, 77])
def test_mha_d64(N, causal, dtype):
    check(1, 2, 2, N, N, 64, causal, dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
@pytest.mark.parametrize("H,H_kv", [(4, 2), (3, 1)], ids=["gqa4:2", "mqa3:1"])
def test_gqa_d64(H, H_kv, causal, dtype):
    check(2, H, H_kv, 77, 77, 64, causal, dtype)


@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_fewer_queries_than_keys(causal):
    # Decoding-like: 17 queries against 77 keys; causal aligned at the bottom right.
    check(1, 2, 1, 17, 77, 64, causal, "fp16")


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_d128(causal, dtype):
    check(1, 2, 1, 77, 77, 128, causal, dtype)


def test_backward_is_deterministic():
    # dQ, dK, dV are each written by exactly one program (no atomics): two runs agree bit for bit.
    q, k, v, do = inputs(1, 4, 2, 77, 77, 64, "fp16", seed=3)
    o, L = A.forward(q, k, v, True)
    first = A.backward(q, k, v, o, L, do, True)
    second = A.backward(q, k, v, o, L, do, True)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_refuses_what_it_has_no_configuration_for():
    q = torch.zeros(1, 2, 8, 96, dtype=torch.float16, device=env.DEVICE)
    with pytest.raises(ValueError, match="d = 96"):
        A.forward(q, q, q)
    q = torch.zeros(1, 3, 8, 64, dtype=torch.float16, device=env.DEVICE)
    k = torch.zeros(1, 2, 8, 64, dtype=torch.float16, device=env.DEVICE)
    with pytest.raises(ValueError, match="must divide"):
        A.forward(q, k, k)


@pytest.mark.gpu
@pytest.mark.skipif(not env.GPU or env.INTERPRET, reason="needs a CUDA GPU (the interpreter would take minutes)")
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_larger_shapes_on_gpu(causal, d, dtype):
    # flash-attention's shapes' spirit: several tiles, tails on both sides, GQA.
    check(2, 6, 2, 1000, 1000, d, causal, dtype)
    check(2, 4, 4, 113, 203, d, causal, dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not env.GPU or env.INTERPRET or torch.cuda.get_device_capability()[0] >= 8,
                    reason="a T4 (sm_75) check: bf16 is refused there with the reason")
def test_t4_refuses_bf16():
    q = torch.zeros(1, 1, 8, 64, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(RuntimeError, match="fp16"):
        A.forward(q, q, q)
