// Prints block masks (block_mask.h) as CSV, on the CPU:
//   (no argument)   the built-in masks of one head of N = 2048 queries and keys, tiles of 64 x 128,
//                   for scripts/figures/block_masks.py
//   --tile-sets     the benchmark's random tile sets (cases.h): the fraction of tiles each kernel
//                   visits, forward (128-row tiles) and backward (64-row), for plot_sparsity.py
//   --balance       how evenly the measured cases' work spreads over an H200's 132 SMs, in tiles
//                   visited (a CTA's fixed costs left out): the forward's persistent CTAs with their
//                   rows dealt round after round and in a snake draft (the largest share / the
//                   mean); the backward's CTAs in chapter 14's launch order, each head's key tiles in
//                   order and longest walk first, each started on the SM that frees up first (the
//                   last SM to finish / the mean)
//   --balance-ctas  the same for the documents, CTA by CTA (forward) and SM by SM (backward), for
//                   scripts/figures/balance.py
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <queue>
#include <vector>

#include "14_fa3_backward/fa3_bwd_scheduler.h"
#include "block_mask.h"
#include "cases.h"
#include "device.h"
#include "flex.h"
#include "flex_problem.h"
#include "mods.h"

namespace {
template <class Mask>
void print(const char* name, const Mask& mask, int N) {
  const variants::BlockMask m = variants::make_block_mask(mask, 1, 1, N, N);
  for (int i = 0; i < m.T_r; ++i)
    for (int j = 0; j < m.T_c; ++j) std::printf("%s,%d,%d,%d,%.4f\n", name, i, j, int(m.kind(0, 0, i, j)), m.density());
}

void tile_sets() {
  const ladder::AttentionShape s = variants::cases::sparse_shape();
  std::printf("density,fwd_visited,bwd_visited\n");
  for (double density : variants::cases::kDensities) {
    variants::Variant v;
    v.kind = variants::Kind::Tiles, v.tile_density = density;
    const variants::ModsData h(v, s);
    std::printf("%.2f,%.4f,%.4f\n", density, variants::block_mask(v, s, h, variants::kForwardB_r).density(),
                variants::block_mask(v, s, h, variants::kBackwardB_r).density());
  }
}

constexpr int kSms = 132;  // an H200's

// The forward: place t of the walk is row order[...] of one head (flex_variants.cuh's row_tile).
// Each CTA's tiles.
std::vector<double> forward_shares(const variants::BlockMask& m, int heads, bool snake) {
  const bool across = variants::detail::sort_across_heads(m);
  const std::vector<int> order = variants::detail::heaviest_first(m, across);
  const int places = m.T_r * heads, G = std::min(places, kSms);
  std::vector<double> cta(G, 0.0);
  for (int t = 0; t < places; ++t) {
    const int s = snake ? variants::snake_place(t, G, places) : t;
    const int r = across ? order[s / heads] : order[s % m.T_r];  // a list shared by every head (B = H = 1)
    cta[t % G] += m.kv_num_blocks[r] + m.full_kv_num_blocks[r];
  }
  return cta;
}

// The backward: CTA c of the launch order takes key tile `rank` (or the rank-th longest walk) of
// its head's section; the next CTA starts on the SM that frees up first. When each SM finishes.
std::vector<double> backward_finishes(const variants::BlockMask& m, const ladder::AttentionShape& s,
                                      bool longest_first) {
  const std::vector<int> order = variants::detail::longest_walks_first(m);
  const int heads = int(s.kv_heads()), in_l2 = fa3bwd::sched::heads_in_l2(ladder::kH200L2Bytes, s.group(), s.N, s.d);
  const fa3bwd::sched::Sections sections = fa3bwd::sched::sections(heads, in_l2);
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int sm = 0; sm < kSms; ++sm) free_at.push(0.0);
  for (int c = 0; c < m.T_c * heads; ++c) {
    const fa3bwd::sched::Tile t = fa3bwd::sched::tile(c, m.T_c, sections);
    const int j = longest_first ? order[t.j] : t.j;
    const double walk = double(m.q_num_blocks[j] + m.full_q_num_blocks[j]) * s.group();
    const double end = free_at.top() + walk;
    free_at.pop(), free_at.push(end);
  }
  std::vector<double> finish;
  for (; !free_at.empty(); free_at.pop()) finish.push_back(free_at.top());
  return finish;
}

// The largest over the mean: of the CTAs' tiles, or of the SMs' finishing times.
double peak_over_mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return *std::max_element(v.begin(), v.end()) / (sum / double(v.size()));
}

void balance() {
  std::vector<variants::cases::Case> cases = variants::cases::headline();
  variants::Variant tiles;
  tiles.kind = variants::Kind::Tiles;
  for (double density : variants::cases::kDensities) {
    tiles.tile_density = density;
    cases.push_back({density == 0.1    ? "tiles10"
                     : density == 0.25 ? "tiles25"
                                       : "tiles50",
                     variants::cases::sparse_shape(), tiles});
  }
  std::printf("case,fwd_dealt,fwd_snake,bwd_in_order,bwd_longest_first\n");
  for (const auto& c : cases) {
    const variants::ModsData h(c.v, c.s);
    const variants::BlockMask fwd = variants::block_mask(c.v, c.s, h, variants::kForwardB_r),
                              bwd = variants::block_mask(c.v, c.s, h, variants::kBackwardB_r);
    std::printf("%s,%.3f,%.3f,%.3f,%.3f\n", c.name, peak_over_mean(forward_shares(fwd, c.s.heads(), false)),
                peak_over_mean(forward_shares(fwd, c.s.heads(), true)),
                peak_over_mean(backward_finishes(bwd, c.s, false)), peak_over_mean(backward_finishes(bwd, c.s, true)));
  }
}

void balance_ctas() {
  const variants::cases::Case c = variants::cases::headline()[1];  // the documents
  const variants::ModsData h(c.v, c.s);
  const variants::BlockMask fwd = variants::block_mask(c.v, c.s, h, variants::kForwardB_r),
                            bwd = variants::block_mask(c.v, c.s, h, variants::kBackwardB_r);
  std::printf("direction,order,unit,tiles\n");
  for (bool better : {false, true}) {
    const std::vector<double> f = forward_shares(fwd, c.s.heads(), better), b = backward_finishes(bwd, c.s, better);
    for (std::size_t u = 0; u < f.size(); ++u)
      std::printf("forward,%s,%zu,%.0f\n", better ? "snake" : "dealt", u, f[u]);
    for (std::size_t u = 0; u < b.size(); ++u)
      std::printf("backward,%s,%zu,%.0f\n", better ? "longest_first" : "in_order", u, b[u]);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--tile-sets") == 0) return tile_sets(), 0;
  if (argc > 1 && std::strcmp(argv[1], "--balance") == 0) return balance(), 0;
  if (argc > 1 && std::strcmp(argv[1], "--balance-ctas") == 0) return balance_ctas(), 0;
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s [--tile-sets | --balance | --balance-ctas]\n", argv[0]);
    return 2;
  }
  const int N = 2048;
  std::vector<int> doc(N);
  const int ends[] = {300, 700, 1500, 1600, N};  // five documents of different lengths
  for (int t = 0, d = 0; t < N; ++t) doc[t] = t < ends[d] ? d : ++d;
  std::printf("mask,i,j,kind,density\n");
  print("causal", variants::Causal{0}, N);
  print("sliding window 256 (causal)", variants::SlidingWindow{256, 0, 0}, N);
  print("documents (causal)", variants::both(variants::Document{doc.data(), doc.data(), N, N}, variants::Causal{0}), N);
  print("prefix-LM 512", variants::PrefixLM{512}, N);
  return 0;
}
