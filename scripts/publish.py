"""Where the scripts that fill README tables and draw a run's figures write.

A file in the repository holds the published run (the H200's tables in the READMEs,
FP8_ACCURACY.md, the figures drawn from that run). A script overwrites it only when asked to,
with --publish; otherwise it writes the same content to build/local/<the same path> and says
so, so that a run on another GPU, or a CPU model's columns, never replace the published ones.
Paths outside the repository, or under its ignored build*/ and out/ folders, are written as given.
"""
import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
LOCAL = ROOT / "build" / "local"


def add_flag(parser):
    parser.add_argument("--publish", action="store_true",
                        help="overwrite the published files in the repository (without it: build/local/<same path>)")


def is_published(path):
    path = pathlib.Path(path).resolve()
    if ROOT not in path.parents:
        return False
    top = path.relative_to(ROOT).parts[0]
    return not (top.startswith("build") or top == "out")


def destination(path, publish):
    """The file to write for `path`: itself when publishing (or not a published file), else its
    copy under build/local/, which starts as the published file so that marker blocks can be
    filled in it. Call it once per file and run, before the first write."""
    path = pathlib.Path(path).resolve()
    if publish or not is_published(path):
        return path
    local = LOCAL / path.relative_to(ROOT)
    local.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.copyfile(path, local)
    print(f"{path.relative_to(ROOT)} holds the published run: writing {local.relative_to(ROOT)} instead "
          "(--publish overwrites it)", file=sys.stderr)
    return local
