#!/usr/bin/env python3
"""Is chapter 10 as accurate as PyTorch's FlashAttention-2?

    python3 10_fa2_tensor_cores/compare_with_sdpa.py DUMP_DIR

DUMP_DIR is what `10_fa2_tensor_cores --dump DUMP_DIR` wrote: one folder per mask (dense,
causal) with the bf16-rounded inputs Q, K, V, dO (float32 .npy), this chapter's outputs O,
dQ, dK, dV, and the fp64 reference on the same inputs (O_ref, dQ_ref, dK_ref, dV_ref).
Runs SDPA with the flash backend on the same bf16 inputs (GQA: K and V repeated over each
group, whose gradients autograd sums back) and compares both against the fp64 reference:
rel_l2 = ||x - ref|| / ||ref||. PASS when ours <= 1.5 x SDPA's for O, dQ, dK and dV in
every case. Prints one line; exit status 0 on PASS, 1 on FAIL.
"""
import argparse
import os
import sys

import numpy as np

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:
    torch = None  # main() says so (after --help, which needs no PyTorch)

LIMIT = 1.5


def rel_l2(x, ref):
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(x - ref) / (den if den > 0 else 1.0))


def sdpa_flash(Q, K, V, dO, causal):
    dev = "cuda"
    q, k, v = (torch.from_numpy(a).to(dev, torch.bfloat16).requires_grad_() for a in (Q, K, V))
    g = q.shape[1] // k.shape[1]
    kr, vr = (k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)) if g > 1 else (k, v)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)  # N_q == N_kv in the dumps
        o.backward(torch.from_numpy(dO).to(dev, torch.bfloat16))
    return {name: t.detach().float().cpu().numpy() for name, t in
            (("O", o), ("dQ", q.grad), ("dK", k.grad), ("dV", v.grad))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dump_dir", help="what 10_fa2_tensor_cores --dump DUMP_DIR wrote")
    root = ap.parse_args().dump_dir
    if not os.path.isdir(root):
        ap.error(f"{root}: no such folder")
    if torch is None:
        sys.exit("compare_with_sdpa needs PyTorch (pip install torch; requirements.txt)")
    parts, ok = [], True
    for case in ("dense", "causal"):
        d = os.path.join(root, case)
        if not os.path.isdir(d):
            continue
        load = lambda n: np.load(os.path.join(d, n + ".npy"))
        try:
            theirs = sdpa_flash(load("Q"), load("K"), load("V"), load("dO"), case == "causal")
        except Exception as e:  # no flash backend, no GPU: say so, fail
            parts.append(f"{case}: SDPA flash failed ({str(e)[:80]})")
            ok = False
            continue
        fields = []
        for name in ("O", "dQ", "dK", "dV"):
            ref = load(name + "_ref")
            e_ours, e_sdpa = rel_l2(load(name), ref), rel_l2(theirs[name], ref)
            ratio = e_ours / e_sdpa if e_sdpa > 0 else float("inf")
            ok &= bool(np.isfinite(e_ours)) and ratio <= LIMIT
            fields.append(f"{name} {e_ours:.2e} vs {e_sdpa:.2e} ({ratio:.2f}x)")
        parts.append(f"{case} " + ", ".join(fields))
    if not parts:
        sys.exit(f"compare_with_sdpa: no dense/ or causal/ folder in {root}")
    print(f"compare_with_sdpa (ours vs SDPA flash rel_l2 to fp64, limit {LIMIT}x): " + "; ".join(parts) +
          (": PASS" if ok else ": FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
