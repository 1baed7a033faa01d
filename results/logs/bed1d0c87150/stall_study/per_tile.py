#!/usr/bin/env python3
"""Instructions per visited tile from ncu_stalls.log. Tiles visited: the backward's 64 x 128 and the forward's
128 x 128 tiles of B2 H16 N8192; the window's backward visits 1080 of the 8192 tiles per head (its block mask),
the 10% tile set 11.25% of them (15_attention_variants_block_masks --tile-sets)."""
import pathlib
import re

heads = 32
tiles = {"bwd:window": 1080 * heads, "bwd:dense": 128 * 64 * heads, "bwd:tiles10": 0.1125 * 128 * 64 * heads,
         "fwd:tiles10": 0.1125 * 64 * 64 * heads, "fwd:dense": 64 * 64 * heads}
log = (pathlib.Path(__file__).parent / "ncu_stalls.log").read_text()
per = {}
for block in re.split(r"== ncu ", log)[1:]:
    name = block.split("\n")[0]
    inst = float(re.search(r"inst_executed.sum inst ([\d,]+)", block).group(1).replace(",", ""))
    per[name] = inst / tiles[name]
for name, v in per.items():
    dense = per["bwd:dense" if name.startswith("bwd") else "fwd:dense"]
    print(f"{name:12s} {v:7.0f} instructions per tile = {v / dense:.2f}x dense")
