// The tests of chapter 04's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/04_online_softmax_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <iostream>
#include <vector>

#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "reference_softmax.h"

namespace {

struct Implementation {
  const char* file;
  const bool& implemented;
  void (*softmax_rows)(const float*, float*, int, int, cudaStream_t);
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::softmax_rows};
const Implementation kWrongAnswers[] = {
    {"wrong/merge_without_rescale.cu", wrong_merge_without_rescale::kImplemented,
     wrong_merge_without_rescale::softmax_rows},
    {"wrong/empty_lanes_nan.cu", wrong_empty_lanes_nan::kImplemented, wrong_empty_lanes_nan::softmax_rows},
    {"wrong/shfl_down_lane0_only.cu", wrong_shfl_down_lane0_only::kImplemented,
     wrong_shfl_down_lane0_only::softmax_rows},
};

// R rows of C logits, uniform in [-20, 20) (so the lanes' maxima differ by far more than the
// e^x range a missing rescale could hide in), every element c % 7 == 3 masked (-inf), so
// some lanes see only masked elements; element 0 never is, so no row is all -inf.
// Y poisoned (NaN) first, then against the fp64 softmax. Bound kFp32: each Y_ij is one expf
// and a C-term fp32 sum, relative error ~ sqrt(C) 2^-24; a merge bug is O(1).
::testing::AssertionResult softmax_matches(const Implementation& impl, int R, int C, std::uint64_t seed) {
  std::vector<float> X = ladder::random_uniform(std::size_t(R) * C, seed, -20.0f, 20.0f);
  for (std::size_t e = 0; e < X.size(); ++e)
    if (e % std::size_t(C) % 7 == 3) X[e] = -INFINITY;
  ladder::DeviceBuffer<float> dX(X), dY(X.size());
  dY.poison();
  impl.softmax_rows(dX.data(), dY.data(), R, C, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const ::testing::AssertionResult r =
      ladder::matches(dY.download(), ladder::softmax_reference(X, R, C), ladder::kFp32);
  if (r) return r;
  return ::testing::AssertionFailure() << "Y at R=" << R << " C=" << C << ": " << r.message();
}

// Rows shorter than a warp (lanes with no element), one warp wide, one element more, and long
// rows of lengths that are multiples of nothing; R = 37 rows is not a whole number of blocks
// (8 rows each).
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (int C : {1, 5, 31, 32, 33, 100, 1000, 4099}) {
    const ::testing::AssertionResult r = softmax_matches(impl, 37, C, seed + run++);
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

#if LADDER_EXERCISE_MINE  // only in 04_online_softmax_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, WarpSoftmaxMatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 04_online_softmax/exercises/mine.cu "
                                     "(write merge_across_warp, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::softmax_rows}, seed));
}
#endif

}  // namespace
