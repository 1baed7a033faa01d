// The tests of chapter 14's kernel exercise (kernel_exercise.h):
//   CpuExerciseChecks.*        solution.cu refuses bad arguments before any launch  (every CPU test run)
//   GpuExerciseSolution.*      solution.cu passes                                   (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says            (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/14_fa3_backward_exercise --gtest_filter='Exercise*'
// Plain CUDA: the GPU tests run on any GPU the chapter's test binary runs on, not only on sm_90a.
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bf16.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"

namespace {

using PreprocessD = void (*)(const ladder::bf16*, const ladder::bf16*, float*, int, int, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  PreprocessD preprocess_D;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::preprocess_D};
const Implementation kWrongAnswers[] = {
    {"wrong/xor_one_lane.cu", wrong_xor_one_lane::kImplemented, wrong_xor_one_lane::preprocess_D},
    {"wrong/whole_warp.cu", wrong_whole_warp::kImplemented, wrong_whole_warp::preprocess_D},
    {"wrong/bf16_accumulate.cu", wrong_bf16_accumulate::kImplemented, wrong_bf16_accumulate::preprocess_D},
};

// One run on fresh inputs (O and dO uniform in [-1, 1), rounded to bf16), D poisoned (NaN) first,
// against the fp64 reference computed from the very bf16 values the GPU reads.
::testing::AssertionResult matches_reference(const Implementation& impl, int rows, int d, std::uint64_t seed) {
  const std::size_t n = std::size_t(rows) * d;
  const std::vector<ladder::bf16> O = ladder::to_bf16(ladder::random_uniform(n, seed));
  const std::vector<ladder::bf16> dO = ladder::to_bf16(ladder::random_uniform(n, seed + 1));
  const std::vector<float> o = ladder::from_bf16(O), g = ladder::from_bf16(dO);
  std::vector<double> ref(rows, 0.0);
  for (int i = 0; i < rows; ++i)
    for (int k = 0; k < d; ++k) ref[i] += double(o[std::size_t(i) * d + k]) * double(g[std::size_t(i) * d + k]);
  ladder::DeviceBuffer<ladder::bf16> O_d(O), dO_d(dO);
  ladder::DeviceBuffer<float> D(rows);
  D.poison();
  impl.preprocess_D(O_d.data(), dO_d.data(), D.data(), rows, d, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  // Bound kFp32: a product of two bf16 (8 significant bits each) is exact in fp32, so only the
  // d-term fp32 sum rounds, ~sqrt(d) 2^-24 of D (about 1e-6 at d = 128): 1e-5 leaves a margin of
  // ~10. A lane left out of the row's sum, or two rows mixed, is off by O(1); bf16 sums by ~2e-3.
  const ::testing::AssertionResult r = ladder::matches(D.download(), ref, ladder::kFp32);
  if (!r) return ::testing::AssertionFailure() << "D at rows = " << rows << ", d = " << d << ": " << r.message();
  return r;
}

// rows a multiple of no block's rows (32 at d = 64, 16 at d = 128): one row alone in its warp, a
// last block and a last warp part full.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (int d : {64, 128}) {
    for (int rows : {1, 77, 1000}) {
      const ::testing::AssertionResult r = matches_reference(impl, rows, d, seed + 2 * run++);
      if (!r) return r;
    }
  }
  return ::testing::AssertionSuccess();
}

// Bad arguments are refused with std::invalid_argument before any launch, on any machine: the
// pointers are never dereferenced (d and rows are checked first; null and alignment before any
// question to the driver).
TEST(CpuExerciseChecks, SolutionRefusesBadArgumentsBeforeAnyLaunch) {
  const auto* p = reinterpret_cast<const ladder::bf16*>(std::uintptr_t{1} << 20);  // 16-byte aligned
  auto* D = reinterpret_cast<float*>(std::uintptr_t{2} << 20);
  EXPECT_THROW(solution::preprocess_D(p, p, D, 10, 96, nullptr), std::invalid_argument);   // d
  EXPECT_THROW(solution::preprocess_D(p, p, D, 0, 64, nullptr), std::invalid_argument);    // rows
  EXPECT_THROW(solution::preprocess_D(p, p, D, -3, 128, nullptr), std::invalid_argument);  // rows
  EXPECT_THROW(solution::preprocess_D(nullptr, p, D, 10, 64, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::preprocess_D(p, p, nullptr, 10, 64, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::preprocess_D(p + 4, p, D, 10, 64, nullptr), std::invalid_argument);   // 8 bytes off
  EXPECT_THROW(solution::preprocess_D(p, p + 1, D, 10, 128, nullptr), std::invalid_argument);  // 2 bytes off
  EXPECT_THROW(solution::preprocess_D(p, p, reinterpret_cast<float*>(std::uintptr_t{2} << 20 | 2), 10, 64, nullptr),
               std::invalid_argument);  // D not 4-byte aligned
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

#if LADDER_EXERCISE_MINE  // only in 14_fa3_backward_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, PreprocessDMatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 14_fa3_backward/exercises/mine.cu "
                                     "(write dot_unit and row_sum, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::preprocess_D}, seed));
}
#endif

}  // namespace
