// Chapter 07 exercise (README, "Exercises", 2): the softmax backward of one row, the
// step from dP to dS that every FlashAttention backward needs. The tests compare your ds
// with central finite differences of phi(s) = sum_j dp_j softmax(s)_j:
//   build/bin/07_fa_backward_exercise --gtest_filter='Exercise*'      yours (target 07_fa_backward_exercise)
//   build/bin/07_fa_backward_test --gtest_filter='CpuExercise*'       the reference
#pragma once

#include <vector>

namespace mine {
// p = softmax(s) of one row (entries 0 where s was masked) and dp = d phi / d p.
// Returns ds = d phi / d s, one entry per key.
std::vector<double> softmax_backward(const std::vector<double>& p, const std::vector<double>& dp);
}  // namespace mine

namespace solution {
std::vector<double> softmax_backward(const std::vector<double>& p, const std::vector<double>& dp);
}  // namespace solution
