// The tests of chapter 03's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/03_matmul_tiled_exercise --gtest_filter='Exercise*'
#include <iostream>
#include <tuple>
#include <vector>

#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "reference_matmul.h"

namespace {

struct Implementation {
  const char* file;
  const bool& implemented;
  void (*matmul)(int, int, int, const float*, const float*, float*, cudaStream_t);
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::matmul};
const Implementation kWrongAnswers[] = {
    {"wrong/no_zero_fill.cu", wrong_no_zero_fill::kImplemented, wrong_no_zero_fill::matmul},
    {"wrong/b_tile_transposed.cu", wrong_b_tile_transposed::kImplemented, wrong_b_tile_transposed::matmul},
};

// C against the fp64 reference (Eigen), random A and B in [-1, 1), C poisoned (NaN) first: an
// element no thread stores stays NaN. Bound kFp32: a K-term fp32 dot product, about sqrt(K) 2^-24
// relative; any indexing or edge bug is O(1).
::testing::AssertionResult computes_c(const Implementation& impl, int M, int N, int K, std::uint64_t seed) {
  const std::vector<float> A = ladder::random_uniform(std::size_t(M) * K, seed);
  const std::vector<float> B = ladder::random_uniform(std::size_t(K) * N, seed + 1);
  ladder::DeviceBuffer<float> dA(A), dB(B), dC(std::size_t(M) * N);
  dC.poison();
  impl.matmul(M, N, K, dA.data(), dB.data(), dC.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const ::testing::AssertionResult r =
      ladder::matches(dC.download(), ladder::matmul_reference(A, B, M, N, K), ladder::kFp32);
  if (r) return r;
  return ::testing::AssertionFailure() << "C at M=" << M << " N=" << N << " K=" << K << ": " << r.message();
}

// Shapes that are multiples of no tile (16), K included, so the last step of the k0 loop is a
// partial tile; one smaller than a tile; one exactly a tile.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (auto [M, N, K] :
       std::vector<std::tuple<int, int, int>>{{333, 517, 203}, {1021, 259, 1019}, {17, 15, 9}, {16, 16, 16}}) {
    const ::testing::AssertionResult r = computes_c(impl, M, N, K, seed + 2 * run++);
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

#if LADDER_EXERCISE_MINE  // only in 03_matmul_tiled_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, TiledMatmulMatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 03_matmul_tiled/exercises/mine.cu "
                                     "(write the tile loop, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::matmul}, seed));
}
#endif

}  // namespace
