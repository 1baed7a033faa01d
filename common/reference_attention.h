// fp64 references for attention (Eigen), forward and analytic backward, for every
// shape AttentionShape describes (GQA: dK, dV sum over the query heads of a group;
// N_kv != N: causal aligned at the bottom right; a row with no key: O = 0, L = -inf).
//   S = scale Q K^T (causal: S_ij = -inf for j > i), P = softmax_rows(S), O = P V,
//   L_i = m_i + log(l_i) = log sum_j exp(S_ij)        (the row logsumexp)
//   backward, given dO:  dV = P^T dO,  dP = dO V^T,  D_i = rowsum(dO_i * O_i),
//                        dS = P * (dP - D),  dQ = scale dS K,  dK = scale dS^T Q.
// The double-input overloads exist for the finite-difference check of the backward.
// With ScoreMods (chapter 15: a mask and a score modifier, FlexAttention's mask_mod and
// score_mod), S' = score(S) where the mask (and causal) allow, -inf elsewhere, P = softmax(S'),
// and the backward multiplies dS by score'(S).
#pragma once

#include <functional>
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

// A mask and a score modifier, type-erased (b, h: batch and query head; q, k: positions).
struct ScoreMods {
  std::function<bool(int b, int h, int q, int k)> mask;                           // empty: all
  std::function<double(double s, int b, int h, int q, int k)> score, score_grad;  // empty: s, 1
};

AttentionForward attention_forward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V,
                                             const ScoreMods& mods = {});
AttentionForward attention_forward_reference(const AttentionShape& s, const double* Q, const double* K, const double* V,
                                             const ScoreMods& mods = {});

AttentionGrads attention_backward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V,
                                            const float* dO, const ScoreMods& mods = {});
AttentionGrads attention_backward_reference(const AttentionShape& s, const double* Q, const double* K, const double* V,
                                            const double* dO);

// The N x N scores S of one head (index b*H + h), row-major, masked entries -inf.
std::vector<double> attention_scores_reference(const AttentionShape& s, const float* Q, const float* K, int head);

}  // namespace ladder
