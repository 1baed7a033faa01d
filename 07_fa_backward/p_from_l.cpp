#include "p_from_l.h"

#include <algorithm>
#include <cmath>

#include "reference_attention.h"

namespace fa2 {

namespace {
template <class T>
PFromL recover(const ladder::AttentionShape& s, const float* Q, const float* K, const T* L, int head) {
  const std::vector<double> S = ladder::attention_scores_reference(s, Q, K, head);  // masked entries -inf
  const std::size_t N = s.N;
  PFromL r{std::vector<double>(N * N), std::vector<double>(N * N), 0.0};
  for (std::size_t i = 0; i < N; ++i) {
    const double* S_i = S.data() + i * N;
    const double L_i = L[std::size_t(head) * N + i];
    const double m_i = *std::max_element(S_i, S_i + N);
    double l_i = 0.0;
    for (std::size_t j = 0; j < N; ++j) l_i += std::exp(S_i[j] - m_i);
    for (std::size_t j = 0; j < N; ++j) {
      r.from_L[i * N + j] = std::exp(S_i[j] - L_i);  // exp(-inf) = 0 where masked
      r.softmax[i * N + j] = std::exp(S_i[j] - m_i) / l_i;
      r.max_abs_diff = std::max(r.max_abs_diff, std::fabs(r.from_L[i * N + j] - r.softmax[i * N + j]));
    }
  }
  return r;
}
}  // namespace

PFromL p_from_l(const ladder::AttentionShape& s, const float* Q, const float* K, const float* L, int head) {
  return recover(s, Q, K, L, head);
}
PFromL p_from_l(const ladder::AttentionShape& s, const float* Q, const float* K, const double* L, int head) {
  return recover(s, Q, K, L, head);
}

}  // namespace fa2
