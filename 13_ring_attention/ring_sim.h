// Chapter 13's CPU ring: P virtual ranks in fp64, shards exchanged by copying, the same
// schedule (ring_schedule.h) and the same merge as the GPU ring. Its merged result must
// equal the fp64 reference of the whole sequence (common/reference_attention.h).
#pragma once

#include <cmath>
#include <vector>

#include "attention_shape.h"
#include "reference_attention.h"
#include "ring_schedule.h"

namespace ring {

// Two partial results of one query row over disjoint sets of keys, (O_a, L_a) and
// (O_b, L_b) with L the row's log-sum-exp over its keys, merge exactly:
//   L = log(e^{L_a} + e^{L_b}) = m + log(e^{L_a - m} + e^{L_b - m}),   m = max(L_a, L_b)
//   O = e^{L_a - L} O_a + e^{L_b - L} O_b
// A side that saw no key has L = -inf and weight 0; both -inf: O = 0, L = -inf.
// The GPU merge kernel (ring_kernels.cu) is this formula in fp32.
inline void merge_lse(double* O_a, double& L_a, const double* O_b, double L_b, int d) {
  const double m = std::fmax(L_a, L_b);
  if (m == -INFINITY) return;
  const double w_a = std::exp(L_a - m), w_b = std::exp(L_b - m), l = w_a + w_b;
  for (int k = 0; k < d; ++k) O_a[k] = (w_a * O_a[k] + w_b * O_b[k]) / l;
  L_a = m + std::log(l);
}

struct SimResult {
  ladder::AttentionForward fwd;  // O [B, H, N, d], L [B, H, N] of the whole sequence
  ladder::AttentionGrads grads;  // dQ, dK, dV (empty without dO)
};

// Runs the ring forward (and, given dO, the backward: dK/dV travel with their K/V shard,
// dQ stays) for self-attention (H_kv = H, N_kv = N, either may be written out) with s.N
// tokens over P ranks. Throws std::invalid_argument for any other shape, an N the layout
// refuses (make_layout), or inputs that do not hold B*H*N*d values.
SimResult simulate(const ladder::AttentionShape& s, int P, Sharding sharding, const std::vector<float>& Q,
                   const std::vector<float>& K, const std::vector<float>& V, const std::vector<float>* dO = nullptr);

}  // namespace ring
