// Your code for chapter 07's exercise 2 (see exercise.h and the README). Derive
// d p_j / d s_k on paper first (README, "The math" has the answer: cover it). Then build the target
// 07_fa_backward_exercise and run  build/bin/07_fa_backward_exercise --gtest_filter='Exercise*'
#include "exercise.h"

namespace mine {

std::vector<double> softmax_backward(const std::vector<double>& p, const std::vector<double>& dp) {
  (void)p;
  return dp;  // TODO: ds_k = sum_j dp_j (d p_j / d s_k). This line pretends the Jacobian is the identity.
}

}  // namespace mine
