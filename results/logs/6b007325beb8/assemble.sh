#!/usr/bin/env bash
# Joins the publication run for scripts/results.py from the committed files that results/publication.json names
# (scripts/results.py --assemble): every chapter's published bench.json and anchors, chapters 14 and 15 as this
# commit's calls measured them (e3.sh, e2.sh), chapter 12's d = 256 rows (cd367e32ce0a), chapter 13's loopback
# ratios, the Nsight Compute and sweep tables of 06 and 08, 07's error-vs-N study, the timing study, chapter 16's
# runs (its ratios and tables recomputed by its report.py) and the provenance text (PROVENANCE.md, beside this
# script). Then:
#
#   results/logs/6b007325beb8/assemble.sh RUN && scripts/results.py RUN results --readme README.md
#
# regenerates results/ and every README block; scripts/results.py --check does both in a temporary folder and
# compares with the committed files. (As first run, this script took the E2 and E3 output folders and copied
# chapter 15's and 14's JSON from them, the same files now committed under results/; it missed chapter 12's
# d = 256 rows, chapter 16's report.md and 08's executable table, which publication.json now names.)
set -eu
RUN=${1:?usage: assemble.sh RUN_DIR}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
exec python3 "$ROOT/scripts/results.py" --assemble "$RUN"
