#!/usr/bin/env python3
"""Regenerates every committed figure of chapters 01-15 from the chapters' CPU models.

    cmake --build build --target 01_vector_add 02_matmul_naive 03_matmul_tiled 04_online_softmax \
        07_fa_backward_loop_trace 09_tensor_core_matmul 09_tensor_core_matmul_schedule 10_fa2_tensor_cores_p_reuse \
        11_flash_decoding_split_trace 12_fa3_hopper_schedule 14_fa3_backward_dq_order 14_fa3_backward_schedule \
        14_fa3_backward_tiles 15_attention_variants_block_masks
    scripts/figures/make_all.py [BUILD_DIR]        (default: build/)

No GPU is needed: each script runs a chapter executable's CPU mode (--print-model,
--layouts-csv) or a chapter's CPU tool, which prints the model the chapter's code uses or its
Cpu* tests check, and draws it. The schedules (09, 12, 14) are the kernels' loops played on a model
of the hardware (09_tensor_core_matmul/schedule_model.h), labelled as such, not measurements.
  thread_map.py   01_vector_add/figures/thread_map.png       which thread adds which element
  coalescing.py   02_matmul_naive/figures/coalescing.png     one warp's addresses and sectors
  bank_map.py     03_matmul_tiled/figures/bank_map.png       one warp's shared-memory banks
  online_softmax.py 04_online_softmax/figures/online_softmax.png  the (m, l) merge, element by element and in blocks
  fa_loops.py     05/06/07 figures/*.png                     loop order, tiles, HBM and on-chip
  09_tensor_core_matmul/plot_layouts.py  09 figures/fragments.png   who holds what in mma.sync; the swizzle
  tc_pipelines.py 09 figures/cp_async_pipeline.png           steps 1-3 vs 4: the cp.async stages
                  09 figures/warp_specialised.png            steps 6a, 6b: TMA producer, mbarriers, wgmma
  p_reuse.py      10 figures/p_reuse.png                     S's C fragments are P~'s A fragment
  split_merge.py  11 figures/split_merge.png                 split-KV partials and the LSE merge
  fa3_schedule.py 12 figures/fa3_schedule.png                warpspec, pingpong, intrawg schedules
  fp8_key_tiles.py 12 figures/fp8_key_tiles.png              FP8's key tiles: shared memory, stages, registers
  dq_order.py     14 figures/dq_order.png                    the deterministic dQ order on a schedule model
  bwd_schedule.py 14 figures/bwd_schedule.png                dQ waited for alone vs the next S^T behind it
  bwd_tiles.py    14 figures/bwd_tiles.png                   the tile policy: who computes what, shared memory
  block_masks.py  15 figures/block_masks.png                 the built-in masks' empty, partial and full tiles
  balance.py      15 figures/balance.png                     the documents' work over 132 SMs: dealt, snake, launch order
"""
import argparse
import pathlib
import subprocess
import sys

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("build_dir", nargs="?", help="the build folder (default: build/)")
build = ap.parse_args().build_dir or str(pathlib.Path(__file__).resolve().parents[2] / "build")
here = pathlib.Path(__file__).resolve().parent
for script in ("thread_map.py", "coalescing.py", "bank_map.py", "online_softmax.py", "fa_loops.py", "tc_pipelines.py", "p_reuse.py",
               "split_merge.py", "fa3_schedule.py", "fp8_key_tiles.py", "dq_order.py", "bwd_schedule.py",
               "bwd_tiles.py", "block_masks.py", "balance.py"):
    if subprocess.run([sys.executable, str(here / script), build]).returncode != 0:
        sys.exit(f"make_all.py: {script} failed")
# plot_layouts.py reads the layout tables on stdin.
layouts = pathlib.Path(build) / "bin" / "09_tensor_core_matmul"
if not layouts.exists():
    sys.exit(f"{layouts} not found: build it first (cmake --build {build} --target 09_tensor_core_matmul)")
csv = subprocess.run([str(layouts), "--layouts-csv"], capture_output=True, text=True)
plot = here.parents[1] / "09_tensor_core_matmul" / "plot_layouts.py"
if csv.returncode != 0 or subprocess.run([sys.executable, str(plot)], input=csv.stdout, text=True).returncode != 0:
    sys.exit(f"make_all.py: plot_layouts.py failed{': ' + csv.stderr if csv.returncode else ''}")
