// The reference for chapter 07's exercise 2.
//   d p_j / d s_k = p_j (delta_jk - p_k), so
//   ds_k = sum_j dp_j p_j (delta_jk - p_k) = p_k (dp_k - D),  D = sum_j p_j dp_j.
// In the kernels D is not this row sum over all N keys (it would need the whole row of
// P): it is rowsum(dO_i * O_i), the same number from d values (README, "Why D ...").
#include "exercise.h"

namespace solution {

std::vector<double> softmax_backward(const std::vector<double>& p, const std::vector<double>& dp) {
  double D = 0.0;
  for (std::size_t j = 0; j < p.size(); ++j) D += p[j] * dp[j];
  std::vector<double> ds(p.size());
  for (std::size_t k = 0; k < p.size(); ++k) ds[k] = p[k] * (dp[k] - D);
  return ds;
}

}  // namespace solution
