// The tests of chapter 09's kernel exercise (kernel_exercise.h):
//   CpuExerciseContract.*      the launcher refuses what the kernel cannot compute, before any CUDA call
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/09_tensor_core_matmul_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bf16.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "random.h"
#include "reference_matmul.h"

namespace {

using Matmul = void (*)(int, int, int, const ladder::bf16*, const ladder::bf16*, float*, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  Matmul matmul;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::matmul};
const Implementation kWrongAnswers[] = {
    {"wrong/b_ldmatrix_trans.cu", wrong_b_ldmatrix_trans::kImplemented, wrong_b_ldmatrix_trans::matmul},
    {"wrong/a_quarters_swapped.cu", wrong_a_quarters_swapped::kImplemented, wrong_a_quarters_swapped::matmul},
    {"wrong/accumulator_overwritten.cu", wrong_accumulator_overwritten::kImplemented,
     wrong_accumulator_overwritten::matmul},
};

// Shapes the kernel refuses: not whole tiles (M % 16, N % 8, K % 16), or empty.
const std::tuple<int, int, int> kNotWholeTiles[] = {{17, 8, 16}, {16, 12, 16}, {16, 8, 24}, {0, 8, 16}, {16, 8, 8}};

// One run on fresh inputs, C poisoned (NaN) first, every element of C against the fp64 reference
// on the bf16-rounded inputs (input rounding is not the kernel's error). The bound: a product of
// two bf16 (8 significant bits each) is exact in fp32, so only the K-term fp32 sum rounds; the
// tensor core truncates its partial sums (a biased error, not a random walk), so the worst case
// |c - ref| <= 4 K 2^-24 sum_k |a_ik b_jk| per element, and ladder::bf16_gemm_bound(K) = K 2^-24
// in relative l2 over C (compare.h). A wrong fragment, a wrong lane map or a lost k16 slice is off
// by O(1) of C itself.
::testing::AssertionResult computes_c(const Implementation& impl, int M, int N, int K, std::uint64_t seed) {
  const std::vector<float> A = ladder::round_to_bf16(ladder::random_uniform(std::size_t(M) * K, seed));
  const std::vector<float> Bt = ladder::round_to_bf16(ladder::random_uniform(std::size_t(N) * K, seed + 1));
  const std::vector<double> ref = ladder::matmul_reference_bt(A, Bt, M, N, K);
  std::vector<float> absA(A.size()), absB(Bt.size());
  for (std::size_t i = 0; i < A.size(); ++i) absA[i] = std::fabs(A[i]);
  for (std::size_t i = 0; i < Bt.size(); ++i) absB[i] = std::fabs(Bt[i]);
  const std::vector<double> abs_ref = ladder::matmul_reference_bt(absA, absB, M, N, K);

  ladder::DeviceBuffer<ladder::bf16> dA(ladder::to_bf16(A)), dB(ladder::to_bf16(Bt));
  ladder::DeviceBuffer<float> dC(std::size_t(M) * N);
  dC.poison();
  impl.matmul(M, N, K, dA.data(), dB.data(), dC.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> C = dC.download();

  const std::string where = "C at M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
  const double u = 1.0 / 16777216.0;  // 2^-24
  for (std::size_t i = 0; i < C.size(); ++i) {
    const double err = std::fabs(double(C[i]) - ref[i]), tol = 4.0 * K * u * abs_ref[i] + 1e-30;
    if (!(err <= tol)) {  // NaN (never written) fails too
      char buf[256];
      std::snprintf(buf, sizeof buf, "first bad element C[%zu, %zu]: got %.9g, want %.9g (|error| %.3g > %.3g)", i / N,
                    i % N, double(C[i]), ref[i], err, tol);
      return ::testing::AssertionFailure() << where << ": " << buf << "; " << ladder::compare(C, ref).str();
    }
  }
  const ::testing::AssertionResult r = ladder::matches(C, ref, ladder::bf16_gemm_bound(K));
  if (!r) return ::testing::AssertionFailure() << where << ": " << r.message();
  return r;
}

// Every shape a multiple of the tile (the kernel has no tail code): one tile and one k16 slice;
// M / 16 a multiple of no block (4 warps), so the last block has idle warps; K of 2, 33, 63 and
// 256 slices; then that the shapes which are not whole tiles are refused. The buffers are large
// enough that an implementation which forgot to refuse would still stay inside them.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{
           {16, 8, 16}, {48, 24, 32}, {272, 136, 528}, {1024, 512, 1008}, {80, 8, 4096}}) {
    const ::testing::AssertionResult r = computes_c(impl, M, N, K, seed + 2 * run++);
    if (!r) return r;
  }
  ladder::DeviceBuffer<ladder::bf16> A(64 * 64), B(64 * 64);
  ladder::DeviceBuffer<float> C(64 * 64);
  for (auto [M, N, K] : kNotWholeTiles) {
    try {
      impl.matmul(M, N, K, A.data(), B.data(), C.data(), nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      return ::testing::AssertionFailure()
             << "M=" << M << " N=" << N << " K=" << K << " is not whole 16 x 8 x 16 tiles, and was not refused";
    } catch (const std::invalid_argument&) {
    }
  }
  return ::testing::AssertionSuccess();
}

// The GPU tests need bf16 mma.sync and ldmatrix: compute capability 8.0 (the chapter's steps 1-4).
#define REQUIRE_SM80()                                                                                     \
  do {                                                                                                     \
    LADDER_REQUIRE_GPU();                                                                                  \
    if (ladder::device().cc_major < 8)                                                                     \
      GTEST_SKIP() << "bf16 mma.sync needs compute capability 8.0; device 0 is " << ladder::device().name; \
  } while (0)

const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

// No GPU needed: every refusal comes from check_arguments, before any CUDA call (the pointers
// are never dereferenced).
TEST(CpuExerciseContract, RefusesWhatTheKernelCannotCompute) {
  const auto* A = static_cast<const ladder::bf16*>(at(256));
  const auto* B = static_cast<const ladder::bf16*>(at(512));
  auto* C = static_cast<float*>(const_cast<void*>(at(1024)));
  for (auto [M, N, K] : kNotWholeTiles) {
    try {
      solution::matmul(M, N, K, A, B, C, nullptr);
      ADD_FAILURE() << "accepted M=" << M << " N=" << N << " K=" << K;
    } catch (const std::invalid_argument& e) {
      const std::string why = M < 1 ? "between 1 and" : "multiples of the mma tile";
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(solution::matmul(16, 8, 16, nullptr, B, C, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::matmul(16, 8, 16, A, B, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::matmul(16, 8, 16, static_cast<const ladder::bf16*>(at(258)), B, C, nullptr),
               std::invalid_argument)
      << "A 2 bytes off a 16-byte boundary";
  EXPECT_THROW(solution::matmul(16, 8, 16, A, static_cast<const ladder::bf16*>(at(520)), C, nullptr),
               std::invalid_argument)
      << "Bt 8 bytes off a 16-byte boundary";
  EXPECT_THROW(solution::matmul(16, 8, tc_kernel_exercise::kMaxDim + 16, A, B, C, nullptr), std::invalid_argument);
}

TEST(GpuExerciseSolution, Passes) {
  REQUIRE_SM80();
  LADDER_TEST_SEED(seed);
  ASSERT_TRUE(kSolution.implemented);
  EXPECT_TRUE(check(kSolution, seed));
}

TEST(GpuExerciseWrongAnswers, EachFails) {
  REQUIRE_SM80();
  LADDER_TEST_SEED(seed);
  for (const Implementation& w : kWrongAnswers) {
    ASSERT_TRUE(w.implemented) << w.file << " must set kImplemented: it is an answer, not the stub";
    const ::testing::AssertionResult r = check(w, seed);
    EXPECT_FALSE(r) << w.file << " passes the check, which exists to catch it";
    if (!r) std::cout << "  " << w.file << " fails, as it should: " << r.message() << "\n";
  }
}

#if LADDER_EXERCISE_MINE  // only in 09_tensor_core_matmul_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, MmaTileMatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 09_tensor_core_matmul/exercises/mine.cu "
                                     "(write mma_k16 and store_tile, then set kImplemented = true)";
  REQUIRE_SM80();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::matmul}, seed));
}
#endif

}  // namespace
