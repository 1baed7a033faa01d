// fp64 references for attention (Eigen), forward and analytic backward, for every
// shape AttentionShape describes (GQA: dK, dV sum over the query heads of a group;
// N_kv != N: causal aligned at the bottom right; a row with no key: O = 0, L = -inf).
//   S = scale Q K^T (causal: S_ij = -inf for j > i), P = softmax_rows(S), O = P V,
//   L_i = m_i + log(l_i) = log sum_j exp(S_ij)        (the row logsumexp)
//   backward, given dO:  dV = P^T dO,  dP = dO V^T,  D_i = rowsum(dO_i * O_i),
//                        dS = P * (dP - D),  dQ = scale dS K,  dK = scale dS^T Q.
// The double-input overloads exist for the finite-difference check of the backward.
#pragma once

#include <vector>

#include "attention_shape.h"

namespace ladder {

struct AttentionForward {
  std::vector<double> O;  // [B, H, N, d]
  std::vector<double> L;  // [B, H, N]
};
struct AttentionGrads {
  std::vector<double> dQ, dK, dV;  // [B, H, N, d]
};

AttentionForward attention_forward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V);
AttentionForward attention_forward_reference(const AttentionShape& s, const double* Q, const double* K,
                                             const double* V);

AttentionGrads attention_backward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V,
                                            const float* dO);
AttentionGrads attention_backward_reference(const AttentionShape& s, const double* Q, const double* K, const double* V,
                                            const double* dO);

// The N x N scores S of one head (index b*H + h), row-major, masked entries -inf.
std::vector<double> attention_scores_reference(const AttentionShape& s, const float* Q, const float* K, int head);

}  // namespace ladder
