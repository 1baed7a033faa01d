// The FA1 loops of one head as a list of visits, in the order its thread block makes
// them, with what each visit moves between HBM and the chip. It is the kernel's loop
// nest (fa_forward.cu) with the arithmetic left out; the byte counts are the tile
// model's (tile_model.cpp), and a test checks that the two add up to the same totals.
// scripts/figures/fa_loops.py draws it (07_fa_backward_loop_trace prints it as CSV).
#pragma once

#include <string>
#include <vector>

#include "attention_shape.h"
#include "fa_forward.h"

namespace fa1 {

// One (Q_i, K_j) tile pair. Bytes of one head; the K_j, V_j loads are charged to the
// first visit of each outer step.
struct Visit {
  int block, step;  // the thread block (FA1: one per head, so 0) and its step number
  int i, j;         // query tile, key tile
  double Q_read = 0, K_read = 0, V_read = 0, O_read = 0, O_write = 0, lm_read = 0, lm_write = 0;
};
std::vector<Visit> loop_trace(const ladder::AttentionShape& s, const Tiles& t);

// Shared memory of one block, part by part, in floats (the kernel's layout; the parts
// add up to smem_bytes() / 4).
struct SmemPart {
  std::string name;
  long floats;
};
std::vector<SmemPart> smem_parts(int d, int B_r, int B_c);

}  // namespace fa1
