// The tests of chapter 06's exercise 4: one row of FA2 against softmax(s) V in fp64.
//   CpuExerciseSolution.*  the reference: runs with every `ctest`
//   Exercise.*             your mine.cpp: build/bin/06_fa2_forward_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <string>
#include <vector>

#include "exercise.h"
#include "gtest_helpers.h"

namespace {

using Step = void (*)(fa2_exercise::RowState&, const std::vector<double>&, const std::vector<std::vector<double>>&);
using Finish = std::vector<double> (*)(const fa2_exercise::RowState&, double&);

// softmax(s) V and log sum e^s, the direct way (max first, in fp64).
std::vector<double> direct(const std::vector<double>& s, const std::vector<std::vector<double>>& V, double& L) {
  double m = -INFINITY;
  for (double x : s) m = std::max(m, x);
  std::vector<double> O(V[0].size(), 0.0);
  double l = 0.0;
  for (std::size_t c = 0; c < s.size(); ++c) {
    const double p = m == -INFINITY ? 0.0 : std::exp(s[c] - m);
    l += p;
    for (std::size_t k = 0; k < O.size(); ++k) O[k] += p * V[c][k];
  }
  L = m + std::log(l);
  for (double& o : O) o = l > 0 ? o / l : 0.0;
  return O;
}

void check(Step step, Finish finish, std::uint64_t seed) {
  const int N = 37, d = 8;
  int row = 0;
  for (const char* what : {"random", "x100 logits", "first 10 keys masked", "last tile masked", "all masked"}) {
    const std::vector<float> sf = ladder::random_uniform(N, seed + row, -3.0f, 3.0f);
    const std::vector<float> vf = ladder::random_uniform(std::size_t(N) * d, seed + 100 + row, -1.0f, 1.0f);
    ++row;
    std::vector<double> s(sf.begin(), sf.end());
    std::vector<std::vector<double>> V(N, std::vector<double>(d));
    for (int c = 0; c < N; ++c)
      for (int k = 0; k < d; ++k) V[c][k] = vf[std::size_t(c) * d + k];
    const std::string w = what;
    for (int c = 0; c < N; ++c) {
      if (w == "x100 logits") s[c] *= 100.0;
      if ((w == "first 10 keys masked" && c < 10) || (w == "last tile masked" && c >= 32) || w == "all masked")
        s[c] = -INFINITY;
    }
    double L_ref = 0.0;
    const std::vector<double> O_ref = direct(s, V, L_ref);
    for (int B_c : {1, 4, 16, 37}) {
      fa2_exercise::RowState st;
      for (int j0 = 0; j0 < N; j0 += B_c) {
        const int n = std::min(B_c, N - j0);
        step(st, std::vector<double>(s.begin() + j0, s.begin() + j0 + n),
             std::vector<std::vector<double>>(V.begin() + j0, V.begin() + j0 + n));
      }
      double L = 0.0;
      const std::vector<double> O = finish(st, L);
      ASSERT_EQ(O.size(), std::size_t(d)) << what << ", tiles of " << B_c;
      for (int k = 0; k < d; ++k)
        ASSERT_NEAR(O[k], O_ref[k], 1e-12) << what << ", tiles of " << B_c << ": O[" << k << "]";
      if (std::isinf(L_ref))
        EXPECT_TRUE(std::isinf(L) && L < 0) << what << ": a row that sees no key has L = -inf, got " << L;
      else
        EXPECT_NEAR(L, L_ref, 1e-12 * std::max(1.0, std::fabs(L_ref))) << what << ", tiles of " << B_c << ": L";
    }
  }
}

TEST(CpuExerciseSolution, Fa2RowMatchesSoftmaxTimesV) {
  LADDER_TEST_SEED(seed);
  check(solution::fa2_step, solution::fa2_finish, seed);
}

#if LADDER_EXERCISE_MINE  // only in 06_fa2_forward_exercise: the default build never compiles mine.cpp
TEST(Exercise, Fa2RowMatchesSoftmaxTimesV) {
  fa2_exercise::RowState st;  // the stub as given leaves m and l where they start
  mine::fa2_step(st, {1.0}, {{1.0}});
  ASSERT_FALSE(st.m == -INFINITY && st.l == 0.0)
      << "unimplemented: edit 06_fa2_forward/exercises/mine.cpp (fa2_step does not update m and l yet)";
  LADDER_TEST_SEED(seed);
  check(mine::fa2_step, mine::fa2_finish, seed);
}
#endif

}  // namespace
