// The backward's main loop (dk_dv_kernel in fa_backward.cu) as a list of visits: one
// thread block per key tile K_j/V_j, walking the query tiles Q_i. Without a mask each
// block starts at its own query tile (block j at tile j mod T_r) so that, step by step,
// the blocks add their dQ_i terms into different tiles of dQ; with a causal mask block j
// starts at the diagonal tile j and skips the query tiles before it. The index arithmetic
// is the kernel's (q_tile_row0); the tests check its two promises: every tile pair is
// visited once, and no two blocks add into the same dQ_i at the same step.
#pragma once

#include <string>
#include <vector>

#include "05_fa1_forward/loop_trace.h"
#include "attention_shape.h"
#include "fa_backward.h"

namespace fa2 {

struct BackwardVisit {
  int block, step;  // the thread block (= the key tile j) and its step number
  int i, j;         // the tile pair; dQ_i is where the block's atomics go at this step
};
// rotate = false: the loop as it would be without the rotation (every block starts at
// tile 0), for comparison.
std::vector<BackwardVisit> backward_trace(const ladder::AttentionShape& s, const BackwardTiles& t, bool rotate = true);

// The most blocks that add into one dQ_i tile in the same step (1: no two collide),
// assuming the blocks of a head run in lock step.
int max_blocks_per_dq_tile(const std::vector<BackwardVisit>& visits);

// Shared memory of one dk_dv_kernel block, part by part, in floats.
std::vector<fa1::SmemPart> backward_smem_parts(int d, const BackwardTiles& t);
// The same for dq_kernel (the deterministic path): Q_i, dO_i, two K_j buffers, V_j, dS_ij.
std::vector<fa1::SmemPart> dq_smem_parts(int d, const BackwardTiles& t);

}  // namespace fa2
