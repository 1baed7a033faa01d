// The CPU side of chapter 09: what a learner without a GPU studies. Tables drawn from
// tc_layout.h's models (checked against the PTX ISA in the tests):
//   fragments  which lane holds which element of mma.m16n8k16's A, B and C fragments,
//              and which lane gives ldmatrix.x4 the address of which row
//   swizzle    the bank of each 16-byte chunk of an 8-row tile, plain and 128B-swizzled,
//              and the wavefronts one ldmatrix phase costs in each
//   wgmma      the accumulator layout of wgmma.m64nNk16 (warp 0's rows)
// `09_tensor_core_matmul --layouts` prints them; `--layouts csv` prints the same as CSV
// for plot_layouts.py, which draws fragments.png for the README.
#pragma once

#include <ostream>

namespace tcmm {

void print_fragments(std::ostream& out);
void print_swizzle(std::ostream& out);
void print_wgmma_accumulators(std::ostream& out);
void print_layouts(std::ostream& out);  // all three

// One line per element: table,row,col,lane,reg (table in mma_a, mma_b, mma_c,
// ldsm_a_addr, wgmma_d) and one per chunk: swizzle,row,chunk,plain_group,swizzled_group.
void print_layouts_csv(std::ostream& out);

}  // namespace tcmm
