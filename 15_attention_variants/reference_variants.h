// The fp64 references of chapter 15: common/reference_attention.h takes a mask and a score
// modifier (ladder::ScoreMods); this adds the functors of mods.h to it, and packed
// variable-length batches (flash-attention's varlen layout). Host only (Eigen in common/).
#pragma once

#include <vector>

#include "attention_shape.h"
#include "reference_attention.h"

namespace variants {

// Any mask and score modifier of mods.h, for the reference.
using Mods = ladder::ScoreMods;
template <class Mask, class Score>
Mods mods(Mask m, Score s) {
  return {[m](int b, int h, int q, int k) { return m(b, h, q, k); },
          [s](double x, int b, int h, int q, int k) { return s(x, b, h, q, k); },
          [s](double x, int b, int h, int q, int k) { return s.grad(x, b, h, q, k); }};
}

// A packed batch of sequences of different lengths (flash-attention's varlen API): sequence b
// has queries cu_q[b] .. cu_q[b+1] - 1 and keys cu_k[b] .. cu_k[b+1] - 1 of the packed tensors
// Q, O, dO [total_q, H, d] and K, V [total_k, H_kv, d]; L [H, total_q]. The mask's b is the
// sequence, its q and k positions in that sequence.
struct Varlen {
  std::vector<int> cu_q, cu_k;  // B + 1 offsets each, from 0, non-decreasing
  int H = 1, H_kv = 1, d = 64;
  int batch() const { return int(cu_q.size()) - 1; }
  int total_q() const { return cu_q.back(); }
  int total_k() const { return cu_k.back(); }
  int len_q(int b) const { return cu_q[b + 1] - cu_q[b]; }
  int len_k(int b) const { return cu_k[b + 1] - cu_k[b]; }
};
// Throws std::invalid_argument for lengths that are negative or lists of different sizes.
Varlen make_varlen(const std::vector<int>& len_q, const std::vector<int>& len_k, int H, int H_kv, int d);

ladder::AttentionForward varlen_forward_reference(const Varlen& v, const float* Q, const float* K, const float* V,
                                                  const Mods& m);
ladder::AttentionGrads varlen_backward_reference(const Varlen& v, const float* Q, const float* K, const float* V,
                                                 const float* dO, const Mods& m);

}  // namespace variants
