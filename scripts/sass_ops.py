#!/usr/bin/env python3
"""How many instructions of each kind a kernel's machine code holds: the static count that tells
which unit a loop leans on before any profiler runs (no GPU needed).

    scripts/sass_ops.py OBJECT [--kernel REGEX] [--op MUFU.EX2 --op MUFU.RCP ...]

OBJECT: an object file or executable with sm_90a code (for instance
build/15_attention_variants/CMakeFiles/15_attention_variants_sm90a.dir/flex_forward.cu.o).
Prints one line per kernel whose demangled name matches --kernel: its instruction count and the
count of every --op (an opcode prefix: MUFU counts every special-function instruction, MUFU.EX2
only the exponentials). Default ops: the special function unit's (MUFU.EX2, MUFU.TANH, MUFU.RCP),
the tensor core's (HGMMA) and the FMA pipe's (FFMA, FMUL, FADD). Counts are of the code, not of its
execution: an instruction inside an unrolled loop counts once per copy, one in a rolled loop once.
"""
import argparse
import re
import shutil
import subprocess
import sys

DEFAULT_OPS = ["MUFU.EX2", "MUFU.TANH", "MUFU.RCP", "HGMMA", "FFMA", "FMUL", "FADD"]
INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_.]*)")


def count(obj, kernel_regex, ops):
    sass = subprocess.run(["cuobjdump", "-sass", obj], capture_output=True, text=True, check=True).stdout
    demangler = shutil.which("cu++filt") or shutil.which("c++filt")  # the kernels' names, readable
    names = subprocess.run([demangler], input=sass, capture_output=True, text=True).stdout if demangler else sass
    rows, name = [], None
    for line in names.splitlines():
        m = re.search(r"Function : (.+)$", line)
        if m:
            name = m.group(1).strip()
            keep = re.search(kernel_regex, name) is not None
            if keep:
                rows.append([name, 0, {op: 0 for op in ops}])
            continue
        m = INSTRUCTION.match(line)
        if name is None or not keep or not m:
            continue
        rows[-1][1] += 1
        for op in ops:
            if m.group(1).startswith(op):
                rows[-1][2][op] += 1
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("object")
    ap.add_argument("--kernel", default=".", help="a regex on the demangled kernel name (default: every kernel)")
    ap.add_argument("--op", action="append", help="an opcode prefix to count (repeatable)")
    a = ap.parse_args()
    ops = a.op or DEFAULT_OPS
    rows = count(a.object, a.kernel, ops)
    if not rows:
        sys.exit(f"sass_ops: no kernel of {a.object} matches {a.kernel!r}")
    print("instructions  " + "  ".join(f"{op:>9}" for op in ops) + "  kernel")
    for name, n, c in rows:
        print(f"{n:12d}  " + "  ".join(f"{c[op]:9d}" for op in ops) + f"  {name}")


if __name__ == "__main__":
    main()
