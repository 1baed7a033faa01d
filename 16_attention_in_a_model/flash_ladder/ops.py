"""The operators: tensors checked and allocated here, the kernels called through flash_ladder._C.

What a caller can rely on: every tensor the kernels read is checked before any launch, in the
registered operators themselves and in their fake implementations (device, dtype, shape and
contiguity of q, k, v, the document ids, the ALiBi slopes, and the backward's O, L and dO), so
no path around attention() reaches a kernel unchecked; anything else raises ValueError (a wrong
value) or TypeError (a wrong type) naming what is supported, before anything is allocated. The
kernels run on PyTorch's current stream of the tensors' device, with memory from PyTorch's
caching allocator, and nothing synchronises the host: the values of cu_seqlens and of document
ids are not read back (that would stall the stream). Any values are safe to read; offsets that
do not rise from 0 to N describe documents other than the ones meant.
"""

import importlib
import math
import os
from typing import Optional

import torch
from torch import Tensor

try:
    _C = importlib.import_module(__package__ + "._C")
except ImportError as e:  # a source checkout without the built module: the checks still work
    _C = None
    _C_ERROR = f"flash_ladder._C is not built ({e}); build it with `pip install .` at the repository root"
else:
    _C_ERROR = ""

SUPPORTED_D = (64, 128)
MASKS = ("none", "causal", "sliding_window", "prefix_lm", "documents")
SCORE_MODS = ("none", "softcap", "alibi")
PAGE_SIZES = (16, 64)
MAX_DECODE_QUERIES = 16


def module_error() -> str:
    """Empty when the kernels can be called; otherwise why not."""
    return _C_ERROR


def describe_device() -> str:
    """The GPU as the ladder's tables name it: "NVIDIA H200 (sm_90, 132 SMs, ...)"."""
    return _module().describe_device()


def hopper() -> bool:
    """Whether this process's GPU runs chapters 12, 14 and 15's kernels (sm_90a) as the C++ side sees it: an
    H100/H200 whose limits LADDER_DEVICE_LIMITS caps to another GPU's (common/device.h) counts as that GPU."""
    return (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
            and not os.environ.get("LADDER_DEVICE_LIMITS"))


def _module():
    if _C is None:
        raise RuntimeError(_C_ERROR)
    return _C


def _check(name: str, t: Tensor, dims: int, dtype=torch.bfloat16):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type not in ("cuda", "meta"):  # meta: shapes only, for tracing and fake tensors
        raise ValueError(f"{name}: a {t.device.type} tensor; flash_ladder's kernels take CUDA tensors only")
    if t.dtype != dtype:
        raise ValueError(f"{name}: dtype {t.dtype}; supported: {dtype}")
    if t.dim() != dims:
        raise ValueError(f"{name}: {t.dim()} dimensions {tuple(t.shape)}; expected {dims}")
    if not t.is_contiguous():
        raise ValueError(
            f"{name}: strides {t.stride()} for shape {tuple(t.shape)} are not contiguous; the kernels read "
            "row-major [B, H, N, d] (call .contiguous())"
        )


def _check_attention(q: Tensor, k: Tensor, v: Tensor):
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check(name, t, 4)
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v on different devices: {q.device}, {k.device}, {v.device}")
    B, H, N, d = q.shape
    if d not in SUPPORTED_D:
        raise ValueError(f"head dim {d}: supported {SUPPORTED_D}")
    if k.shape != v.shape or k.shape[0] != B or k.shape[3] != d:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: expected q [B, H, N, d], "
                         "k and v [B, H_kv, N_kv, d]")
    if H % k.shape[1] != 0:
        raise ValueError(f"H = {H} query heads is not a multiple of H_kv = {k.shape[1]} (GQA groups)")
    if N == 0 or k.shape[2] == 0:
        raise ValueError("N and N_kv must be >= 1")


def _same_device(name: str, t: Tensor, q: Tensor):
    if t.device != q.device:
        raise ValueError(f"{name}: on {t.device}, q on {q.device}; every tensor of a call on q's device")


def _check_variant(q: Tensor, k: Tensor, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes):
    """The variant's arguments as the kernels read them. The operators are public (torch.compile, opcheck
    and other callers reach them past attention()), so each checks its own arguments, and its fake
    implementation the same, before anything is allocated or launched."""
    if not isinstance(mask, str) or mask not in MASKS:
        raise ValueError(f"mask {mask!r}: supported {MASKS}")
    if not isinstance(score_mod, str) or score_mod not in SCORE_MODS:
        raise ValueError(f"score_mod {score_mod!r}: supported {SCORE_MODS}")
    for name, x in (("window_left", window_left), ("window_right", window_right), ("prefix", prefix)):
        if not isinstance(x, int) or isinstance(x, bool):
            raise TypeError(f"{name}: expected an int, got {type(x).__name__}")
        if x < 0:
            raise ValueError(f"{name} = {x}: must be >= 0")
    B, H, N = q.shape[:3]
    if mask == "documents":
        if doc is None:
            raise ValueError(f"mask='documents' needs doc: int32 [B, N] = [{B}, {N}] document ids on {q.device}")
        _check("doc", doc, 2, torch.int32)
        _same_device("doc", doc, q)
        if tuple(doc.shape) != (B, N):
            raise ValueError(f"doc: shape {tuple(doc.shape)}; expected [B, N] = [{B}, {N}] (a document id per position)")
        if k.shape[2] != N:
            raise ValueError(f"mask='documents': N_kv = {k.shape[2]} keys for N = {N} queries; packed documents "
                             "attend to themselves (N_kv = N)")
    elif doc is not None:
        raise ValueError(f"doc with mask={mask!r}: document ids go with mask='documents' only")
    if score_mod == "alibi":
        if slopes is None:
            raise ValueError(f"score_mod='alibi' needs slopes: fp32 [H] = [{H}] on {q.device}")
        _check("slopes", slopes, 1, torch.float32)
        _same_device("slopes", slopes, q)
        if slopes.shape[0] != H:
            raise ValueError(f"slopes: {slopes.shape[0]} slopes for H = {H} heads")
    elif slopes is not None:
        raise ValueError(f"slopes with score_mod={score_mod!r}: ALiBi slopes go with score_mod='alibi' only")
    if not isinstance(softcap, (int, float)) or isinstance(softcap, bool):
        raise TypeError(f"softcap: expected a float, got {type(softcap).__name__}")
    if score_mod == "softcap" and not (math.isfinite(softcap) and softcap > 0):
        raise ValueError(f"softcap = {softcap}: the cap must be finite and > 0")
    if score_mod != "none" and mask != "causal":
        raise ValueError(f"{score_mod} with mask={mask!r}: the score modifiers are compiled on causal attention only")


def _check_saved(q: Tensor, o: Tensor, lse: Tensor, do: Tensor):
    """The backward's tensors from outside: the forward's O and L and the upstream dO, as the forward gives them."""
    for name, t in (("o", o), ("do", do)):
        _check(name, t, 4)
        _same_device(name, t, q)
        if t.shape != q.shape:
            raise ValueError(f"{name}: shape {tuple(t.shape)}; expected q's {tuple(q.shape)}")
    _check("lse", lse, 3, torch.float32)
    _same_device("lse", lse, q)
    if lse.shape != q.shape[:3]:
        raise ValueError(f"lse: shape {tuple(lse.shape)}; expected [B, H, N] = {tuple(q.shape[:3])}")


def _shape(q: Tensor, k: Tensor):
    s = _module().AttentionShape()
    s.B, s.H, s.N, s.d = q.shape
    s.H_kv, s.N_kv = k.shape[1], k.shape[2]
    return s


def _stream(t: Tensor) -> int:
    return torch.cuda.current_stream(t.device).cuda_stream


def _addr(t: Optional[Tensor]) -> int:
    return 0 if t is None else t.data_ptr()


# ---- attention: one forward op, one backward op, autograd between them ---------------------------
@torch.library.custom_op("flash_ladder::attention_forward", mutates_args=())
def attention_forward(q: Tensor, k: Tensor, v: Tensor, mask: str, window_left: int, window_right: int,
                      prefix: int, doc: Optional[Tensor], score_mod: str, softcap: float,
                      slopes: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    _check_attention(q, k, v)
    _check_variant(q, k, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes)
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    with torch.cuda.device(q.device):
        _module().forward(_shape(q, k), mask, window_left, window_right, prefix, _addr(doc), score_mod, softcap,
                          _addr(slopes), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                          _stream(q))
    return o, lse


@attention_forward.register_fake
def _(q, k, v, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes):
    _check_attention(q, k, v)
    _check_variant(q, k, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes)
    return torch.empty_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("flash_ladder::attention_backward", mutates_args=())
def attention_backward(do: Tensor, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, mask: str,
                       window_left: int, window_right: int, prefix: int, doc: Optional[Tensor], score_mod: str,
                       softcap: float, slopes: Optional[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    do = do.contiguous()  # upstream gradients may arrive as views of any layout
    _check_attention(q, k, v)
    _check_variant(q, k, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes)
    _check_saved(q, o, lse, do)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    with torch.cuda.device(q.device):
        s = _shape(q, k)
        workspace = torch.empty(_module().backward_workspace_floats(s, mask, score_mod), dtype=torch.float32,
                                device=q.device)
        _module().backward(s, mask, window_left, window_right, prefix, _addr(doc), score_mod, softcap,
                           _addr(slopes), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                           do.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), workspace.data_ptr(),
                           _stream(q))
    return dq, dk, dv


@attention_backward.register_fake
def _(do, q, k, v, o, lse, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes):
    _check_attention(q, k, v)
    _check_variant(q, k, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes)
    _check_saved(q, o, lse, do.contiguous())
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup_context(ctx, inputs, output):
    q, k, v, mask, window_left, window_right, prefix, doc, score_mod, softcap, slopes = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, doc, slopes)
    ctx.variant = (mask, window_left, window_right, prefix, score_mod, softcap)
    ctx.mark_non_differentiable(lse)  # L leaves only through autograd's saved tensors, never to a caller


def _backward(ctx, do, _dlse):
    q, k, v, o, lse, doc, slopes = ctx.saved_tensors
    mask, window_left, window_right, prefix, score_mod, softcap = ctx.variant
    dq, dk, dv = attention_backward(do, q, k, v, o, lse, mask, window_left, window_right, prefix, doc, score_mod,
                                    softcap, slopes)
    return dq, dk, dv, None, None, None, None, None, None, None, None


attention_forward.register_autograd(_backward, setup_context=_setup_context)


def _document_ids(cu_seqlens: Tensor, N: int) -> Tensor:
    """The document of every position of a packed sequence, on the device (no host round trip).
    Positions past the last document form one more document of their own (padding)."""
    _check("cu_seqlens_q", cu_seqlens, 1, torch.int32)
    if cu_seqlens.shape[0] < 2:
        raise ValueError(f"cu_seqlens_q: {cu_seqlens.shape[0]} offsets; expected [documents + 1]: 2 or more offsets, "
                         "from 0 to N")
    positions = torch.arange(N, device=cu_seqlens.device, dtype=torch.int32)
    return torch.searchsorted(cu_seqlens[1:], positions, right=True).to(torch.int32).reshape(1, N)


def attention(q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, scale: Optional[float] = None,
              mask: Optional[str] = None, window: Optional[tuple] = None, prefix: Optional[int] = None,
              softcap: Optional[float] = None, alibi_slopes: Optional[Tensor] = None,
              cu_seqlens_q: Optional[Tensor] = None, cu_seqlens_k: Optional[Tensor] = None) -> Tensor:
    """softmax(score(scale q k^T) where mask) v, in SDPA's layout.

    q [B, H, N, d], k and v [B, H_kv, N_kv, d]: CUDA, bfloat16, contiguous; d in {64, 128}; H a
    multiple of H_kv (GQA). Causal is aligned at the bottom right (query i sees keys
    j <= i + N_kv - N), as flash-attention's.
      mask="sliding_window", window=(left, right)   keys within left before / right after the diagonal
      mask="prefix_lm", prefix=n                    the first n keys visible to all, the rest causal
      cu_seqlens_q=cu (int32 [docs + 1]), B = 1     packed documents, each causal (varlen batches)
      softcap=c, alibi_slopes=[H] fp32              score modifiers, on causal attention
    Masks other than causal, and the modifiers, run on chapter 15's kernels (sm_90a).
    scale other than 1/sqrt(d) is applied to q before the kernels (which compute 1/sqrt(d)).
    """
    _check_attention(q, k, v)
    if mask is None:
        mask = "causal" if causal else "none"
    elif causal and mask != "causal":
        raise ValueError(f"causal=True with mask={mask!r}: give one of them (each mask says which keys are seen)")
    if mask not in MASKS:
        raise ValueError(f"mask {mask!r}: supported {MASKS}")
    left, right = 0, 0
    if mask == "sliding_window":
        if window is None or len(window) != 2:
            raise ValueError("mask='sliding_window' needs window=(left, right)")
        left, right = int(window[0]), int(window[1])
    if mask == "prefix_lm" and prefix is None:
        raise ValueError("mask='prefix_lm' needs prefix=<number of keys>")
    doc = None
    if cu_seqlens_q is not None or cu_seqlens_k is not None:
        if cu_seqlens_k is not None and cu_seqlens_k is not cu_seqlens_q:
            raise ValueError("cu_seqlens_k must be cu_seqlens_q itself: packed documents attend to themselves")
        if mask != "causal" or q.shape[0] != 1:
            raise ValueError("cu_seqlens_q: packed documents are causal, in one sequence (B = 1, causal=True)")
        _check("cu_seqlens_q", cu_seqlens_q, 1, torch.int32)
        _same_device("cu_seqlens_q", cu_seqlens_q, q)
        mask, doc = "documents", _document_ids(cu_seqlens_q, q.shape[2])
    score_mod, cap, slopes = "none", 0.0, None
    if softcap is not None and alibi_slopes is not None:
        raise ValueError("softcap and alibi_slopes: one score modifier at a time")
    if softcap is not None:
        score_mod, cap = "softcap", float(softcap)
    if alibi_slopes is not None:
        _check("alibi_slopes", alibi_slopes, 1, torch.float32)
        if alibi_slopes.shape[0] != q.shape[1]:
            raise ValueError(f"alibi_slopes: {alibi_slopes.shape[0]} slopes for H = {q.shape[1]} heads")
        score_mod, slopes = "alibi", alibi_slopes
    if score_mod != "none" and mask != "causal":
        raise ValueError(f"{score_mod} with mask={mask!r}: the score modifiers are compiled on causal attention "
                         "only (chapter 15's built-ins); pass causal=True")
    d = q.shape[3]
    if scale is not None and scale != 1.0 / math.sqrt(d):
        q = (q * (scale * math.sqrt(d))).to(q.dtype)
    o, _ = attention_forward(q, k, v, mask, left, right, int(prefix or 0), doc, score_mod, cap, slopes)
    return o


# ---- decoding: chapter 11 on a contiguous or paged cache ---------------------------------------
# A decoding step is a few hundred small launches and at batch 1 the host decides its speed: each
# operator makes one call into the module, which launches everything (the append of the new keys
# is one kernel there, not a dozen PyTorch operations).
def _check_cache(B: int, H: int, d: int, k_cache: Tensor, v_cache: Tensor, cache_seqlens: Tensor,
                 block_table: Optional[Tensor]) -> int:
    """Checks a cache for B sequences of H query heads of dim d; returns the keys one sequence holds."""
    _check("k_cache", k_cache, 4)
    _check("v_cache", v_cache, 4)
    _check("cache_seqlens", cache_seqlens, 1, torch.int32)
    if k_cache.shape != v_cache.shape or k_cache.shape[3] != d or H % k_cache.shape[1] != 0:
        raise ValueError(f"k_cache {tuple(k_cache.shape)}, v_cache {tuple(v_cache.shape)} for {H} heads of dim {d}: "
                         "caches [B, H_kv, capacity, d] or pages [num_pages, H_kv, page_size, d], H a multiple of H_kv")
    if d not in SUPPORTED_D:
        raise ValueError(f"head dim {d}: supported {SUPPORTED_D}")
    if cache_seqlens.shape[0] != B:
        raise ValueError(f"cache_seqlens: {cache_seqlens.shape[0]} lengths for B = {B} sequences")
    if block_table is None:
        if k_cache.shape[0] != B:
            raise ValueError(f"k_cache: {k_cache.shape[0]} slabs for B = {B} sequences (or pass a block_table)")
        return k_cache.shape[2]
    _check("block_table", block_table, 2, torch.int32)
    if block_table.shape[0] != B:
        raise ValueError(f"block_table: {block_table.shape[0]} rows for B = {B} sequences")
    if k_cache.shape[2] not in PAGE_SIZES:
        raise ValueError(f"page size {k_cache.shape[2]}: supported {PAGE_SIZES}")
    return block_table.shape[1] * k_cache.shape[2]


def _check_new(k: Tensor, v: Tensor, k_cache: Tensor, B: int):
    _check("k", k, 4)
    _check("v", v, 4)
    if k.shape != v.shape or k.shape[0] != B or k.shape[1] != k_cache.shape[1] or k.shape[3] != k_cache.shape[3]:
        raise ValueError(f"k {tuple(k.shape)}, v {tuple(v.shape)}: [B = {B}, H_kv = {k_cache.shape[1]}, n, "
                         f"d = {k_cache.shape[3]}] new keys and values")


def _layout(k_cache: Tensor, block_table: Optional[Tensor]):
    """The cache as the module takes it: capacity, block table, num_pages, page_size, pages per sequence."""
    if block_table is None:
        return k_cache.shape[2], 0, 0, 0, 0
    return 0, block_table.data_ptr(), k_cache.shape[0], k_cache.shape[2], block_table.shape[1]


def _check_append(k_cache, v_cache, k, v, seq_lens, block_table):
    _check("k", k, 4)
    B, H_kv, _, d = k.shape
    _check_cache(B, H_kv, d, k_cache, v_cache, seq_lens, block_table)
    _check_new(k, v, k_cache, B)


def _check_decode(q, k_cache, v_cache, seq_lens, block_table, k_new, v_new, max_seq_len) -> int:
    """Every check of a decoding step; returns the bound on the lengths (max_seq_len 0: the capacity)."""
    _check("q", q, 4)
    B, H, n_q, d = q.shape
    capacity = _check_cache(B, H, d, k_cache, v_cache, seq_lens, block_table)
    if not 1 <= n_q <= MAX_DECODE_QUERIES:
        raise ValueError(f"n_q = {n_q} new queries: supported 1 .. {MAX_DECODE_QUERIES}")
    if (k_new is None) != (v_new is None):
        raise ValueError("k and v: give both new keys and new values, or neither")
    if k_new is not None:
        _check_new(k_new, v_new, k_cache, B)
    bound = capacity if max_seq_len == 0 else max_seq_len
    if not 1 <= bound <= capacity:
        raise ValueError(f"max_seqlen = {bound}: must be between 1 and the cache's capacity {capacity}")
    return bound


# The fake implementations check too: a shape error shows on meta tensors and under torch.compile.
@torch.library.custom_op("flash_ladder::append_kv", mutates_args=("k_cache", "v_cache"))
def append_kv_op(k_cache: Tensor, v_cache: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor,
                 block_table: Optional[Tensor]) -> None:
    _check_append(k_cache, v_cache, k, v, seq_lens, block_table)
    B, H_kv, n, d = k.shape
    with torch.cuda.device(k.device):
        _module().append_kv(k_cache.data_ptr(), v_cache.data_ptr(), *_layout(k_cache, block_table), B, H_kv, d,
                            seq_lens.data_ptr(), k.data_ptr(), v.data_ptr(), n, _stream(k))


@append_kv_op.register_fake
def _(k_cache, v_cache, k, v, seq_lens, block_table):
    _check_append(k_cache, v_cache, k, v, seq_lens, block_table)


@torch.library.custom_op("flash_ladder::decode", mutates_args=("k_cache", "v_cache"))
def decode_forward(q: Tensor, k_cache: Tensor, v_cache: Tensor, seq_lens: Tensor, block_table: Optional[Tensor],
                   k_new: Optional[Tensor], v_new: Optional[Tensor], max_seq_len: int) -> Tensor:
    bound = _check_decode(q, k_cache, v_cache, seq_lens, block_table, k_new, v_new, max_seq_len)
    B, H, n_q, d = q.shape
    s = _module().DecodeShape()
    s.B, s.H_q, s.H_kv, s.n_q, s.d, s.max_seq_len = B, H, k_cache.shape[1], n_q, d, bound
    o = torch.empty_like(q)
    with torch.cuda.device(q.device):
        workspace = torch.empty(_module().decode_workspace_bytes(s), dtype=torch.uint8, device=q.device)
        _module().decode(s, q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), *_layout(k_cache, block_table),
                         seq_lens.data_ptr(), _addr(k_new), _addr(v_new), 0 if k_new is None else k_new.shape[2],
                         o.data_ptr(), workspace.data_ptr(), _stream(q))
    return o


@decode_forward.register_fake
def _(q, k_cache, v_cache, seq_lens, block_table, k_new, v_new, max_seq_len):
    _check_decode(q, k_cache, v_cache, seq_lens, block_table, k_new, v_new, max_seq_len)
    return torch.empty_like(q)


def append_kv(k_cache: Tensor, v_cache: Tensor, k: Tensor, v: Tensor, cache_seqlens: Tensor,
              block_table: Optional[Tensor] = None) -> None:
    """Writes k, v ([B, H_kv, n, d], any strides) at positions cache_seqlens[b] .. + n - 1 of each
    sequence's cache (one kernel launch). cache_seqlens is not advanced (the caller owns it)."""
    append_kv_op(k_cache, v_cache, k.contiguous(), v.contiguous(), cache_seqlens, block_table)


def decode(q: Tensor, k_cache: Tensor, v_cache: Tensor, cache_seqlens: Tensor, block_table: Optional[Tensor] = None,
           k: Optional[Tensor] = None, v: Optional[Tensor] = None, max_seqlen: Optional[int] = None) -> Tensor:
    """One decoding step, flash-attention's flash_attn_with_kvcache in the ladder's layouts.

    q [B, H, n_q, d] (n_q <= 16 new queries per sequence, the last n_q positions); caches
    [B, H_kv, capacity, d], or pages [num_pages, H_kv, page_size, d] (page_size 16 or 64) with
    block_table int32 [B, pages per sequence]; cache_seqlens int32 [B]: keys in the cache before
    this call. k, v [B, H_kv, n_new, d], when given, are written into the cache first and seen.
    cache_seqlens is not advanced (the caller owns it). max_seqlen: a host-side bound on every
    length after the append (default: the cache's capacity), which sizes the grid without reading
    the lengths back.
    """
    if max_seqlen is not None and max_seqlen < 1:
        raise ValueError(f"max_seqlen = {max_seqlen}: must be between 1 and the cache's capacity")
    k, v = (None if t is None else t.contiguous() for t in (k, v))
    return decode_forward(q, k_cache, v_cache, cache_seqlens, block_table, k, v, int(max_seqlen or 0))


def kernels_for(q_shape, k_shape, *, mask: str = "none", score_mod: str = "none", hopper: Optional[bool] = None) -> str:
    """Which chapter's kernels a call runs: 'fa3 (chapters 12, 14)', 'flex (chapter 15)' or 'fa2 (chapter 10)'.
    hopper: ask for a GPU with (True) or without (False) sm_90a; default: this process's GPU."""
    s = _module().AttentionShape()
    s.B, s.H, s.N, s.d = q_shape
    s.H_kv, s.N_kv = k_shape[1], k_shape[2]
    if hopper is None:  # this process's GPU
        return _module().kernels(s, mask, score_mod, hopper(), torch.cuda.is_available())
    return _module().kernels(s, mask, score_mod, hopper, True)
