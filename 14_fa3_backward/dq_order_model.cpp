#include "dq_order_model.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "fa3_bwd_scheduler.h"

namespace fa3bwd::model {

const char* name(Order o) {
  switch (o) {
    case Order::Fast: return "fast";
    case Order::Ascending: return "ascending";
    case Order::Descending: return "descending";
  }
  return "?";
}

Walks walks(int N, int N_kv, bool causal, int B_r, int B_c) {
  Walks w{(N + B_r - 1) / B_r, (N_kv + B_c - 1) / B_c, {}};
  const int offset = N_kv - N;
  for (int j = 0; j < w.T_c; ++j) {
    const int first_query = causal ? std::max(0, j * B_c - offset) : 0;
    w.i_first.push_back(first_query < N ? first_query / B_r : w.T_r);
  }
  return w;
}

int Walks::last_key_tile(int i, int N, int offset, bool causal, int B_r, int B_c) const {
  if (!causal) return T_c - 1;
  const int last_query = std::min(N - 1, i * B_r + B_r - 1);
  return std::min(T_c - 1, (last_query + offset) / B_c);
}

// Relaxed to a fixed point: every time only grows, so a pass that changes nothing is the answer.
// A wait passes on to at most one more CTA per pass, so times that still grow after a few passes
// per CTA belong to a wait that never ends.
Schedule schedule(const Grid& g, Order order, int B_r, int B_c) {
  const Walks w = walks(g.N, g.N, g.causal, B_r, B_c);
  const int ctas = g.heads * w.T_c;
  const sched::Sections sections = sched::sections(g.heads, g.heads_per_section);
  std::vector<sched::Tile> tile(ctas);  // by place in the launch order
  std::vector<int> place(ctas);         // by head T_c + j
  for (int c = 0; c < ctas; ++c) tile[c] = sched::tile(c, w.T_c, sections), place[tile[c].head * w.T_c + tile[c].j] = c;
  std::vector<std::vector<double>> computed(ctas), added(ctas);
  std::vector<double> start(ctas, 0.0);
  for (int c = 0; c < ctas; ++c) computed[c].assign(w.T_r - w.i_first[tile[c].j], 0.0), added[c] = computed[c];
  auto finish = [&](int c) { return added[c].empty() ? start[c] : added[c].back(); };
  auto before = [&](int c, int i) -> int {  // the CTA whose addition into block i precedes c's (-1: none)
    const int j = tile[c].j, J = w.last_key_tile(i, g.N, 0, g.causal, B_r, B_c), h = tile[c].head * w.T_c;
    if (order == Order::Ascending) return j > 0 ? place[h + j - 1] : -1;
    if (order == Order::Descending) return j < J ? place[h + j + 1] : -1;
    return -1;
  };
  Schedule s;
  int passes = 0;
  for (bool changed = true; changed; ++passes) {
    if (passes > 4 * ctas + 16) {
      s.converged = false;
      break;
    }
    changed = false;
    std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;  // the SMs' free times
    for (int k = 0; k < g.slots; ++k) free_at.push(0.0);
    for (int c = 0; c < ctas; ++c) {
      const double t0 = std::max(free_at.top(), c > 0 ? start[c - 1] : 0.0);  // in launch order
      free_at.pop();
      changed |= t0 != start[c];
      start[c] = t0;
      const int j = tile[c].j;
      for (int n = 0; n < int(computed[c].size()); ++n) {
        const int i = w.i_first[j] + n;
        double cn = (n > 0 ? computed[c][n - 1] : start[c]) + 1.0;
        if (n >= 2) cn = std::max(cn, added[c][n - 2] + 1.0);  // its dQ buffer is free again
        double an = cn;
        if (const int p = before(c, i); p >= 0) an = std::max(an, added[p][i - w.i_first[tile[p].j]]);
        an += g.add_steps;
        if (cn != computed[c][n] || an != added[c][n]) computed[c][n] = cn, added[c][n] = an, changed = true;
      }
      free_at.push(finish(c));
    }
  }
  for (int c = 0; c < ctas; ++c) {
    s.ctas.push_back({tile[c].head, tile[c].j, start[c], finish(c)});
    s.makespan = std::max(s.makespan, finish(c));
  }
  return s;
}

}  // namespace fa3bwd::model
