// A model of the deterministic step's schedule, on the CPU: which query tiles each key tile's
// CTA visits (the kernel's Walk, restated), and when each CTA's writer can add its dQ block if
// the additions into a block must come in a fixed order. Time counts query-tile steps of one
// CTA: a consumer finishes its n-th tile one step after its (n-1)-th, and no earlier than the
// writer has handed back the buffer of its (n-2)-th (two buffers); the writer adds a block once
// the consumer has written it and the CTA before it in the order has added its own, which takes
// `add_steps` (a reduce's round trip to the L2). CTAs start in launch order (the kernel's
// fa3_bwd_scheduler.h: key tile, then head, in sections of heads) on `slots` SMs, one CTA each,
// and hold the SM until their last addition has landed.
// Nothing else of the GPU is modelled: the figure that draws it (scripts/figures/dq_order.py)
// says so.
#pragma once

#include <vector>

namespace fa3bwd::model {

enum class Order { Fast, Ascending, Descending };  // no order; key tile 0 first; the last key tile first
const char* name(Order o);

struct Walks {
  int T_r, T_c;
  std::vector<int> i_first;  // per key tile j: its first query tile (T_r: none)
  // The last key tile whose CTA visits query tile i (every one from 0 to it does).
  int last_key_tile(int i, int N, int offset, bool causal, int B_r, int B_c) const;
};
Walks walks(int N, int N_kv, bool causal, int B_r = 64, int B_c = 128);

struct Cta {
  int head, j;
  double start, finish;
};
struct Schedule {
  std::vector<Cta> ctas;  // in launch order
  double makespan = 0;    // the last addition
  bool converged = true;  // false: a wait that never ends (the order would deadlock)
};
struct Grid {
  int N = 4096, heads = 64, slots = 132;
  bool causal = true;
  double add_steps = 0.25;
  int heads_per_section = 1;  // at most; 1: head by head
};
Schedule schedule(const Grid& g, Order order, int B_r = 64, int B_c = 128);

}  // namespace fa3bwd::model
