#!/usr/bin/env python3
"""Is the machine code of every kernel the same as at another commit? A check for changes made
without a GPU: a refactor that leaves a kernel's SASS instruction for instruction as it was leaves
its tested and measured behaviour as it was too.

    scripts/sass_compare.py REV [--build build] [FILE.cu ...]

Compiles each FILE (default: every .cu of the build's compile_commands.json) twice with the build's
own command, once from this tree and once from REV (a temporary git worktree), and compares
`cuobjdump -sass` kernel by kernel. Kernels are matched by name, with the hash of anonymous
namespaces (which follows the file's path) left out; a kernel whose name changed (a template
argument added with its default) is matched by its instructions. Prints one line per file and
exits 1 when a kernel of REV has no identical kernel here. Needs nvcc and cuobjdump, no GPU.
"""
import argparse
import json
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
ANONYMOUS = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+")


def kernels(obj):
    """{name: [instructions]} of an object file, addresses and encodings left out."""
    sass = subprocess.run(["cuobjdump", "-sass", str(obj)], capture_output=True, text=True, check=True).stdout
    out = {}
    for chunk in re.split(r"\n\s*Function : ", sass)[1:]:
        name, body = chunk.split("\n", 1)
        ins = [re.sub(r"\s+", " ", m.group(1)) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(.*?);", body)]
        out[ANONYMOUS.sub("<anonymous>", name.strip())] = ins
    return out


def compile_both(entry, tree, old_tree, tmp):
    """The build's command for one file, run on this tree and on REV's; the two objects."""
    objs = []
    for tag, root in (("new", tree), ("old", old_tree)):
        words = shlex.split(entry["command"].replace(str(tree), str(root)))
        obj = tmp / f"{tag}_{pathlib.Path(entry['file']).name}.o"
        words[words.index("-o") + 1] = str(obj)
        subprocess.run(words, cwd=entry["directory"], check=True, capture_output=True)
        objs.append(obj)
    return objs


def compare(old, new):
    """Kernels of `old` with an identical kernel in `new`, and those without."""
    same, unmatched_old = [], []
    for name, ins in old.items():
        if new.get(name) == ins:
            same.append(name)
        else:
            unmatched_old.append(name)
    spare = [n for n in new if n not in same]
    renamed, differ = 0, []
    for name in unmatched_old:  # a new name for the same code (a defaulted template argument)
        match = next((n for n in spare if new[n] == old[name]), None)
        if match:
            spare.remove(match)
            renamed += 1
        else:
            differ.append(name)
    return len(same), renamed, differ, len(spare) - len(differ)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev", help="the commit to compare with")
    ap.add_argument("files", nargs="*", help="CUDA sources, relative to the repository (default: all the build has)")
    ap.add_argument("--build", type=pathlib.Path, default=ROOT / "build", help="a configured build (compile_commands.json)")
    args = ap.parse_intermixed_args()
    commands = json.loads((args.build / "compile_commands.json").read_text())
    wanted = {str((ROOT / f).resolve()) for f in args.files}
    entries = {e["file"]: e for e in commands if e["file"].endswith(".cu") and (not wanted or e["file"] in wanted)}
    if not entries:
        ap.error("no CUDA source of the build matches")
    failed = False
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = pathlib.Path(tmp_dir)
        old_tree = tmp / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old_tree), args.rev], check=True)
        try:
            for path, entry in sorted(entries.items()):
                rel = pathlib.Path(path).relative_to(ROOT)
                if not (old_tree / rel).exists():
                    print(f"{rel}: not at {args.rev}")
                    continue
                new_obj, old_obj = compile_both(entry, ROOT, old_tree, tmp)
                same, renamed, differ, added = compare(kernels(old_obj), kernels(new_obj))
                failed |= bool(differ)
                print(f"{rel}: {same} identical" + (f", {renamed} identical under a new name" if renamed else "") +
                      (f", {len(differ)} DIFFER" if differ else "") + (f", {added} new" if added > 0 else ""))
                for name in differ:
                    print(f"    differs: {name}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_tree)], check=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
