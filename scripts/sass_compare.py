#!/usr/bin/env python3
"""Is the machine code of every kernel the same as at another commit? A check for changes made
without a GPU: a refactor that leaves a kernel's SASS instruction for instruction as it was leaves
its tested and measured behaviour as it was too.

    scripts/sass_compare.py REV [--build build] [FILE.cu ...] [--old OLD.cu[=LIKE.cu] ...]

Compiles each FILE (default: every .cu of the build's compile_commands.json) with the build's own
command from this tree, and each of them that exists at REV from REV (a temporary git worktree),
then compares `cuobjdump -sass` kernel by kernel across all the files at once: a kernel that moved
to another file, or a file split in two, still finds its twin. `--old OLD.cu=LIKE.cu` adds a file
that exists only at REV (moved or removed since), compiled with the command of LIKE.cu (default: a
file of the build in OLD's directory). Kernels are matched by name, with the hash of anonymous
namespaces (which follows the file's path) left out; a kernel whose name changed (a template
argument added with its default) is matched by its instructions. Prints one line per file of REV
and exits 1 when a kernel of REV has no identical kernel here. Needs nvcc and cuobjdump, no GPU.
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
ANONYMOUS = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]{8}")


def kernels(obj):
    """{name: [instructions]} of an object file, addresses and encodings left out."""
    sass = subprocess.run(["cuobjdump", "-sass", str(obj)], capture_output=True, text=True, check=True).stdout
    out = {}
    for chunk in re.split(r"\n\s*Function : ", sass)[1:]:
        name, body = chunk.split("\n", 1)
        ins = [re.sub(r"\s+", " ", m.group(1)) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(.*?);", body)]
        out[ANONYMOUS.sub("<anonymous>", name.strip())] = ins
    return out


def compile_at(entry, source, root, tree, obj):
    """The build's command for one file (entry), run on `source` of `root`, writing `obj`."""
    command = entry["command"].replace(entry["file"], str(root / source)).replace(str(tree), str(root))
    words = shlex.split(command)
    words[words.index("-o") + 1] = str(obj)
    done = subprocess.run(words, cwd=entry["directory"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"sass_compare: {source} does not compile at {root}:\n{done.stderr[-3000:]}")
    return obj


def compare(old, new):
    """old: {file: {kernel: instructions}} of REV; new: the same of this tree. Per file of REV:
    (identical by name here, identical in another file here, identical under a new name, names that
    differ); and the number of kernels here that match none of REV's."""
    by_name = {}
    for kernels_of_file in new.values():
        for name, ins in kernels_of_file.items():
            by_name.setdefault(name, []).append(ins)
    used = set()
    report = {}
    unmatched = []
    for path, kernels_of_file in old.items():
        same = moved = 0
        for name, ins in kernels_of_file.items():
            if new.get(path, {}).get(name) == ins:
                same += 1
                used.add(name)
            elif ins in by_name.get(name, []):
                moved += 1
                used.add(name)
            else:
                unmatched.append((path, name, ins))
        report[path] = [same, moved, 0, []]
    spare = {n: i for f in new.values() for n, i in f.items() if n not in used}
    for path, name, ins in unmatched:  # a new name for the same code (a defaulted template argument)
        match = next((n for n, i in spare.items() if i == ins), None)
        if match:
            del spare[match]
            report[path][2] += 1
        else:
            report[path][3].append(name)
    return report, len(spare)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev", help="the commit to compare with")
    ap.add_argument("files", nargs="*", help="CUDA sources, relative to the repository (default: all the build has)")
    ap.add_argument("--build", type=pathlib.Path, default=ROOT / "build", help="a configured build (compile_commands.json)")
    ap.add_argument("--old", action="append", default=[], metavar="OLD.cu[=LIKE.cu]",
                    help="a source that exists only at REV, compiled with LIKE.cu's command (repeatable)")
    args = ap.parse_intermixed_args()
    commands_file = args.build / "compile_commands.json"
    if not commands_file.is_file():
        ap.error(f"{commands_file} not found: configure a build with CMAKE_EXPORT_COMPILE_COMMANDS=ON")
    commands = json.loads(commands_file.read_text())
    by_file = {e["file"]: e for e in commands if e["file"].endswith(".cu")}
    wanted = {str((ROOT / f).resolve()) for f in args.files}
    missing = sorted(wanted - set(by_file))
    if missing:
        ap.error("not a CUDA source of the build: " + ", ".join(missing))
    entries = {f: e for f, e in by_file.items() if not wanted or f in wanted}
    if not entries:
        ap.error("no CUDA source of the build matches")
    olds = {}  # OLD (relative) -> the entry whose command compiles it
    for spec in args.old:
        old, _, like = spec.partition("=")
        if like:
            entry = by_file.get(str((ROOT / like).resolve()))
            if entry is None:
                ap.error(f"--old {spec}: {like} is not a CUDA source of the build")
        else:
            folder = str((ROOT / old).resolve().parent)
            entry = next((e for f, e in sorted(by_file.items()) if str(pathlib.Path(f).parent) == folder), None)
            if entry is None:
                ap.error(f"--old {spec}: no source of the build in {pathlib.Path(old).parent}; name one: {old}=LIKE.cu")
        olds[pathlib.Path(old)] = entry
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = pathlib.Path(tmp_dir)
        old_tree = tmp / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old_tree), args.rev], check=True)
        try:
            new, old = {}, {}
            for i, (path, entry) in enumerate(sorted(entries.items())):
                rel = pathlib.Path(path).relative_to(ROOT)
                new[rel] = kernels(compile_at(entry, rel, ROOT, ROOT, tmp / f"new{i}.o"))
                if (old_tree / rel).exists():
                    old[rel] = kernels(compile_at(entry, rel, old_tree, ROOT, tmp / f"old{i}.o"))
                else:
                    print(f"{rel}: not at {args.rev} (its kernels are matched against REV's files)")
            for i, (rel, entry) in enumerate(sorted(olds.items())):
                if not (old_tree / rel).exists():
                    ap.error(f"--old {rel}: not at {args.rev}")
                old[rel] = kernels(compile_at(entry, rel, old_tree, ROOT, tmp / f"only_old{i}.o"))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_tree)], check=False)
    report, added = compare(old, new)
    failed = False
    for rel, (same, moved, renamed, differ) in sorted(report.items()):
        failed |= bool(differ)
        print(f"{rel}: {same} identical" + (f", {moved} identical in another file" if moved else "") +
              (f", {renamed} identical under a new name" if renamed else "") +
              (f", {len(differ)} DIFFER" if differ else ""))
        for name in differ:
            print(f"    differs: {name}")
    if added:
        print(f"{added} kernel(s) here match none of {args.rev}'s (new code)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
