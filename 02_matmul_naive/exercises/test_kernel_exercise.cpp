// The tests of chapter 02's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/02_matmul_naive_exercise --gtest_filter='Exercise*'
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "coalescing_model.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "reference_matmul.h"

namespace {

struct Implementation {
  const char* file;
  const bool& implemented;
  void (*matmul)(int, int, int, const float*, const float*, float*, cudaStream_t);
  void (*record_map)(int, int, int*, int*, cudaStream_t);
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::matmul, solution::record_map};
const Implementation kWrongAnswers[] = {
    {"wrong/row_per_x.cu", wrong_row_per_x::kImplemented, wrong_row_per_x::matmul, wrong_row_per_x::record_map},
    {"wrong/swapped_block_axes.cu", wrong_swapped_block_axes::kImplemented, wrong_swapped_block_axes::matmul,
     wrong_swapped_block_axes::record_map},
};

// C against the fp64 reference, random A and B in [-1, 1), C poisoned (NaN) first: an element
// no thread computes stays NaN. Bound kFp32: a K-term fp32 dot product, sqrt(K) 2^-24.
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

// Each thread's (row, col), from record_map: every element of C has exactly one thread, and each
// warp's store of C[row, col] is coalesced: the 32-byte sectors it touches (C starts 256-byte
// aligned, as cudaMalloc's memory does) are at most what its lanes' floats need when they are
// consecutive, ceil(4 lanes / 32) + 1 (the + 1 for a row that does not start on a sector).
::testing::AssertionResult maps_threads(const Implementation& impl, int M, int N) {
  const dim3 g = naive_kernel_exercise::grid(M, N);
  const unsigned kBlock = naive_kernel_exercise::kBlock;
  const std::size_t threads = std::size_t(g.x) * g.y * kBlock * kBlock;
  ladder::DeviceBuffer<int> d_rows(threads), d_cols(threads);
  impl.record_map(M, N, d_rows.data(), d_cols.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<int> rows = d_rows.download(), cols = d_cols.download();

  const std::string shape = "M=" + std::to_string(M) + " N=" + std::to_string(N) + ": ";
  std::vector<int> threads_of(std::size_t(M) * N, 0);
  for (std::size_t w = 0; w < threads / 32; ++w) {  // warp w: entries 32 w .. 32 w + 31
    std::vector<long long> offsets;
    for (std::size_t t = 32 * w; t < 32 * w + 32; ++t) {
      if (rows[t] < 0 || rows[t] >= M || cols[t] < 0 || cols[t] >= N) continue;  // outside C: stores nothing
      offsets.push_back(static_cast<long long>(rows[t]) * N + cols[t]);
      ++threads_of[std::size_t(offsets.back())];
    }
    const int sectors = naive::distinct_blocks(offsets, naive::kSectorBytes);
    const int coalesced = (4 * static_cast<int>(offsets.size()) + naive::kSectorBytes - 1) / naive::kSectorBytes + 1;
    if (!offsets.empty() && sectors > coalesced) {
      const std::size_t block = w / kBlock;
      return ::testing::AssertionFailure()
             << shape << "the warp threadIdx.y = " << w % kBlock << " of block (" << block % g.x << ", " << block / g.x
             << ") stores C in " << sectors << " sectors of 32 bytes; " << offsets.size()
             << " consecutive floats need at most " << coalesced << ". Its lanes 0 and 1 compute (" << rows[32 * w]
             << ", " << cols[32 * w] << ") and (" << rows[32 * w + 1] << ", " << cols[32 * w + 1] << ")";
    }
  }
  for (std::size_t e = 0; e < threads_of.size(); ++e)
    if (threads_of[e] != 1)
      return ::testing::AssertionFailure()
             << shape << "element (" << e / N << ", " << e % N << ") of C has " << threads_of[e] << " threads, not 1";
  return ::testing::AssertionSuccess();
}

// Shapes that are multiples of no block size, M != N (a map with rows and columns swapped
// leaves part of C uncovered), and a shape of one block column and one block row.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{{100, 1000, 37}, {1021, 203, 129}, {33, 31, 1}}) {
    ::testing::AssertionResult r = maps_threads(impl, M, N);
    if (r) r = computes_c(impl, M, N, K, seed + 2 * run++);
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

#if LADDER_EXERCISE_MINE  // only in 02_matmul_naive_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, MapIsCoalescedAndCIsRight) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 02_matmul_naive/exercises/mine.cu "
                                     "(write element_of_this_thread, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::matmul, mine::record_map}, seed));
}
#endif

}  // namespace
