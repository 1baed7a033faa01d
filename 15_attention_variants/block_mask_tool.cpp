// Prints block masks (block_mask.h) as CSV, on the CPU:
//   (no argument)   the built-in masks of one head of N = 2048 queries and keys, tiles of 64 x 128,
//                   for scripts/figures/block_masks.py
//   --tile-sets     the benchmark's random tile sets (cases.h): the fraction of tiles each kernel
//                   visits, forward (128-row tiles) and backward (64-row), for plot_sparsity.py
#include <cstdio>
#include <cstring>
#include <vector>

#include "block_mask.h"
#include "cases.h"
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
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--tile-sets") == 0) return tile_sets(), 0;
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s [--tile-sets]\n", argv[0]);
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
