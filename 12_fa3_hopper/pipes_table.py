#!/usr/bin/env python3
"""Chapter 12's pipes tables, from one run of 12_fa3_hopper_pipes (the Markdown it prints).

  pipes_table.py PIPES_MD --run TEXT [--readme README.md] [--publish]

TEXT names the run (GPU, date, commit, where its log is). Prints the run's tables under that line;
with --readme, writes them between <!-- results:12_fa3_hopper:pipes --> and
<!-- /results:12_fa3_hopper:pipes --> and leaves the rest of the file alone. The README is
overwritten only with --publish (else: build/local/, scripts/publish.py).
"""
import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import publish  # noqa: E402

MARK = "12_fa3_hopper:pipes"


def tables(md, run):
    """The tool's headings ("# ...") become bold lines; its tables stay as they are."""
    out = [run, ""]
    for line in md.splitlines():
        if line.startswith("# "):
            out.append(f"**{line[2:].strip()}**")
        elif line.startswith("|") or not line.strip():
            out.append(line)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"
    if "| work |" not in text or "| warpgroup 0 |" not in text:
        raise ValueError("not the output of 12_fa3_hopper_pipes: its two tables are missing")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pipes_md", type=Path, help="what 12_fa3_hopper_pipes printed")
    ap.add_argument("--run", required=True, help="the line that names the run (GPU, date, commit, log)")
    ap.add_argument("--readme", type=Path, help="the README whose block receives the tables")
    publish.add_flag(ap)
    args = ap.parse_args()
    try:
        block = tables(args.pipes_md.read_text(), args.run)
    except (OSError, ValueError) as e:
        ap.error(f"{args.pipes_md}: {e}")
    if not args.readme:
        print(block, end="")
        return
    dest = publish.destination(args.readme, args.publish)
    text = dest.read_text()
    pattern = re.compile(f"(<!-- results:{MARK} -->\n).*?(<!-- /results:{MARK} -->)", re.S)
    if not pattern.search(text):
        ap.error(f"{args.readme}: no <!-- results:{MARK} --> block")
    dest.write_text(pattern.sub(lambda m: m.group(1) + block + m.group(2), text))
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
