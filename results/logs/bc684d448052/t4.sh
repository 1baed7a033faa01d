#!/usr/bin/env bash
# Publication call 4: every PyTorch anchor (all groups, FlexAttention's included), then chapter 16's model stage.
set -u
O=$1
export LADDER_WARMUP_MS=300
WORK_DIR=/tmp/p4 STAGES="build anchors model" timeout 580 scripts/gpu_check.sh $O/c4 > $O/c4.log 2>&1
cat $O/c4/summary.md
