#!/usr/bin/env python3
"""Runs the shell commands of every README (and WORKLOG) as a learner would, so that none rots.

    scripts/readme_commands.py --list          # every command, where it is, and what it needs
    scripts/readme_commands.py                 # run the CPU ones (after cmake --workflow --preset test)

The convention the READMEs follow:
  - A command is a line of a code block (fenced with ``` or indented by four spaces) that starts
    with a program: a path (build/bin/..., scripts/..., NN_topic/...sh) or cmake, ctest, python3,
    ncu, nsys, cuobjdump, compute-sanitizer, diff, optionally after VAR=value assignments. A line
    ending in \\ or inside an open quote continues on the next.
  - A command that needs a GPU (or the files of a GPU run) ends in a comment that starts with
    GPU:  build/bin/05_fa1_forward --profile fa1   # GPU: one launch, for ncu
    Those are listed as skipped. Every other command runs on a machine without a GPU and must
    exit 0, or fail only as an untouched exercise stub does (its output says "unimplemented: edit").
  - Commands quoted in the prose (`...`) are checked, not run: a ctest names its build directory
    (--test-dir or --preset), and every repository path a command names exists (build*/ aside).

Runs in the repository it belongs to, in the READMEs' order, from its root (the commands use
paths relative to it), sharing build/ with the test workflow: run it in a fresh clone (.ci/run
does), since the commands write their outputs where the READMEs say. Exit status 1 when a
command fails or a quoted command breaks the convention.
"""
import argparse
import pathlib
import re
import shlex
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAMS = {"cmake", "ctest", "python3", "ncu", "nsys", "cuobjdump", "compute-sanitizer", "diff"}
UNIMPLEMENTED = "unimplemented: edit"


def readmes():
    """Every README of the ladder, top first, then each chapter's other pages (its WORKLOG.md, its exercises'
    README, chapter 12's FP8 study) and the glossary."""
    pages = [ROOT / "README.md"] + sorted(ROOT.glob("[0-9][0-9]_*/README.md"))
    others = [*ROOT.glob("[0-9][0-9]_*/WORKLOG.md"), *ROOT.glob("[0-9][0-9]_*/exercises/README.md"),
              *ROOT.glob("[0-9][0-9]_*/FP8_ACCURACY.md")]
    return pages + sorted(others) + [p for p in [ROOT / "GLOSSARY.md"] if p.exists()]


def program(words):
    """The command's program (after VAR=value words), or None when the line is not a command."""
    for w in words:
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            continue
        return w if (w in PROGRAMS or re.match(r"^(build[\w-]*/bin/|scripts/|\d\d_\w+/)[\w./-]+$", w)) else None
    return None


def comment(command):
    """The text of the command's trailing # comment (outside quotes), or ''."""
    quote = None
    for i, c in enumerate(command):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or command[i - 1].isspace()):
            return command[i + 1:].strip()
    return ""


def complete(command):
    """Whether the command ends here (no trailing backslash, no open quote)."""
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command, comments=True)
        return True
    except ValueError:  # an open quote: the command goes on
        return False


def block_commands(page):
    """[(line number, command)] of the page's code blocks."""
    out, fenced, language, pending, start = [], False, "", None, 0
    for n, line in enumerate(page.read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced, language = not fenced, stripped[3:].strip()
            continue
        if pending is not None:
            pending += "\n" + line
            if complete(pending):
                out.append((start, pending))
                pending = None
            continue
        in_block = (fenced and language in ("", "sh", "bash", "console")) or (not fenced and line.startswith("    "))
        if not in_block or not stripped or stripped.startswith("#"):
            continue
        try:
            words = shlex.split(stripped, comments=True)
        except ValueError:
            words = stripped.split()
        if not program(words):
            continue
        if complete(stripped):
            out.append((n, stripped))
        else:
            pending, start = stripped, n
    return out


def quoted_commands(page):
    """[(line number, command)] of the commands quoted in the prose (`...`)."""
    out = []
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("    ") or line.strip().startswith("```"):
            continue
        for q in re.findall(r"`([^`]+)`", line):
            try:
                words = shlex.split(q)
            except ValueError:
                continue
            if program(words) and (len(words) > 1 or "/" in words[0]):
                out.append((n, q))
    return out


def executables():
    """The names of every executable the CMakeLists define (what build/bin/ can hold)."""
    names = set()
    for cmake in [ROOT / "CMakeLists.txt", ROOT / "common" / "CMakeLists.txt", *ROOT.glob("tools/CMakeLists.txt"),
                  *ROOT.glob("[0-9][0-9]_*/CMakeLists.txt")]:
        text = cmake.read_text()
        for chapter, args in re.findall(r"ladder_add_chapter\(\s*(\w+)([^)]*)\)", text):
            names |= {chapter, chapter + "_test", chapter + "_bench"}
            if re.search(r"\bEXERCISES\b", args):  # the learner's exercise binary (cmake/Ladder.cmake)
                names.add(chapter + "_exercise")
        names |= set(re.findall(r"add_executable\(\s*(\w+)", text))
    return names


def lint(command, exes):
    """What is wrong with a quoted or listed command, or ''."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return ""
    for i, w in enumerate(words):
        if w == "ctest" and not any(x.startswith(("--test-dir", "--preset")) for x in words[i + 1:]):
            return "ctest without --test-dir or --preset only works inside the build directory"
    for w in words:
        w = w.split("=", 1)[-1]
        if re.match(r"^(scripts|\d\d_\w+)/[\w./-]+\.(py|sh|cu|cuh|h|cpp|md)$", w) and not (ROOT / w).exists():
            return f"{w} does not exist"
        m = re.match(r"^build[\w-]*/bin/(\w+)$", w)
        if m and m.group(1) not in exes and "NN_" not in w:  # NN_topic: any chapter
            return f"no CMakeLists.txt defines an executable {m.group(1)}"
    return ""


def run(command, timeout):
    """(exit status, or None after the timeout; stdout and stderr) of the command, from the root."""
    try:
        r = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        return r.returncode, r.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode(errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list the commands and what they need; run nothing")
    ap.add_argument("--only", metavar="REGEX", help="run only the commands that match REGEX")
    ap.add_argument("--skip", metavar="REGEX", help="do not run the commands that match REGEX (already run)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per command (default: %(default)s)")
    args = ap.parse_args()
    only = re.compile(args.only) if args.only else None
    skip = re.compile(args.skip) if args.skip else None

    failures, ran, gpu, exes = [], 0, [], executables()
    for page in readmes():
        where = page.relative_to(ROOT)
        for n, command in quoted_commands(page):
            if problem := lint(command, exes):
                failures.append(f"{where}:{n}: `{command}`: {problem}")
        for n, command in block_commands(page):
            flat = command.replace("\n", " ")
            if problem := lint(command, exes):
                failures.append(f"{where}:{n}: {flat}: {problem}")
            if comment(command.splitlines()[-1]).startswith("GPU"):
                gpu.append(f"{where}:{n}: {flat}")
                if args.list:
                    print(f"GPU  {where}:{n}: {flat}")
                continue
            if args.list:
                print(f"CPU  {where}:{n}: {flat}")
                continue
            if (only and not only.search(flat)) or (skip and skip.search(flat)):
                continue
            print(f"\n=== {where}:{n}: {flat}", flush=True)
            t0 = time.time()
            rc, output = run(command, args.timeout)
            ran += 1
            tail = "\n".join(output.rstrip().splitlines()[-15:])
            took = f"{time.time() - t0:.0f} s"
            if rc == 0 or (rc is not None and UNIMPLEMENTED in output):
                print(f"ok in {took}{' (an exercise stub, as given)' if rc else ''}\n{tail}", flush=True)
            else:
                why = f"exit {rc}" if rc is not None else f"still running after {args.timeout} s"
                print(f"FAILED ({why}) in {took}\n{tail}", flush=True)
                failures.append(f"{where}:{n}: {flat}: {why}")
    if not args.list:
        print(f"\nREADME commands: {ran} run, {len(gpu)} skipped (need a GPU):")
        for g in gpu:
            print(f"  skipped  {g}")
    for f in failures:
        print(f"FAILED  {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
