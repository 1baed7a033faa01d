#!/usr/bin/env python3
"""What Triton chose for each attention kernel: tiles, warps, stages, shared memory, registers, wgmma.

    python3 triton/chosen.py                     # the GPU here, else cross-compiled for sm_90, sm_86, sm_75
    python3 triton/chosen.py --target 86,75      # cross-compile for an RTX 30 (99 KiB) and a T4 (64 KiB)
    python3 triton/chosen.py --matmul            # the same table for matmul.py's sweep

The tiles (B_r, B_c), num_warps and num_stages are ours (attention.CONFIGS); what the table reads back
from the compiled kernel's metadata is what Triton made of them: the shared memory the kernel asks for
at launch (its K/V pipeline of num_stages buffers, the layout conversions between the two matmuls), and
from the PTX whether it used Hopper's wgmma (sm_90: chapter 12's instruction) or mma.sync (sm_80-89:
chapter 10's). Registers and the stack frame (where spilled registers go, chapter 08) are read from the cubin by
cuobjdump -res-usage.

Compiling needs no GPU: triton.compile(ASTSource(...), target=GPUTarget("cuda", 86, 32)) runs the whole
pipeline down to a cubin with the ptxas that ships with Triton, for a GPU that is not here. A row whose
shared memory exceeds the target's limit says so ("NO"); the exit status is then 1. bf16 is left out on
sm_75 (a T4 has no bf16 tensor cores: fp16 is its path).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its warning

# Shared memory one block may use (opt-in maximum), per compute capability.
SMEM_LIMIT = {75: 64 << 10, 80: 163 << 10, 86: 99 << 10, 87: 163 << 10, 89: 99 << 10, 90: 227 << 10,
              100: 227 << 10, 120: 99 << 10}
ATTENTION_POINTERS = ("Q", "K", "V", "O", "L", "dO", "Dl", "dQ", "dK", "dV")
GPU_NAME = {75: "T4", 80: "A100", 86: "RTX 30", 89: "RTX 40", 90: "H100/H200", 120: "RTX 50"}


def signature(fn, dtype, constexprs, pointers):
    """ASTSource's signature and attrs for fn: `pointers` point to dtype (L and Dl to fp32), the other
    arguments are fp32 scales (*scale) or i32 sizes and strides. Pointers and strides are marked divisible
    by 16, as Triton specialises them at a real launch on contiguous tensors with d = 64 or 128 (that is
    what lets it vectorise the loads)."""
    sig, attrs = {}, {}
    for idx, name in enumerate(fn.arg_names):
        if name in constexprs:
            sig[name] = "constexpr"
        elif name in pointers:
            sig[name] = "*fp32" if name in ("L", "Dl") else "*" + dtype
            attrs[(idx,)] = [["tt.divisibility", 16]]
        elif name.endswith("scale"):
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
            if name.startswith("s_") or name.startswith("stride"):
                attrs[(idx,)] = [["tt.divisibility", 16]]
    return sig, attrs


def compile_kernel(fn, dtype, constexprs, num_warps, num_stages, cap, pointers):
    import triton
    from triton.backends.compiler import GPUTarget
    sig, attrs = signature(fn, dtype, constexprs, pointers)
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", cap, 32),
                          options=dict(num_warps=num_warps, num_stages=num_stages))


def cubin_report(compiled):
    """(registers, stack bytes) of the cubin Triton built, read by cuobjdump -res-usage (the cuobjdump that
    ships with Triton); (None, None) without it. A stack frame is where spilled registers go (chapter 08)."""
    import triton
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if not os.path.exists(tool):
        return None, None
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin", delete=False) as f:
        f.write(compiled.asm["cubin"])
    try:
        r = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, timeout=120)
    except Exception:
        return None, None
    finally:
        os.unlink(f.name)
    m = re.search(r"REG:(\d+) STACK:(\d+)", r.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def attention_rows(caps, dtypes=("fp16", "bf16"), dims=(64, 128), causal=True, registers=True):
    import attention as A
    kernels = [("fwd", A.fwd_kernel), ("dkdv", A.bwd_dkdv_kernel), ("dq", A.bwd_dq_kernel)]
    rows = []
    for cap in caps:
        for dtype in dtypes:
            if dtype == "bf16" and cap < 80:
                continue
            for d in dims:
                for part, fn in kernels:
                    cfg = A.configs(d, SMEM_LIMIT.get(cap))[part]  # the set attention.py picks on that GPU
                    consts = dict(D=d, B_r=cfg["B_r"], B_c=cfg["B_c"], CAUSAL=causal)
                    c = compile_kernel(fn, dtype, consts, cfg["num_warps"], cfg["num_stages"], cap, ATTENTION_POINTERS)
                    regs, spills = cubin_report(c) if registers else (None, None)
                    rows.append(dict(target=f"sm_{cap}", kernel=part, d=d, dtype=dtype, B_r=cfg["B_r"],
                                     B_c=cfg["B_c"], num_warps=c.metadata.num_warps,
                                     num_stages=c.metadata.num_stages, shared=c.metadata.shared,
                                     limit=SMEM_LIMIT.get(cap), wgmma="wgmma" in c.asm["ptx"],
                                     registers=regs, stack_bytes=spills))
    return rows


def matmul_rows(caps, dtypes=("fp16",), registers=True):
    import matmul as MM
    rows = []
    for cap in caps:
        for dtype in dtypes:
            for cfg in MM.CONFIGS:
                consts = {k: cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
                consts["PRECISION"] = "ieee" if dtype == "fp32" else "tf32"
                c = compile_kernel(MM.matmul_kernel, dtype, consts, cfg["num_warps"], cfg["num_stages"], cap, "ABC")
                regs, spills = cubin_report(c) if registers else (None, None)
                rows.append(dict(target=f"sm_{cap}", kernel="matmul " + MM.name(cfg), d=None, dtype=dtype,
                                 B_r=cfg["BLOCK_M"], B_c=cfg["BLOCK_N"], num_warps=c.metadata.num_warps,
                                 num_stages=c.metadata.num_stages, shared=c.metadata.shared,
                                 limit=SMEM_LIMIT.get(cap), wgmma="wgmma" in c.asm["ptx"], registers=regs,
                                 stack_bytes=spills))
    return rows


def fits(row):
    return row["limit"] is None or row["shared"] <= row["limit"]


def table(rows):
    head = "| target | kernel | d | dtype | B_r | B_c | warps | stages | shared (KiB) | fits | registers | stack (B) | wgmma |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lim = f" of {r['limit'] / 1024:g}" if r["limit"] else ""
        lines.append("| {target} | {kernel} | {d} | {dtype} | {B_r} | {B_c} | {num_warps} | {num_stages} | ".format(
            **{**r, "d": r["d"] if r["d"] else "-"}) + f"{r['shared'] / 1024:.1f}{lim} | "
            f"{'yes' if fits(r) else 'NO'} | {r['registers'] if r['registers'] is not None else '?'} | "
            f"{r['stack_bytes'] if r['stack_bytes'] is not None else '?'} | {'yes' if r['wgmma'] else 'no'} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", help="compute capabilities to compile for, e.g. 90,86,75 (default: this GPU, "
                    "else 90,86,75)")
    ap.add_argument("--matmul", action="store_true", help="matmul.py's sweep instead of attention")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--no-registers", action="store_true", help="skip the registers and stack columns (faster)")
    args = ap.parse_args()
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("chosen.py compiles kernels: run it without TRITON_INTERPRET=1")
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        sys.exit(f"chosen.py needs PyTorch and Triton ({e})")
    if args.target:
        caps = [int(c) for c in args.target.split(",")]
    else:
        import torch
        caps = ([torch.cuda.get_device_capability()[0] * 10 + torch.cuda.get_device_capability()[1]]
                if torch.cuda.is_available() else [90, 86, 75])
    regs = not args.no_registers
    rows = matmul_rows(caps, registers=regs) if args.matmul else attention_rows(caps, registers=regs)
    print(table(rows))
    print("targets: " + ", ".join(f"sm_{c} ({GPU_NAME.get(c, '?')}, {SMEM_LIMIT.get(c, 0) >> 10} KiB per block)"
                                  for c in caps))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r for r in rows if not fits(r)]
    if bad:
        print(f"{len(bad)} kernel(s) need more shared memory than their target has", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
