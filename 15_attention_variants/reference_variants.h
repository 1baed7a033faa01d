// fp64 references for attention with a mask and a score modifier (mods.h), forward and backward,
// for padded batches ([B, H, N, d], AttentionShape) and packed variable-length ones
// (flash-attention's varlen layout). Host only (Eigen in the .cpp).
//   S = scale Q K^T,  S' = score(S) where mask, -inf elsewhere,  P = softmax_rows(S'),  O = P V,
//   L = logsumexp_rows(S')  (a row with no visible key: O = 0, L = -inf, zero gradients)
//   dV = P^T dO,  dP = dO V^T,  D = rowsum(dO o O),  dS' = P o (dP - D),  dS = dS' o score'(S),
//   dQ = scale dS K,  dK = scale dS^T Q.
#pragma once

#include <functional>
#include <vector>

#include "attention_shape.h"
#include "reference_attention.h"

namespace variants {

// A mask and a score modifier, type-erased for the reference (any functor of mods.h fits).
struct Mods {
  std::function<bool(int, int, int, int)> mask;                         // empty: every key visible
  std::function<double(double, int, int, int, int)> score, score_grad;  // empty: s and 1
};
template <class Mask, class Score>
Mods mods(Mask m, Score s) {
  return {[m](int b, int h, int q, int k) { return m(b, h, q, k); },
          [s](double x, int b, int h, int q, int k) { return s(x, b, h, q, k); },
          [s](double x, int b, int h, int q, int k) { return s.grad(x, b, h, q, k); }};
}

// The shape must not be causal: the mask says which keys are seen (mods.h: Causal).
ladder::AttentionForward variant_forward_reference(const ladder::AttentionShape& s, const float* Q, const float* K,
                                                   const float* V, const Mods& m);
ladder::AttentionGrads variant_backward_reference(const ladder::AttentionShape& s, const float* Q, const float* K,
                                                  const float* V, const float* dO, const Mods& m);
// The same on doubles (the finite-difference check of the backward).
ladder::AttentionForward variant_forward_reference(const ladder::AttentionShape& s, const double* Q, const double* K,
                                                   const double* V, const Mods& m);

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
