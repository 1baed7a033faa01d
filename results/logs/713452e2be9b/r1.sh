#!/usr/bin/env bash
# Decode re-timing on a second machine, same commit as the publication: chapter 16's generate.py (random weights:
# the decode step's time does not depend on them) at batch 1 and 32 with a 32K-token cache, every implementation.
set -u
O=$1; B=build-gpu
{ uptime; lscpu | grep -E "Model name|^CPU\(s\)"; } > $O/host.log 2>&1
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native -DLADDER_ONLY=16_attention_in_a_model > $O/cfg.log 2>&1
timeout 120 cmake --build $B -j 16 --target _C > $O/build.log 2>&1 || { tail -5 $O/build.log; exit 1; }
echo "build at $SECONDS s"
cd 16_attention_in_a_model
PYTHONPATH=../$B/python LADDER_WARMUP_MS=300 timeout 100 python3 generate.py --attn ladder sdpa_flash sdpa_cudnn --batch 1 32 \
  --cache-len 32768 --out $O/generate.json > $O/generate.log 2>&1
echo "rc=$? at $SECONDS s"; grep -E "^decode" $O/generate.log; cat $O/host.log
