"""Shared helpers of the figure scripts: run a chapter's CPU model, read its CSV, save a PNG.

Every figure is drawn from data a chapter executable prints on the CPU (no GPU needed):
the scripts never compute a model themselves, they only draw what the C++ models say.
"""
import argparse
import csv
import io
import pathlib
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_dir():
    """The build folder: the first argument, else build/. Every figure script takes [BUILD_DIR]
    and --help (its docstring); anything else on its command line is refused."""
    ap = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", type=pathlib.Path, default=ROOT / "build",
                    help="the build folder (default: build/)")
    build = ap.parse_args().build_dir
    if not build.is_dir():
        ap.error(f"BUILD_DIR {build} is not a directory: configure and build first (cmake --preset default)")
    return build


def model_csv(exe, *args):
    """Runs BUILD/bin/EXE ARGS and parses its stdout as CSV (a list of dicts)."""
    path = build_dir() / "bin" / exe
    if not path.exists():
        sys.exit(f"{path} not found: build it first (cmake --build {build_dir()} --target {exe})")
    run = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{path} {' '.join(map(str, args))} failed (exit {run.returncode}):\n{run.stderr}")
    return list(csv.DictReader(io.StringIO(run.stdout)))


def save(fig, chapter, name):
    """Saves the figure as CHAPTER/figures/NAME.png (small: the PNGs are committed)."""
    out = ROOT / chapter / "figures" / f"{name}.png"
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size // 1024} KiB)")
    return out
