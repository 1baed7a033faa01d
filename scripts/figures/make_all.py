#!/usr/bin/env python3
"""Regenerates every committed figure of chapters 01-07 from the chapters' CPU models.

    cmake --build build --target 01_vector_add 02_matmul_naive 03_matmul_tiled 07_fa_backward_loop_trace
    scripts/figures/make_all.py [BUILD_DIR]        (default: build/)

No GPU is needed: each script runs a chapter executable's --print-model (or the FA loop
trace tool), which prints the model the chapter's Cpu* tests check, and draws it.
  thread_map.py   01_vector_add/figures/thread_map.png       which thread adds which element
  coalescing.py   02_matmul_naive/figures/coalescing.png     one warp's addresses and sectors
  bank_map.py     03_matmul_tiled/figures/bank_map.png       one warp's shared-memory banks
  fa_loops.py     05/06/07 figures/*.png                     loop order, tiles, HBM and on-chip
"""
import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).resolve().parent
for script in ("thread_map.py", "coalescing.py", "bank_map.py", "fa_loops.py"):
    subprocess.run([sys.executable, str(here / script), *sys.argv[1:]], check=True)
