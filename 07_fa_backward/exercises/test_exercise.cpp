// The tests of chapter 07's exercise 2: a row's softmax backward against central finite
// differences of phi(s) = sum_j dp_j softmax(s)_j, in fp64.
//   CpuExerciseSolution.*  the reference: runs with every `ctest`
//   Exercise.*             your mine.cpp: build/bin/07_fa_backward_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <string>
#include <vector>

#include "exercise.h"
#include "gtest_helpers.h"

namespace {

using Backward = std::vector<double> (*)(const std::vector<double>&, const std::vector<double>&);

std::vector<double> softmax(const std::vector<double>& s) {
  double m = -INFINITY, l = 0.0;
  for (double x : s) m = std::max(m, x);
  std::vector<double> p(s.size());
  for (std::size_t j = 0; j < s.size(); ++j) l += p[j] = std::exp(s[j] - m);
  for (double& x : p) x /= l;
  return p;
}

void check(Backward backward, std::uint64_t seed) {
  int r = 0;
  for (int n : {1, 2, 5, 17, 64}) {
    for (bool masked : {false, true}) {
      const std::vector<float> sf = ladder::random_uniform(n, seed + r, -4.0f, 4.0f);
      const std::vector<float> df = ladder::random_uniform(n, seed + 50 + r, -1.0f, 1.0f);
      ++r;
      std::vector<double> s(sf.begin(), sf.end()), dp(df.begin(), df.end());
      if (masked)  // a causal row: the keys after the query are -inf (p = 0 there)
        for (int k = n / 2 + 1; k < n; ++k) s[k] = -INFINITY;
      const std::vector<double> ds = backward(softmax(s), dp);
      ASSERT_EQ(ds.size(), s.size()) << "one ds per key";
      auto phi = [&](const std::vector<double>& x) {
        const std::vector<double> p = softmax(x);
        double sum = 0.0;
        for (std::size_t j = 0; j < p.size(); ++j) sum += dp[j] * p[j];
        return sum;
      };
      const double h = 1e-6;
      for (int k = 0; k < n; ++k) {
        const std::string where =
            "n=" + std::to_string(n) + (masked ? " (causal row)" : "") + ", ds[" + std::to_string(k) + "]";
        if (std::isinf(s[k])) {  // a masked key: nothing flows back to it
          EXPECT_EQ(ds[k], 0.0) << where << ": a masked key has p = 0, so ds = 0";
          continue;
        }
        std::vector<double> up = s, down = s;
        up[k] += h, down[k] -= h;
        const double fd = (phi(up) - phi(down)) / (2 * h);  // truncation ~h^2, rounding ~1e-16 / h
        ASSERT_NEAR(ds[k], fd, 1e-8) << where << " against the finite difference";
      }
      // Softmax does not see a shift of s, so the gradient sums to zero.
      double total = 0.0;
      for (double x : ds) total += x;
      EXPECT_NEAR(total, 0.0, 1e-12) << "n=" << n << ": sum_k ds_k must be 0 (softmax ignores a common shift)";
    }
  }
}

TEST(CpuExerciseSolution, SoftmaxBackwardMatchesFiniteDifferences) {
  LADDER_TEST_SEED(seed);
  check(solution::softmax_backward, seed);
}

#if LADDER_EXERCISE_MINE  // only in 07_fa_backward_exercise: the default build never compiles mine.cpp
TEST(Exercise, SoftmaxBackwardMatchesFiniteDifferences) {
  const std::vector<double> dp = {1.0, 0.0};  // the stub as given returns dp itself
  ASSERT_NE(mine::softmax_backward({0.25, 0.75}, dp), dp)
      << "unimplemented: edit 07_fa_backward/exercises/mine.cpp (it still pretends the Jacobian is the identity)";
  LADDER_TEST_SEED(seed);
  check(mine::softmax_backward, seed);
}
#endif

}  // namespace
