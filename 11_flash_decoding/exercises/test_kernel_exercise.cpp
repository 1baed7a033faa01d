// The tests of chapter 11's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/11_flash_decoding_exercise --gtest_filter='Exercise*'
//
// The partials are built on the host by the chapter's fp64 split model (split_model.h): each row
// is a random query against random keys, cut at random points into the case's number of splits;
// each split's (O_s, LSE_s) is rounded to fp32 as the decode kernel would store it. The reference
// is the fp64 softmax of the whole row, in one piece (model::full), not a merge of the partials.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "split_model.h"

namespace {

namespace model = fdec::model;

using Combine = void (*)(const float*, const float*, float*, float*, int, int, int, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  Combine combine;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::combine};
const Implementation kWrongAnswers[] = {
    {"wrong/max_not_subtracted.cu", wrong_max_not_subtracted::kImplemented, wrong_max_not_subtracted::combine},
    {"wrong/lse_is_the_max.cu", wrong_lse_is_the_max::kImplemented, wrong_lse_is_the_max::combine},
    {"wrong/no_key_row_unguarded.cu", wrong_no_key_row_unguarded::kImplemented, wrong_no_key_row_unguarded::combine},
};

// The bounds, each with its reason. The inputs are fp32 roundings of exact partials; the
// kernel adds `splits` products w_s O_s per element in fp32 and takes expf / logf of fp32
// differences. An error in LSE_s (or L) of delta is a relative error delta in a weight
// (exp turns absolute into relative), and fp32 stores a value x with |delta| <= |x| 2^-24.
//   unit logits: |LSE_s| < ~10, so weights and sums carry a few 2^-24 relative, ~1e-6 in O;
//                1e-5 leaves x10 (ladder::kFp32's margin).
//   logits x300: |LSE_s| up to ~400, whose fp32 rounding alone is 400 * 2^-24 ~ 2.4e-5 of
//                every weight: 1e-4, x4 above that.
// A wrong weight is off by O(1), and an overflow or an unguarded empty row is NaN: none is close.
constexpr ladder::Bound kUnitLogits{1e-5, "fp32 combine, |LSE_s| < ~10: a few 2^-24 per weight and sum, x10 margin"};
constexpr ladder::Bound kLargeLogits{1e-4, "fp32 combine, |LSE_s| up to ~400: 400 * 2^-24 per weight from LSE_s, x4"};

struct Case {
  int d, splits;
  float logit_scale;  // multiplies the query: the scores and every LSE_s grow with it
};

// One run on fresh partials, O and LSE poisoned (NaN) first, both against the fp64 softmax.
// 53 rows (not a multiple of the 8 rows of a block). Row kinds, by row % 7:
//   3: no visible key (the query is masked from every key): every LSE_s = -inf, O = 0, LSE = -inf
//   5: every key in the last split (the others empty)
//   else: cut at splits - 1 random points (repeats are empty splits), some keys masked at the end
::testing::AssertionResult matches_reference(const Implementation& impl, const Case& k, std::uint64_t seed) {
  constexpr int kRows = 53;
  const int d = k.d, S = k.splits;
  std::mt19937_64 gen(seed);
  std::vector<float> O_part(std::size_t(kRows) * S * d), lse_part(std::size_t(kRows) * S);
  std::vector<double> O_ref(std::size_t(kRows) * d), L_ref(kRows);
  float max_lse = 0.0f;
  for (int row = 0; row < kRows; ++row) {
    const int n = 1 + static_cast<int>(gen() % 600);
    const long last_key = row % 7 == 3 ? -1 : n - 1 - static_cast<long>(gen() % 4);  // the last 0..3 keys masked
    model::Row r = model::random_row(n, d, last_key, seed + 1000 + row);
    for (double& q : r.q) q *= k.logit_scale;
    std::vector<int> cuts(S - 1);
    for (int& c : cuts) c = row % 7 == 5 ? 0 : static_cast<int>(gen() % (n + 1));
    std::sort(cuts.begin(), cuts.end());
    std::vector<model::Partial> parts;
    model::split_and_merge(r, cuts, &parts);
    const model::Partial ref = model::full(r);
    for (int s = 0; s < S; ++s) {
      const model::Partial& p = parts[s];
      lse_part[std::size_t(row) * S + s] = static_cast<float>(p.lse);
      if (p.lse != -INFINITY) max_lse = std::max(max_lse, static_cast<float>(p.lse));
      for (int c = 0; c < d; ++c) O_part[(std::size_t(row) * S + s) * d + c] = static_cast<float>(p.o[c]);
    }
    L_ref[row] = ref.lse;
    for (int c = 0; c < d; ++c) O_ref[std::size_t(row) * d + c] = ref.o[c];
  }
  // The x300 cases exist to overflow expf (past 88.7) in an answer that skips the max.
  if (k.logit_scale > 1.0f && max_lse < 100.0f)
    return ::testing::AssertionFailure() << "the test's large-logit case reached only LSE_s = " << max_lse;

  ladder::DeviceBuffer<float> dO_part(O_part), dlse_part(lse_part), O(std::size_t(kRows) * d), L(kRows);
  O.poison();
  L.poison();
  impl.combine(dO_part.data(), dlse_part.data(), O.data(), L.data(), kRows, S, d, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const ladder::Bound& bound = k.logit_scale > 1.0f ? kLargeLogits : kUnitLogits;
  const std::string where = "d=" + std::to_string(d) + ", " + std::to_string(S) + " splits, " + std::to_string(kRows) +
                            " rows, logits x" + std::to_string(int(k.logit_scale));
  ::testing::AssertionResult r = ladder::matches(O.download(), O_ref, bound);
  if (!r) return ::testing::AssertionFailure() << "O at " << where << ": " << r.message();
  const ladder::Comparison cl = ladder::compare_lse(L.download(), L_ref);
  if (!cl.within(bound))
    return ::testing::AssertionFailure() << "LSE at " << where << ": " << cl.str() << " (bound " << bound.rel_l2 << ": "
                                         << bound.why << "; a row that saw no key must be -inf)";
  return ::testing::AssertionSuccess();
}

// Splits 3, 7, 37 and 100: none a power of two, two of them more than a warp has lanes.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (int d : fdec_kernel_exercise::kSupportedD)
    for (int splits : {3, 7, 37, 100})
      for (float scale : {1.0f, 300.0f}) {
        const ::testing::AssertionResult r = matches_reference(impl, {d, splits, scale}, seed + 7919 * run++);
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

// Bad input is refused before any launch, on any machine (the pointers are never dereferenced).
TEST(CpuExerciseKernel, SolutionRefusesBadInput) {
  float* p = reinterpret_cast<float*>(std::uintptr_t{256});
  EXPECT_THROW(solution::combine(p, p, p, p, 8, 3, 96, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::combine(p, p, p, p, 8, 0, 64, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::combine(p, p, p, p, 8, fdec_kernel_exercise::kMaxSplits + 1, 64, nullptr),
               std::invalid_argument);
  EXPECT_THROW(solution::combine(p, p, p, p, 0, 3, 64, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::combine(nullptr, p, p, p, 8, 3, 64, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::combine(p, p, p, reinterpret_cast<float*>(std::uintptr_t{258}), 8, 3, 128, nullptr),
               std::invalid_argument);
}

#if LADDER_EXERCISE_MINE  // only in 11_flash_decoding_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, CombineMatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 11_flash_decoding/exercises/mine.cu "
                                     "(write merge_row, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::combine}, seed));
}
#endif

}  // namespace
