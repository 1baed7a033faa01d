#!/usr/bin/env bash
# Joins a publication run for scripts/results.py: every chapter's published bench.json and anchors as they are,
# chapters 14 and 15 replaced by this commit's runs (E2: chapter 15's call, E3: chapter 14's), chapter 13's loopback
# ratios, and the provenance text (PROVENANCE.md, written beside this script).
set -eu
E2=${1:?e2 dir}; E3=${2:?e3 dir}; RUN=${3:?run dir}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$RUN"; mkdir -p "$RUN"/bench "$RUN"/logs "$RUN"/handoff/13
for d in "$ROOT"/results/[0-9][0-9]_*/; do
  ch=$(basename "$d"); [[ -f $d/bench.json ]] && cp "$d/bench.json" "$RUN/bench/$ch.json"
done
cp "$E2/bench15.json" "$RUN/bench/15_attention_variants.json"
cp "$E3/bench14.json" "$RUN/bench/14_fa3_backward.json"
cp "$ROOT"/results/anchors*.json "$RUN/"
cp "$E2/anc15/anchors2.json" "$RUN/anchors2_15_attention_variants.json"
cp "$E3/anc14/anchors2.json" "$RUN/anchors2_14_fa3_backward.json"
cp "$ROOT/results/logs/ring_e1863710/ratios_loopback.json" "$RUN/handoff/13/"
cp "$ROOT/results/logs/test.log" "$ROOT/results/logs/ladder.log" "$RUN/logs/"
cp "$(dirname "$0")/PROVENANCE.md" "$RUN/PROVENANCE.md"
# Chapter 16's ratios, recomputed by its report from its published runs' JSON (the same figures).
mkdir -p /tmp/m16/model && rm -f /tmp/m16/model/* && cp "$ROOT"/results/16_attention_in_a_model/*.json /tmp/m16/model/
rm /tmp/m16/model/bench.json && python3 "$ROOT/16_attention_in_a_model/report.py" /tmp/m16/model /tmp/m16 > /dev/null
cp /tmp/m16/16_attention_in_a_model.summary.json "$RUN/bench/"
cp "$ROOT/results/logs/ladder.log" "$RUN/logs/"
