// The FA2 loops of one head as a list of visits, with what each visit moves between HBM
// and the chip: the kernel's loop nest (fa_forward.cu) without the arithmetic, block by
// block (one block per row tile; the blocks run side by side). The byte counts are the
// tile model's (tile_model.cpp); a test checks that they add up to its totals.
// scripts/figures/fa_loops.py draws it (07_fa_backward_loop_trace prints it as CSV).
#pragma once

#include <string>
#include <vector>

#include "05_fa1_forward/loop_trace.h"
#include "attention_shape.h"
#include "fa_forward.h"

namespace fa2 {

struct Visit {
  int block, step;  // the thread block (= the row tile i) and its step number (= the key tile j)
  int i, j;
  double Q_read = 0, K_read = 0, V_read = 0, O_write = 0, L_write = 0;  // bytes of one head
};
std::vector<Visit> loop_trace(const ladder::AttentionShape& s, const Tiles& t);

// Shared memory of one block, part by part, in floats (adds up to smem_bytes() / 4).
std::vector<fa1::SmemPart> smem_parts(int d, int B_r, int B_c);

// Who holds O_i: for each element (r, c) of the B_r x d tile, the warp whose thread keeps
// it in registers (fa_forward.cu: o_tile = micro<TM, 4G>(threadIdx.x, RS, XS)). Row-major,
// B_r * d entries. Every row belongs to one warp: the warps split the queries (split-Q),
// so no warp ever adds into another's O_i.
std::vector<int> o_owner_warps(int d);

}  // namespace fa2
