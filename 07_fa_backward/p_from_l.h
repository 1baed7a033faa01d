// The chapter's idea, checked on the host: the probabilities the backward needs
// are exp(S - L), with the forward's one saved statistic L = m + log(l). No max
// and no sum are recomputed; this is exactly softmax(S).
#pragma once

#include <vector>

#include "attention_shape.h"

namespace fa2 {

struct PFromL {
  std::vector<double> from_L;   // exp(S_ij - L_i), N x N, row-major
  std::vector<double> softmax;  // softmax(S) computed the standard way (max, exp, sum, divide)
  double max_abs_diff = 0.0;
};

// For one head (index b*H + h): S in fp64 from Q and K, L taken from `L` ([B, H, N],
// e.g. what the forward kernel wrote). Host pointers.
PFromL p_from_l(const ladder::AttentionShape& s, const float* Q, const float* K, const float* L, int head);
PFromL p_from_l(const ladder::AttentionShape& s, const float* Q, const float* K, const double* L, int head);

}  // namespace fa2
