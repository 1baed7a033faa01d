"""FlashAttention-2, forward and backward, in Triton: beside chapters 06 (FA2's loop order), 07 (the
backward) and 10 (FA2 on tensor cores, GQA, causal block skipping).

    o = attention(q, k, v, causal=True)        # autograd: o.backward(do) fills q.grad, k.grad, v.grad
    o, L = forward(q, k, v, causal=True)       # the forward alone, with L = logsumexp of each row

q: [B, H, N_q, d], k and v: [B, H_kv, N_kv, d] (the layout of torch's scaled_dot_product_attention),
fp16 or bf16, d = 64 or 128. GQA: H_kv divides H and query head h reads KV head h // (H / H_kv).
Causal is aligned at the bottom right, as flash-attention does: query row r sees keys c <= r + N_kv - N_q
(the usual mask when N_q == N_kv); causal needs N_q <= N_kv, so that every row sees a key.

Names are the papers' (FA2, Dao 2023, Algorithms 1 and 2): a program owns a query tile Q_i of B_r rows
and walks the key/value tiles K_j, V_j of B_c rows, keeping the running max m_i, the running sum l_i and
the unnormalised output O_i on chip (chapter 06). The scores S = Q_i K_j^T never reach DRAM; what
leaves the forward is O and L = m + log(l) per row (4 bytes a row), from which the backward recomputes
P exactly (chapter 07's P-from-L identity).

What Triton chooses for us, and the chapters write by hand: the registers each tile lives in, the
shared-memory layout and its swizzle, the copies' pipeline (num_stages), the tensor-core instructions
(mma.sync on sm_80-89 as chapter 10, wgmma on sm_90 as chapter 12) and whether P is kept in registers
for the second matmul (chapter 10's P reuse). chosen.py prints what it chose.
"""
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634  # exp(x) = exp2(x * log2 e): the GPU's ex2 instruction is the fast one

# Tiles, warps and stages per head dim, for GPUs with at least 99 KiB of shared memory per block (RTX 30/40/50,
# A100, H100). forward: B_r query rows per program, B_c keys per step. dkdv: B_c keys per program (its dK_j,
# dV_j accumulators), B_r query rows per step. dq: B_r query rows per program, B_c keys per step.
CONFIGS = {
    64: dict(fwd=dict(B_r=64, B_c=64, num_warps=4, num_stages=2),
             dkdv=dict(B_r=32, B_c=64, num_warps=4, num_stages=2),
             dq=dict(B_r=64, B_c=32, num_warps=4, num_stages=2)),
    128: dict(fwd=dict(B_r=64, B_c=32, num_warps=4, num_stages=2),
              dkdv=dict(B_r=32, B_c=64, num_warps=4, num_stages=2),
              dq=dict(B_r=64, B_c=32, num_warps=4, num_stages=2)),
}
# A T4 has 64 KiB per block: at d = 128 the backward's tiles above compile to 80 KiB for sm_75 (52 KiB for
# sm_86: the same tiles, Triton lays them out otherwise for the older tensor cores), so the backward takes
# smaller ones there, as the chapters' launchers do. chosen.py compiles every configuration for sm_90, sm_86 and sm_75 and prints the bytes.
CONFIGS_64K = {
    128: dict(dkdv=dict(B_r=32, B_c=32, num_warps=4, num_stages=2),
              dq=dict(B_r=32, B_c=32, num_warps=4, num_stages=2)),
}
SMALL_SMEM = 64 << 10


def configs(d, smem_per_block=None):
    """The configurations for head dim d on a GPU with smem_per_block bytes of shared memory per block
    (None: a GPU with at least 99 KiB)."""
    cfg = dict(CONFIGS[d])
    if smem_per_block is not None and smem_per_block <= SMALL_SMEM:
        cfg.update(CONFIGS_64K.get(d, {}))
    return cfg


def _smem(t):
    """The opt-in shared memory per block of t's GPU; None on the CPU (the interpreter)."""
    if not t.is_cuda:
        return None
    return torch.cuda.get_device_properties(t.device).shared_memory_per_block_optin


@triton.jit
def fwd_kernel(Q, K, V, O, L, qk_scale, N_q, N_kv, H, GROUP,
               s_qb, s_qh, s_qn, s_kb, s_kh, s_kn, s_vb, s_vh, s_vn, s_ob, s_oh, s_on,
               D: tl.constexpr, B_r: tl.constexpr, B_c: tl.constexpr, CAUSAL: tl.constexpr):
    i = tl.program_id(0)  # the query tile: FA2's outer loop is the grid (chapter 06)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    h_kv = h // GROUP  # GQA: GROUP query heads share one K, V head; nothing is copied (chapter 10)
    rows = i * B_r + tl.arange(0, B_r)
    cols0 = tl.arange(0, B_c)
    dims = tl.arange(0, D)
    Q_i = tl.load(Q + b * s_qb + h * s_qh + rows[:, None] * s_qn + dims[None, :], mask=rows[:, None] < N_q,
                  other=0.0)
    K_base = K + b * s_kb + h_kv * s_kh
    V_base = V + b * s_vb + h_kv * s_vh
    # Row statistics in fp32 and in base 2: S is scaled by qk_scale = log2(e)/sqrt(d) once, after the dot.
    m_i = tl.full([B_r], float("-inf"), tl.float32)
    l_i = tl.zeros([B_r], tl.float32)
    O_i = tl.zeros([B_r, D], tl.float32)
    shift = N_kv - N_q  # bottom-right causal alignment
    if CAUSAL:
        # Causal block skipping: no key tile right of this query tile's last row is read at all.
        hi = tl.minimum(N_kv, (i + 1) * B_r + shift)
    else:
        hi = N_kv
    for start in range(0, hi, B_c):
        cols = start + cols0
        K_jT = tl.load(K_base + cols[None, :] * s_kn + dims[:, None], mask=cols[None, :] < N_kv, other=0.0)
        S = tl.dot(Q_i, K_jT) * qk_scale  # [B_r, B_c] on tensor cores, accumulated in fp32
        valid = cols[None, :] < N_kv  # the tail tile: keys past N_kv do not exist
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None] + shift)
        S = tl.where(valid, S, float("-inf"))
        # The online softmax (chapter 04): every row saw key 0 in the first tile, so m_new is finite.
        m_new = tl.maximum(m_i, tl.max(S, 1))
        alpha = tl.math.exp2(m_i - m_new)  # rescale what was summed under the old max (0 on the first tile)
        P = tl.math.exp2(S - m_new[:, None])  # P~ of FA2: unnormalised, in [0, 1]
        l_i = l_i * alpha + tl.sum(P, 1)
        V_j = tl.load(V_base + cols[:, None] * s_vn + dims[None, :], mask=cols[:, None] < N_kv, other=0.0)
        # FA2's one rescale per step and no division in the loop (FA1 divided every step: chapter 06).
        # P~ goes to the second matmul in the inputs' dtype, as the CUDA kernels do.
        O_i = tl.dot(P.to(V_j.dtype), V_j, O_i * alpha[:, None])
        m_i = m_new
    O_i = O_i / l_i[:, None]  # the one division, at the end
    tl.store(O + b * s_ob + h * s_oh + rows[:, None] * s_on + dims[None, :], O_i.to(O.dtype.element_ty),
             mask=rows[:, None] < N_q)
    # L = m + log l in natural units (m_i is in units of log2): the backward's P = exp(S/sqrt(d) - L).
    tl.store(L + bh * N_q + rows, (m_i + tl.math.log2(l_i)) * 0.6931471805599453, mask=rows < N_q)


@triton.jit
def bwd_preprocess_kernel(O, dO, Dl, N_q, H, s_ob, s_oh, s_on, s_db, s_dh, s_dn,
                          D: tl.constexpr, B_r: tl.constexpr):
    # D_i = rowsum(dO_i * O_i) (FA2 Algorithm 2, line 4): the softmax's Jacobian term sum_j P_ij dP_ij,
    # computed once from O instead of from P in every tile (chapter 07).
    i = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rows = i * B_r + tl.arange(0, B_r)
    dims = tl.arange(0, D)
    m = rows[:, None] < N_q
    o = tl.load(O + b * s_ob + h * s_oh + rows[:, None] * s_on + dims[None, :], mask=m, other=0.0)
    do = tl.load(dO + b * s_db + h * s_dh + rows[:, None] * s_dn + dims[None, :], mask=m, other=0.0)
    tl.store(Dl + bh * N_q + rows, tl.sum(o.to(tl.float32) * do.to(tl.float32), 1), mask=rows < N_q)


@triton.jit
def bwd_dkdv_kernel(Q, K, V, dO, L, Dl, dK, dV, sm_scale, qk_scale, N_q, N_kv, H, H_kv, GROUP,
                    s_qb, s_qh, s_qn, s_kb, s_kh, s_kn, s_vb, s_vh, s_vn, s_db, s_dh, s_dn,
                    D: tl.constexpr, B_r: tl.constexpr, B_c: tl.constexpr, CAUSAL: tl.constexpr):
    # One program per key tile K_j, V_j (FA2's backward: the outer loop over j). dK_j and dV_j stay in
    # registers while every query tile Q_i that sees K_j streams past: no atomics for dK, dV. Under GQA
    # the program also walks the GROUP query heads of its KV head, so their sum is taken here, in fp32.
    j = tl.program_id(0)
    bh_kv = tl.program_id(1)
    b = bh_kv // H_kv
    h_kv = bh_kv % H_kv
    cols = j * B_c + tl.arange(0, B_c)
    rows0 = tl.arange(0, B_r)
    dims = tl.arange(0, D)
    kmask = cols[:, None] < N_kv
    K_j = tl.load(K + b * s_kb + h_kv * s_kh + cols[:, None] * s_kn + dims[None, :], mask=kmask, other=0.0)
    V_j = tl.load(V + b * s_vb + h_kv * s_vh + cols[:, None] * s_vn + dims[None, :], mask=kmask, other=0.0)
    dK_j = tl.zeros([B_c, D], tl.float32)
    dV_j = tl.zeros([B_c, D], tl.float32)
    shift = N_kv - N_q
    lo = 0
    if CAUSAL:
        # The first query row that sees key j*B_c is j*B_c - shift: earlier query tiles are skipped.
        lo = (tl.maximum(j * B_c - shift, 0) // B_r) * B_r
    for g in range(0, GROUP):
        h = h_kv * GROUP + g
        bh = b * H + h
        Q_base = Q + b * s_qb + h * s_qh
        dO_base = dO + b * s_db + h * s_dh
        for start in range(lo, N_q, B_r):
            rows = start + rows0
            qmask = rows[:, None] < N_q
            Q_i = tl.load(Q_base + rows[:, None] * s_qn + dims[None, :], mask=qmask, other=0.0)
            dO_i = tl.load(dO_base + rows[:, None] * s_dn + dims[None, :], mask=qmask, other=0.0)
            L_i = tl.load(L + bh * N_q + rows, mask=rows < N_q, other=0.0)
            D_i = tl.load(Dl + bh * N_q + rows, mask=rows < N_q, other=0.0)
            # Work with the transposes (S^T = K_j Q_i^T, [B_c, B_r]) so that P^T and dS^T are the left
            # operands of the matmuls into dV_j and dK_j, which this program owns.
            S_T = tl.dot(K_j, tl.trans(Q_i)) * qk_scale
            # P recomputed from L: exp(S/sqrt(d) - L), the softmax exactly, with no max or sum (chapter 07).
            P_T = tl.math.exp2(S_T - L_i[None, :] * 1.4426950408889634)
            valid = (rows[None, :] < N_q) & (cols[:, None] < N_kv)
            if CAUSAL:
                valid = valid & (cols[:, None] <= rows[None, :] + shift)
            P_T = tl.where(valid, P_T, 0.0)
            dV_j = tl.dot(P_T.to(dO_i.dtype), dO_i, dV_j)  # dV = P^T dO
            dP_T = tl.dot(V_j, tl.trans(dO_i))  # dP = dO V^T, transposed
            dS_T = P_T * (dP_T - D_i[None, :])  # dS = P o (dP - D)
            dK_j = tl.dot(dS_T.to(Q_i.dtype), Q_i, dK_j)  # dK = dS^T Q (times the scale, below)
    dK_j = dK_j * sm_scale
    out = cols[:, None] * s_kn + dims[None, :]
    tl.store(dK + b * s_kb + h_kv * s_kh + out, dK_j.to(dK.dtype.element_ty), mask=kmask)
    tl.store(dV + b * s_vb + h_kv * s_vh + cols[:, None] * s_vn + dims[None, :], dV_j.to(dV.dtype.element_ty),
             mask=kmask)


@triton.jit
def bwd_dq_kernel(Q, K, V, dO, L, Dl, dQ, sm_scale, qk_scale, N_q, N_kv, H, GROUP,
                  s_qb, s_qh, s_qn, s_kb, s_kh, s_kn, s_vb, s_vh, s_vn, s_db, s_dh, s_dn,
                  D: tl.constexpr, B_r: tl.constexpr, B_c: tl.constexpr, CAUSAL: tl.constexpr):
    # One program per query tile Q_i, dQ_i in registers: the loop order of the forward. It recomputes S
    # and P a second time (the dK/dV kernel did too): FA2's price for a dQ without atomics, which
    # chapter 07 measures against the atomic variant (one kernel, dQ added with atomicAdd).
    i = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    h_kv = h // GROUP
    rows = i * B_r + tl.arange(0, B_r)
    cols0 = tl.arange(0, B_c)
    dims = tl.arange(0, D)
    qmask = rows[:, None] < N_q
    Q_i = tl.load(Q + b * s_qb + h * s_qh + rows[:, None] * s_qn + dims[None, :], mask=qmask, other=0.0)
    dO_i = tl.load(dO + b * s_db + h * s_dh + rows[:, None] * s_dn + dims[None, :], mask=qmask, other=0.0)
    L_i = tl.load(L + bh * N_q + rows, mask=rows < N_q, other=0.0)
    D_i = tl.load(Dl + bh * N_q + rows, mask=rows < N_q, other=0.0)
    K_base = K + b * s_kb + h_kv * s_kh
    V_base = V + b * s_vb + h_kv * s_vh
    dQ_i = tl.zeros([B_r, D], tl.float32)
    shift = N_kv - N_q
    if CAUSAL:
        hi = tl.minimum(N_kv, (i + 1) * B_r + shift)
    else:
        hi = N_kv
    for start in range(0, hi, B_c):
        cols = start + cols0
        kmask = cols[:, None] < N_kv
        K_j = tl.load(K_base + cols[:, None] * s_kn + dims[None, :], mask=kmask, other=0.0)
        V_j = tl.load(V_base + cols[:, None] * s_vn + dims[None, :], mask=kmask, other=0.0)
        S = tl.dot(Q_i, tl.trans(K_j)) * qk_scale
        P = tl.math.exp2(S - L_i[:, None] * 1.4426950408889634)
        valid = cols[None, :] < N_kv
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None] + shift)
        P = tl.where(valid, P, 0.0)
        dP = tl.dot(dO_i, tl.trans(V_j))
        dS = P * (dP - D_i[:, None])
        dQ_i = tl.dot(dS.to(K_j.dtype), K_j, dQ_i)  # dQ = dS K (times the scale, below)
    dQ_i = dQ_i * sm_scale
    tl.store(dQ + b * s_qb + h * s_qh + rows[:, None] * s_qn + dims[None, :], dQ_i.to(dQ.dtype.element_ty),
             mask=qmask)


def _check(q, k, v, causal):
    if not (q.dim() == 4 and k.dim() == 4 and v.shape == k.shape):
        raise ValueError("attention: q [B, H, N_q, d], k = v [B, H_kv, N_kv, d]")
    B, H, N_q, d = q.shape
    if not (k.shape[0] == B and k.shape[3] == d):
        raise ValueError("attention: q, k, v disagree on B or d")
    if not (d in CONFIGS):
        raise ValueError(f"attention: d = {d}; this companion has configurations for d in {sorted(CONFIGS)}")
    if not (q.dtype in (torch.float16, torch.bfloat16) and k.dtype == q.dtype == v.dtype):
        raise ValueError("attention: q, k, v must all be fp16 or all bf16")
    if not (H % k.shape[1] == 0):
        raise ValueError(f"attention: H_kv = {k.shape[1]} must divide H = {H} (GQA)")
    if not (not causal or N_q <= k.shape[2]):
        raise ValueError("attention: causal needs N_q <= N_kv (every row sees a key)")
    if q.is_cuda and q.dtype == torch.bfloat16 and torch.cuda.get_device_capability(q.device)[0] < 8:
        raise RuntimeError("attention: bf16 needs sm_80 or newer; on a T4 (sm_75) use fp16")


def _strides(t):
    return t.stride(0), t.stride(1), t.stride(2)


def forward(q, k, v, causal=False, sm_scale=None):
    """(O, L): FA2's forward; L = logsumexp of each row of S * sm_scale, fp32 [B, H, N_q]."""
    q, k, v = (t.contiguous() for t in (q, k, v))
    _check(q, k, v, causal)
    B, H, N_q, d = q.shape
    H_kv, N_kv = k.shape[1], k.shape[2]
    sm_scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    o = torch.empty_like(q)
    L = torch.empty((B, H, N_q), device=q.device, dtype=torch.float32)
    cfg = configs(d, _smem(q))["fwd"]
    grid = (triton.cdiv(N_q, cfg["B_r"]), B * H)
    fwd_kernel[grid](q, k, v, o, L, sm_scale * LOG2E, N_q, N_kv, H, H // H_kv, *_strides(q), *_strides(k),
                     *_strides(v), *_strides(o), D=d, CAUSAL=causal, **cfg)
    return o, L


def backward(q, k, v, o, L, do, causal=False, sm_scale=None):
    """(dQ, dK, dV): FA2's backward, three kernels (D, then dK/dV, then dQ), deterministic."""
    q, k, v, o, do = (t.contiguous() for t in (q, k, v, o, do))
    B, H, N_q, d = q.shape
    H_kv, N_kv = k.shape[1], k.shape[2]
    sm_scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    cfgs = configs(d, _smem(q))
    Dl = torch.empty_like(L)
    B_r = cfgs["dq"]["B_r"]
    bwd_preprocess_kernel[(triton.cdiv(N_q, B_r), B * H)](o, do, Dl, N_q, H, *_strides(o), *_strides(do), D=d,
                                                          B_r=B_r)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    c = cfgs["dkdv"]
    bwd_dkdv_kernel[(triton.cdiv(N_kv, c["B_c"]), B * H_kv)](
        q, k, v, do, L, Dl, dk, dv, sm_scale, sm_scale * LOG2E, N_q, N_kv, H, H_kv, H // H_kv, *_strides(q),
        *_strides(k), *_strides(v), *_strides(do), D=d, CAUSAL=causal, **c)
    c = cfgs["dq"]
    bwd_dq_kernel[(triton.cdiv(N_q, c["B_r"]), B * H)](
        q, k, v, do, L, Dl, dq, sm_scale, sm_scale * LOG2E, N_q, N_kv, H, H // H_kv, *_strides(q),
        *_strides(k), *_strides(v), *_strides(do), D=d, CAUSAL=causal, **c)
    return dq, dk, dv


class FlashAttention2(torch.autograd.Function):
    """Autograd: the forward saves Q, K, V, O and L (not P: O(N) memory), the backward recomputes P."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False, sm_scale=None):
        o, L = forward(q, k, v, causal, sm_scale)
        ctx.save_for_backward(q, k, v, o, L)
        ctx.causal, ctx.sm_scale = causal, sm_scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, L = ctx.saved_tensors
        dq, dk, dv = backward(q, k, v, o, L, do, ctx.causal, ctx.sm_scale)
        return dq, dk, dv, None, None


def attention(q, k, v, causal=False, sm_scale=None):
    """softmax(q k^T * sm_scale [+ causal mask]) v, differentiable; sm_scale defaults to 1/sqrt(d)."""
    return FlashAttention2.apply(q, k, v, causal, sm_scale)
