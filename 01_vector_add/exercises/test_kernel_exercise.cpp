// The tests of chapter 01's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/01_vector_add_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <vector>

#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"

namespace {

using AddFloat4 = void (*)(const float*, const float*, float*, std::size_t, unsigned, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  AddFloat4 add_float4;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::add_float4};
const Implementation kWrongAnswers[] = {
    {"wrong/no_tail.cu", wrong_no_tail::kImplemented, wrong_no_tail::add_float4},
    {"wrong/off_by_one_tail.cu", wrong_off_by_one_tail::kImplemented, wrong_off_by_one_tail::add_float4},
};

// Floats after the n of c, poisoned like c: a write past the end lands there. a and b have
// them too (random), so that a kernel that reads past n reads memory it owns.
constexpr std::size_t kGuard = 64;

bool still_poisoned(float x) {  // every byte 0xFF, as DeviceBuffer::poison left it
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits == 0xFFFFFFFFu;
}

// One launch on fresh random a, b and a poisoned c, every element against the CPU's a + b.
// The bound is exact equality: an fp32 addition is correctly rounded (IEEE 754) on both sides,
// so the only way to differ is to add the wrong elements or none.
::testing::AssertionResult adds_exactly(const Implementation& impl, std::size_t n, unsigned blocks,
                                        std::uint64_t seed) {
  const std::vector<float> a = ladder::random_uniform(n + kGuard, seed);
  const std::vector<float> b = ladder::random_uniform(n + kGuard, seed + 1);
  ladder::DeviceBuffer<float> da(a), db(b), dc(n + kGuard);
  dc.poison();
  impl.add_float4(da.data(), db.data(), dc.data(), n, blocks, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> c = dc.download();

  const std::string where = "n = " + std::to_string(n) + " (n % 4 = " + std::to_string(n % 4) + "), " +
                            std::to_string(blocks) + " blocks of 256 threads: ";
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(c[i]))
      return ::testing::AssertionFailure()
             << where << "element " << i << " was never written (still NaN)"
             << (i >= n / 4 * 4 ? "; it is in the tail, after the last whole float4" : "");
    if (c[i] != a[i] + b[i])
      return ::testing::AssertionFailure()
             << where << "element " << i << " is " << c[i] << ", not a + b = " << a[i] + b[i];
  }
  for (std::size_t i = n; i < n + kGuard; ++i)
    if (!still_poisoned(c[i]))
      return ::testing::AssertionFailure() << where << "element " << i << " was written: past the end of c";
  return ::testing::AssertionSuccess();
}

// Sizes around every boundary the kernel has: fewer elements than one float4, each n % 4, a
// block's worth (256 threads, 1024 floats), and more float4s than the largest grid has threads
// (160 x 256), so that the grid-stride loop goes round more than once.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  std::uint64_t run = 0;
  for (std::size_t n : {1, 2, 3, 4, 5, 7, 255, 256, 1023, 1024, 1025, 4099, 100003, (1 << 20) + 2})
    for (unsigned blocks : {1u, 7u, 160u}) {
      ::testing::AssertionResult r = adds_exactly(impl, n, blocks, seed + 2 * run++);
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

#if LADDER_EXERCISE_MINE  // only in 01_vector_add_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, AddFloat4MatchesTheCpu) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 01_vector_add/exercises/mine.cu "
                                     "(write add_float4_kernel, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::add_float4}, seed));
}
#endif

}  // namespace
