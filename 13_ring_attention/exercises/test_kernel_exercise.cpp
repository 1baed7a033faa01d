// The tests of chapter 13's kernel exercise (kernel_exercise.h):
//   CpuExerciseMergeReference.*  the fp64 reference: two halves of a row's keys merge back to the row (any machine)
//   GpuExerciseSolution.*        solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*    each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*             your mine.cu: build/bin/13_ring_attention_exercise --gtest_filter='Exercise*'
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bf16.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "ring_sim.h"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One side's partial of one row in fp64, from the scores s_j and values v_j (d each) of the keys it
// saw: L = log sum_j e^{s_j}, O = sum_j e^{s_j - L} v_j. No key: L = -inf, O = 0.
void partial(const std::vector<double>& s, const std::vector<double>& v, int d, double* O, double& L) {
  std::fill(O, O + d, 0.0);
  L = -kInf;
  if (s.empty()) return;
  const double m = *std::max_element(s.begin(), s.end());
  double l = 0.0;
  for (double x : s) l += std::exp(x - m);
  L = m + std::log(l);
  for (std::size_t j = 0; j < s.size(); ++j)
    for (int k = 0; k < d; ++k) O[k] += std::exp(s[j] - L) * v[j * d + k];
}

// `rows` query rows, each with keys of its own split in two disjoint sets, side a and side b.
// Row i's kind is (7 i + 3) mod 10: 0, side a saw no key; 1, side b saw none; 2, neither (a causal
// row whose keys all lie in the future); otherwise both saw 1 to 40 keys. Scores are N(0, 1) x
// logit_scale, values U(-1, 1).
struct Rows {
  int rows = 0, d = 0;
  std::vector<double> Oa, La, Ob, Lb;  // the two partials in fp64 (an empty side's O is 0)
  std::vector<double> O, L;            // the whole row's attention in fp64, over the keys of both sides
};

Rows make_rows(int rows, int d, double logit_scale, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> keys(1, 40);
  Rows r;
  r.rows = rows, r.d = d;
  r.Oa.resize(std::size_t(rows) * d), r.Ob.resize(r.Oa.size()), r.O.resize(r.Oa.size());
  r.La.resize(rows), r.Lb.resize(rows), r.L.resize(rows);
  for (int i = 0; i < rows; ++i) {
    const int kind = (7 * i + 3) % 10;
    const int n_a = kind == 0 || kind == 2 ? 0 : keys(rng), n_b = kind == 1 || kind == 2 ? 0 : keys(rng);
    std::vector<double> s(n_a + n_b), v(std::size_t(n_a + n_b) * d);
    for (double& x : s) x = normal(rng) * logit_scale;
    for (double& x : v) x = uniform(rng);
    const std::vector<double> s_a(s.begin(), s.begin() + n_a), s_b(s.begin() + n_a, s.end());
    const std::vector<double> v_a(v.begin(), v.begin() + std::size_t(n_a) * d),
        v_b(v.begin() + std::size_t(n_a) * d, v.end());
    const std::size_t row = std::size_t(i) * d;
    partial(s_a, v_a, d, &r.Oa[row], r.La[i]);
    partial(s_b, v_b, d, &r.Ob[row], r.Lb[i]);
    partial(s, v, d, &r.O[row], r.L[i]);
  }
  return r;
}

// ---- CPU: the reference ---------------------------------------------------------------------------

// What makes the merge the reference for the kernel: in fp64, merging the two halves' partials
// (ring_sim.h's merge_lse, the chapter's formula) gives the attention of the whole row, at unit
// logits and x100, with empty sides and empty rows.
TEST(CpuExerciseMergeReference, TwoHalvesMergeBackToTheWholeRow) {
  LADDER_TEST_SEED(seed);
  for (double logit_scale : {1.0, 100.0}) {
    const Rows r = make_rows(200, 33, logit_scale, seed);
    std::vector<double> O = r.Oa, L = r.La;
    for (int i = 0; i < r.rows; ++i)
      ring::merge_lse(&O[std::size_t(i) * r.d], L[i], &r.Ob[std::size_t(i) * r.d], r.Lb[i], r.d);
    double err = 0.0, norm = 0.0;
    for (std::size_t e = 0; e < O.size(); ++e) err += (O[e] - r.O[e]) * (O[e] - r.O[e]), norm += r.O[e] * r.O[e];
    EXPECT_LE(std::sqrt(err / norm), 1e-13) << "logits x" << logit_scale;
    for (int i = 0; i < r.rows; ++i) {
      if (std::isinf(r.L[i])) {
        EXPECT_TRUE(std::isinf(L[i]) && L[i] < 0) << "row " << i;
        for (int k = 0; k < r.d; ++k) EXPECT_EQ(O[std::size_t(i) * r.d + k], 0.0) << "row " << i;
      } else {
        EXPECT_NEAR(L[i], r.L[i], 1e-12 * std::max(1.0, std::abs(r.L[i]))) << "row " << i;
      }
    }
  }
}

// Bad sizes are refused before any launch, GPU or not (the launch code is the same in mine.cu).
TEST(CpuExerciseMergeReference, SolutionRefusesBadSizes) {
  float f[4] = {};
  ladder::bf16 b[4] = {};
  EXPECT_THROW(solution::merge(f, f, b, f, -1, 64, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::merge(f, f, b, f, 1, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::merge(nullptr, f, b, f, 1, 1, nullptr), std::invalid_argument);
}

// ---- GPU: the implementations ----------------------------------------------------------------------

using Merge = void (*)(float*, float*, const ladder::bf16*, const float*, std::int64_t, int, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  Merge merge;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::merge};
const Implementation kWrongAnswers[] = {
    {"wrong/unweighted_average.cu", wrong_unweighted_average::kImplemented, wrong_unweighted_average::merge},
    {"wrong/no_max_subtraction.cu", wrong_no_max_subtraction::kImplemented, wrong_no_max_subtraction::merge},
    {"wrong/empty_side_read.cu", wrong_empty_side_read::kImplemented, wrong_empty_side_read::merge},
    {"wrong/both_empty_nan.cu", wrong_both_empty_nan::kImplemented, wrong_both_empty_nan::merge},
};

// One run on fresh rows. The inputs are stored as the ring stores them: O_a in fp32, O_b rounded to
// bf16 (chapter 10's output), both L in fp32; the O of a side that saw no key is NaN (the contract:
// it is not read), so that an empty row whose O is never written stays NaN. The expected result is
// the fp64 merge of exactly those stored values.
//
// Bounds. O: each element is a handful of fp32 roundings (two expf of differences that are exact
// where the weight matters, two products, a sum, one division), a few 2^-24 with no long
// reduction: ladder::kFp32 (1e-5) leaves a wide margin, and a missing weight or max gives O(1)
// or NaN. L = m + logf(l) with l in [1, 2]: ladder::kLse, and -inf exactly where the reference is.
// As a last check, O against the whole row's attention (the keys of both sides in one softmax):
// only O_b's bf16 rounding (at most 2^-9 relative) separates them, within ladder::kBf16Attention.
::testing::AssertionResult matches_reference(const Implementation& impl, int rows, int d, double logit_scale,
                                             std::uint64_t seed) {
  const Rows r = make_rows(rows, d, logit_scale, seed);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> Oa(r.Oa.size()), La(rows), Ob(r.Ob.size()), Lb(rows);
  std::vector<double> want_O(r.Oa.size()), want_L(rows);
  for (int i = 0; i < rows; ++i) {
    La[i] = float(r.La[i]), Lb[i] = float(r.Lb[i]);
    for (int k = 0; k < d; ++k) {
      const std::size_t e = std::size_t(i) * d + k;
      Oa[e] = std::isinf(r.La[i]) ? nan : float(r.Oa[e]);
      Ob[e] = std::isinf(r.Lb[i]) ? nan : ladder::round_to_bf16(float(r.Ob[e]));
      want_O[e] = std::isinf(r.La[i]) ? 0.0 : double(Oa[e]);  // the reference reads no empty side either
    }
    want_L[i] = La[i];
    std::vector<double> ob(d, 0.0);
    if (!std::isinf(r.Lb[i]))
      for (int k = 0; k < d; ++k) ob[k] = Ob[std::size_t(i) * d + k];
    ring::merge_lse(&want_O[std::size_t(i) * d], want_L[i], ob.data(), double(Lb[i]), d);
  }
  ladder::DeviceBuffer<float> dOa(Oa), dLa(La), dLb(Lb);
  ladder::DeviceBuffer<ladder::bf16> dOb(ladder::to_bf16(Ob));
  impl.merge(dOa.data(), dLa.data(), dOb.data(), dLb.data(), rows, d, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got_O = dOa.download(), got_L = dLa.download();

  const std::string where = "rows " + std::to_string(rows) + ", d " + std::to_string(d) +
                            (logit_scale != 1.0 ? ", logits x" + std::to_string(int(logit_scale)) : "");
  for (int i = 0; i < rows; ++i) {  // the contract for rows that saw no key, exactly
    if (!std::isinf(r.La[i]) || !std::isinf(r.Lb[i])) continue;
    for (int k = 0; k < d; ++k)
      if (got_O[std::size_t(i) * d + k] != 0.0f)
        return ::testing::AssertionFailure()
               << "O at " << where << ": row " << i << " saw no key on either side, "
               << "so O must be 0, but O[" << k << "] = " << got_O[std::size_t(i) * d + k];
  }
  ::testing::AssertionResult res = ladder::matches(got_O, want_O, ladder::kFp32);
  if (!res) return ::testing::AssertionFailure() << "O at " << where << ": " << res.message();
  const ladder::Comparison cl = ladder::compare_lse(got_L, want_L);
  if (!cl.within(ladder::kLse))
    return ::testing::AssertionFailure() << "L at " << where << ": " << cl.str() << " (bound " << ladder::kLse.rel_l2
                                         << ": " << ladder::kLse.why << ")";
  res = ladder::matches(got_O, r.O, ladder::kBf16Attention);
  if (!res) return ::testing::AssertionFailure() << "O against the whole row at " << where << ": " << res.message();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  struct Size {
    int rows, d;
  };
  const Size sizes[] = {{1, 64}, {37, 128}, {333, 33}, {1000, 100}, {77, 1}};
  int run = 0;
  for (double logit_scale : {1.0, 100.0})
    for (const Size& z : sizes) {
      const ::testing::AssertionResult r = matches_reference(impl, z.rows, z.d, logit_scale, seed + run++);
      if (!r) return r;
    }
  return ::testing::AssertionSuccess();
}

TEST(GpuExerciseSolution, Passes) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  ASSERT_TRUE(kSolution.implemented);
  EXPECT_TRUE(check(kSolution, seed));
}

TEST(GpuExerciseWrongAnswers, EachFails) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  for (const Implementation& w : kWrongAnswers) {
    ASSERT_TRUE(w.implemented) << w.file << " must set kImplemented: it is an answer, not the stub";
    const ::testing::AssertionResult r = check(w, seed);
    EXPECT_FALSE(r) << w.file << " passes the check, which exists to catch it";
    if (!r) std::cout << "  " << w.file << " fails, as it should: " << r.message() << "\n";
  }
}

#if LADDER_EXERCISE_MINE  // only in 13_ring_attention_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, MergeMatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 13_ring_attention/exercises/mine.cu "
                                     "(write merge_row, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::merge}, seed));
}
#endif

}  // namespace
