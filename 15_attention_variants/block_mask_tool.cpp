// Prints the block masks of the built-in masks (block_mask.h) as CSV, for
// scripts/figures/block_masks.py: one head of N = 2048 queries and keys, tiles of 64 x 128.
#include <cstdio>
#include <vector>

#include "block_mask.h"
#include "mods.h"

namespace {
template <class Mask>
void print(const char* name, const Mask& mask, int N) {
  const variants::BlockMask m = variants::make_block_mask(mask, 1, 1, N, N);
  for (int i = 0; i < m.T_r; ++i)
    for (int j = 0; j < m.T_c; ++j) std::printf("%s,%d,%d,%d,%.4f\n", name, i, j, int(m.kind(0, 0, i, j)), m.density());
}
}  // namespace

int main() {
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
