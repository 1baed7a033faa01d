#!/usr/bin/env python3
"""Error against an fp64 reference vs N, forward and backward: this chapter's kernels
(both summations of dK, dV, dQ) beside PyTorch's fp32 scaled_dot_product_attention on
the same inputs. Needs a GPU and PyTorch (the fp64 reference at N = 32768 is cheap on a
GPU and minutes on a CPU).

    build/bin/07_fa_backward --accuracy 1024,2048,4096,8192,16384,32768 --dump DIR
    07_fa_backward/accuracy_vs_n.py DIR [OUT.csv]

DIR/N<N>/ holds Q, K, V, dO, O, L and dQ/dK/dV_<path>_<summation>.npy ([1, 2, N, d]).
Prints one table; writes OUT.csv (default DIR/accuracy.csv): N, tensor, impl, rel_l2.
"""
import argparse
import csv
import math
import pathlib
import sys

import numpy as np

try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:
    torch = None  # main() says so (after --help, which needs no PyTorch)


def rel_l2(out, ref):
    out = out.to(torch.float64)
    return float(torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref))


def reference(Q, K, V, dO):
    """fp64 forward and backward, one head at a time (S is N x N)."""
    scale = 1.0 / math.sqrt(Q.shape[-1])
    O, dQ, dK, dV = (torch.empty_like(Q) for _ in range(4))
    for h in range(Q.shape[1]):
        q, k, v, do = Q[0, h], K[0, h], V[0, h], dO[0, h]
        P = torch.softmax(scale * q @ k.T, dim=-1)
        o = P @ v
        dP = do @ v.T
        D = (do * o).sum(-1, keepdim=True)
        dS = P * (dP - D)
        O[0, h], dV[0, h], dQ[0, h], dK[0, h] = o, P.T @ do, scale * dS @ k, scale * dS.T @ q
        del P, dP, dS
    return O, dQ, dK, dV


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=pathlib.Path, help="what 07_fa_backward --accuracy ... --dump DIR wrote")
    ap.add_argument("out_csv", nargs="?", type=pathlib.Path, help="default: DIR/accuracy.csv")
    args = ap.parse_args()
    root = args.dir
    out_csv = args.out_csv or root / "accuracy.csv"
    if not sorted(root.glob("N*")):
        ap.error(f"{root}: no N<N>/ folders (write them with 07_fa_backward --accuracy N1,N2,.. --dump {root})")
    if torch is None:
        sys.exit("accuracy_vs_n.py needs PyTorch (pip install torch; requirements.txt)")
    if not torch.cuda.is_available():
        sys.exit("accuracy_vs_n.py needs a CUDA GPU (the fp64 reference at N = 32768 takes minutes on a CPU)")
    dev = "cuda"
    rows = []
    for case in sorted(root.glob("N*"), key=lambda p: int(p.name[1:])):
        N = int(case.name[1:])
        load = lambda name: torch.from_numpy(np.load(case / f"{name}.npy")).to(dev)  # noqa: E731
        Q, K, V, dO = (load(n) for n in ("Q", "K", "V", "dO"))
        O_ref, dQ_ref, dK_ref, dV_ref = reference(*(t.double() for t in (Q, K, V, dO)))
        refs = {"O": O_ref, "dQ": dQ_ref, "dK": dK_ref, "dV": dV_ref}
        rows.append((N, "O", "ours (chapter 06)", rel_l2(load("O"), O_ref)))
        for path in ("atomic", "deterministic"):
            for summation in ("two_level", "running"):
                for t in ("dQ", "dK", "dV"):
                    rows.append((N, t, f"ours {path} {summation}", rel_l2(load(f"{t}_{path}_{summation}"), refs[t])))
        # PyTorch fp32: the memory-efficient kernel is what fp32 SDPA runs on this GPU.
        q, k, v = (t.clone().requires_grad_(True) for t in (Q, K, V))
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            gq, gk, gv = torch.autograd.grad(o, (q, k, v), dO)
        for t, x in (("O", o.detach()), ("dQ", gq), ("dK", gk), ("dV", gv)):
            rows.append((N, t, "pytorch sdpa efficient fp32", rel_l2(x, refs[t])))
        del Q, K, V, dO, O_ref, dQ_ref, dK_ref, dV_ref, refs, q, k, v, o, gq, gk, gv
        torch.cuda.empty_cache()

    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["N", "tensor", "impl", "rel_l2"])
        w.writerows((n, t, i, f"{e:.3e}") for n, t, i, e in rows)
    impls = sorted({r[2] for r in rows})
    for t in ("O", "dQ", "dK", "dV"):
        print(f"\n{t}: rel_l2 against fp64")
        print("  N      " + "  ".join(f"{i[:26]:>26}" for i in impls))
        for n in sorted({r[0] for r in rows}):
            cells = {r[2]: r[3] for r in rows if r[0] == n and r[1] == t}
            print(f"  {n:<6} " + "  ".join(f"{cells[i]:26.2e}" if i in cells else " " * 26 for i in impls))
    print(f"\nwrote {out_csv}")


if __name__ == "__main__":
    main()
