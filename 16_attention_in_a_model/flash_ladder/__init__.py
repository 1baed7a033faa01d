"""flash-ladder's attention kernels as PyTorch operators (chapter 16).

    import flash_ladder
    o = flash_ladder.attention(q, k, v, causal=True)           # chapters 12 and 14 (10 without sm_90a)
    o = flash_ladder.attention(q, k, v, mask="sliding_window", window=(1024, 0))   # chapter 15
    o = flash_ladder.decode(q, k_cache, v_cache, cache_seqlens, block_table, k=k_new, v=v_new)  # chapter 11

The operators are registered with torch.library (flash_ladder::attention_forward,
flash_ladder::attention_backward, flash_ladder::decode): autograd, fake tensors and
torch.compile(fullgraph=True) see them as single nodes.
"""

import torch  # noqa: F401  (first: the module shares PyTorch's CUDA runtime)

from .ops import (MASKS, SCORE_MODS, SUPPORTED_D, append_kv, attention, decode, describe_device, hopper, kernels_for,
                  module_error)

__all__ = ["attention", "decode", "append_kv", "kernels_for", "describe_device", "hopper", "module_error", "MASKS",
           "SCORE_MODS", "SUPPORTED_D"]
