"""A small GPT whose attention is the ladder's kernels or PyTorch's SDPA, chosen by name.

nanoGPT's shape with today's defaults: bytes as tokens (vocab 256), pre-norm blocks, rotary
positions (nothing learned per position, so generation runs past the training length), a 4x GELU
MLP and the head tied to the embedding. Weights stay fp32; run it under `autocast(device)` and the
matmuls and attention see bf16.

The two implementations differ in two functions only, `attention` (training and prefill) and
`decode_attention` (one new token against the KV cache); everything else is the same model.

    model = GPT(GPTConfig(attn="ladder")).cuda()
    with autocast(torch.device("cuda")):
        logits, loss = model(x, y)
        out = model.generate(prompt, 100, cache="paged")
"""
import math
import os
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SDPA_BACKENDS = {
    "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION,
    "sdpa_flash": SDPBackend.FLASH_ATTENTION,
    "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
    "sdpa_math": SDPBackend.MATH,
}
ATTN_CHOICES = ("ladder", *SDPA_BACKENDS)
CPU_ATTN = ("sdpa_math", "sdpa_flash")  # SDPA's CPU kernels; the others need CUDA

flash_ladder = None  # the operator package, imported on first use: SDPA runs need no built extension


def use_attn(name):
    """Checks a name from ATTN_CHOICES; for "ladder", imports the operators now, outside any trace."""
    global flash_ladder
    if name not in ATTN_CHOICES:
        raise ValueError(f"attn={name!r}: expected one of {', '.join(ATTN_CHOICES)}")
    if name == "ladder" and flash_ladder is None:
        # This folder holds the package's sources without the built module, and a script run from
        # here has it first on sys.path: move it last, so the built package (PYTHONPATH=<build>/python
        # or pip install .) is the one imported, as tests/conftest.py arranges for pytest.
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here] + [here]
        import flash_ladder as ops

        if ops.module_error():
            raise RuntimeError(f"attn='ladder': {ops.module_error()}")
        flash_ladder = ops
    return name


# ---- the only place the implementations differ ----------------------------------------------------
def attention(q, k, v, impl):
    """Causal attention over (B, H, T, d) tensors: training and prefill."""
    if impl == "ladder":
        return flash_ladder.attention(q, k, v, causal=True)
    with sdpa_kernel(SDPA_BACKENDS[impl]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def decode_attention(q, k, v, cache, layer, impl):
    """One new token per sequence: k, v (B, H, 1, d) go into the cache, q attends to every key there.

    The ladder's operator does both in one call and reads pages through the block table; SDPA gets
    the keys as one tensor (a slice of the contiguous cache, or the pages gathered). No mask: the
    one query is the last position, so every key in the cache is in its past.
    """
    if impl == "ladder":
        kc, vc = cache.tensors(layer, k)
        return flash_ladder.decode(q, kc, vc, cache.seqlens, cache.block_table, k=k, v=v,
                                   max_seqlen=cache.length + 1)  # known here: no read-back of seqlens
    cache.write(layer, k, v)
    keys, values = cache.read(layer, cache.length + 1)
    with sdpa_kernel(SDPA_BACKENDS[impl]):
        return F.scaled_dot_product_attention(q, keys, values)
# ----------------------------------------------------------------------------------------------------


class KVCache:
    """K and V of every layer for B sequences of equal length.

    contiguous: [B, H, capacity, d] per layer. paged: a pool [num_pages, H, page_size, d] per layer
    and a block table [B, pages_per_seq] (int32) naming sequence b's j-th page. The pages are handed
    out in a shuffled order, so a reader that ignores the block table reads someone else's keys.
    `length` (a Python int, for slicing and rotary positions) and `seqlens` (int32 on the device,
    for the kernels) count the keys stored; the model advances both once per forward, after all layers.
    """

    def __init__(self, n_layer, B, capacity, kind="paged", page_size=64, device="cpu"):
        if kind not in ("paged", "contiguous"):
            raise ValueError(f"cache={kind!r}: expected 'paged' or 'contiguous'")
        self.kind, self.B, self.capacity, self.page_size = kind, B, capacity, page_size
        self.length = 0
        self.seqlens = torch.zeros(B, dtype=torch.int32, device=device)
        self.block_table = None
        if kind == "paged":
            pages = -(-capacity // page_size)
            order = torch.randperm(B * pages, generator=torch.Generator().manual_seed(0))
            self.block_table = order.view(B, pages).to(device, torch.int32)
        self.k = [None] * n_layer
        self.v = [None] * n_layer

    def tensors(self, layer, like):
        """This layer's K and V storage, allocated on first use with the dtype of the keys."""
        if self.k[layer] is None:
            B, H, _, d = like.shape
            if self.kind == "paged":
                shape = (self.block_table.numel(), H, self.page_size, d)
            else:
                shape = (B, H, self.capacity, d)
            self.k[layer] = torch.zeros(shape, dtype=like.dtype, device=like.device)
            self.v[layer] = torch.zeros_like(self.k[layer])
        return self.k[layer], self.v[layer]

    def check_room(self, n):
        if self.length + n > self.capacity:
            raise ValueError(f"KV cache full: {self.length} + {n} keys > capacity {self.capacity}")

    def write(self, layer, k, v):
        """Stores k, v (B, H, n, d) at positions length .. length + n - 1 (PyTorch indexing)."""
        n = k.shape[2]
        kc, vc = self.tensors(layer, k)
        if self.kind == "contiguous":
            kc[:, :, self.length : self.length + n] = k
            vc[:, :, self.length : self.length + n] = v
        else:
            pos = self.length + torch.arange(n, device=k.device)
            page = self.block_table[:, pos // self.page_size].long()  # (B, n)
            slot = (pos % self.page_size).expand_as(page)
            kc[page, :, slot] = k.transpose(1, 2)  # advanced indices first: (B, n, H, d)
            vc[page, :, slot] = v.transpose(1, 2)

    def append(self, layer, k, v, impl):
        """After prefill: the prompt's k, v into the cache, by the implementation that will read them."""
        if impl == "ladder":
            kc, vc = self.tensors(layer, k)
            flash_ladder.append_kv(kc, vc, k, v, self.seqlens, self.block_table)
        else:
            self.write(layer, k, v)

    def read(self, layer, n):
        """K and V of positions 0 .. n - 1 as (B, H, n, d)."""
        kc, vc = self.k[layer], self.v[layer]
        if self.kind == "contiguous":
            return kc[:, :, :n], vc[:, :, :n]
        pages = -(-n // self.page_size)
        table = self.block_table[:, :pages].long()

        def gather(pool):  # (B, pages, H, P, d) -> (B, H, pages * P, d)
            g = pool[table].transpose(1, 2)
            return g.reshape(self.B, g.shape[1], -1, g.shape[-1])[:, :, :n]

        return gather(kc), gather(vc)

    def advance(self, n):
        self.length += n
        self.seqlens += n

    def rewind(self, n):
        """Forgets the last n keys (a timed decode step runs again at the same length)."""
        self.length -= n
        self.seqlens -= n


@dataclass
class GPTConfig:
    n_layer: int = 6
    n_embd: int = 768
    n_head: int = 6
    block_size: int = 8192  # the training length; rotary positions have no limit
    vocab: int = 256
    attn: str = "sdpa_cudnn"
    rope_base: float = 10000.0


def autocast(device):
    """bf16 autocast on CUDA; a no-op elsewhere (CPU runs stay fp32, for exact comparisons)."""
    device = torch.device(device)
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def rotary_angles(start, T, d, base, device):
    """cos and sin (T, d/2) of angle p * base^(-2i/d) for positions p = start .. start + T - 1."""
    inv_freq = base ** (-torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)
    pos = torch.arange(start, start + T, device=device, dtype=torch.float32)
    angle = pos[:, None] * inv_freq[None, :]  # fp32: at p = 32K, bf16 would be off by whole turns
    return angle.cos(), angle.sin()


def rotary(x, cos, sin):
    """Rotates the pairs (x_i, x_{i + d/2}) of x (B, H, T, d); NeoX's split halves, not interleaved."""
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        if cfg.n_embd % cfg.n_head or (cfg.n_embd // cfg.n_head) % 2:
            raise ValueError(f"n_embd={cfg.n_embd} must split into n_head={cfg.n_head} heads of even size")
        self.n_head, self.d = cfg.n_head, cfg.n_embd // cfg.n_head
        self.impl = use_attn(cfg.attn)
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x, rope, cache=None, layer=0):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, self.d).permute(2, 0, 3, 1, 4)
        q, k, v = rotary(q, *rope).contiguous(), rotary(k, *rope).contiguous(), v.contiguous()
        if cache is None or cache.length == 0:
            y = attention(q, k, v, self.impl)
            if cache is not None:
                cache.append(layer, k, v, self.impl)
        elif T == 1:
            y = decode_attention(q, k, v, cache, layer, self.impl)
        else:
            raise NotImplementedError("a cache that holds keys takes one new token per forward")
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.n_embd), nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False)
        self.fc_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x, rope, cache=None, layer=0):
        x = x + self.attn(self.ln1(x), rope, cache, layer)
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2: residual writes shrink with depth
            if name.endswith(("attn.proj.weight", "fc_proj.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def set_attn(self, name):
        """Switches every layer to another implementation (the weights stay)."""
        self.config.attn = use_attn(name)
        for block in self.blocks:
            block.attn.impl = name

    def num_params(self):
        return sum(p.numel() for p in self.parameters())

    def new_cache(self, B, capacity, kind="paged", page_size=64):
        device = self.wte.weight.device
        return KVCache(self.config.n_layer, B, capacity, kind, page_size, device)

    def forward(self, idx, targets=None, cache=None, last_only=False):
        """idx (B, T) bytes -> logits (B, T, vocab) and, with targets, the mean cross-entropy.

        With a cache, positions continue from cache.length and the new keys are stored; last_only
        computes the head for the last position only (prefill needs nothing else).
        """
        T = idx.shape[1]
        start = 0
        if cache is not None:
            cache.check_room(T)  # before any kernel writes past the end
            start = cache.length
        cfg = self.config
        rope = rotary_angles(start, T, cfg.n_embd // cfg.n_head, cfg.rope_base, idx.device)
        x = self.wte(idx)
        for i, block in enumerate(self.blocks):
            x = block(x, rope, cache, i)
        if cache is not None:
            cache.advance(T)
        x = self.ln_f(x)
        if last_only:
            x = x[:, -1:]
        logits = F.linear(x, self.wte.weight)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, cache="paged", page_size=64):
        """Greedy continuation of idx (B, T0): returns (B, T0 + max_new_tokens).

        cache "paged" or "contiguous": prefill the prompt, then one token per forward against the
        KV cache. cache None: run the whole sequence again for every token (the reference).
        """
        with autocast(idx.device):
            if cache is None:
                for _ in range(max_new_tokens):
                    logits, _ = self(idx, last_only=True)
                    idx = torch.cat((idx, logits[:, -1].argmax(-1, keepdim=True)), dim=1)
                return idx
            kv = self.new_cache(idx.shape[0], idx.shape[1] + max_new_tokens, cache, page_size)
            logits, _ = self(idx, cache=kv, last_only=True)
            out = [idx]
            for i in range(max_new_tokens):
                out.append(logits[:, -1].argmax(-1, keepdim=True))
                if i + 1 < max_new_tokens:
                    logits, _ = self(out[-1], cache=kv)
            return torch.cat(out, dim=1)
