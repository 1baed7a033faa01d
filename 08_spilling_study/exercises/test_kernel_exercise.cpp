// The tests of chapter 08's kernel exercise (kernel_exercise.h):
//   CpuExerciseSolution.*      solution.cu's kernel keeps acc in registers (ptxas, no GPU needed)
//   CpuExerciseWrongAnswers.*  the wrong answers ptxas can tell apart are told apart
//   GpuExerciseSolution.*      solution.cu passes: registers and the right O      (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says         (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/08_spilling_study_exercise --gtest_filter='Exercise*'
#include <iostream>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "ptxas_report.h"
#include "reference_matmul.h"

namespace {

// What ptxas said about each file, captured when this test was built (CMakeLists.txt).
const char kPtxasSolution[] =
#include "ptxas_solution.inc"
    ;
const char kPtxasUnrollPragmaOnly[] =
#include "ptxas_unroll_pragma_only.inc"
    ;
const char kPtxasColumnsMixedUp[] =
#include "ptxas_columns_mixed_up.inc"
    ;

struct Implementation {
  const char* file;
  const bool& implemented;
  void (*pv)(int, int, const float*, const float*, float*, cudaStream_t);
  const char* ptxas_log;
  bool caught_by_ptxas;  // a wrong answer whose ptxas report alone fails it
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::pv, kPtxasSolution, false};
const Implementation kWrongAnswers[] = {
    {"wrong/unroll_pragma_only.cu", wrong_unroll_pragma_only::kImplemented, wrong_unroll_pragma_only::pv,
     kPtxasUnrollPragmaOnly, true},
    {"wrong/columns_mixed_up.cu", wrong_columns_mixed_up::kImplemented, wrong_columns_mixed_up::pv,
     kPtxasColumnsMixedUp, false},
};

// The file's pv_kernel as ptxas compiled it: no stack frame (an array indexed at run time lives
// there, in local memory) and no spills (the register allocator running short).
::testing::AssertionResult in_registers(const Implementation& impl) {
  const std::vector<spill::PtxasEntry> entries = spill::parse_ptxas(impl.ptxas_log);
  for (const spill::PtxasEntry& e : entries) {
    if (e.function != "pv_kernel") continue;
    if (e.stack_frame == 0 && e.spill_stores == 0 && e.spill_loads == 0)
      return ::testing::AssertionSuccess() << e.registers << " registers, no stack frame";
    return ::testing::AssertionFailure() << impl.file << ": ptxas reports pv_kernel with " << e.stack_frame
                                         << " bytes stack frame, " << e.spill_stores << " bytes spill stores, "
                                         << e.spill_loads
                                         << " bytes spill loads: acc is in local memory, not registers";
  }
  return ::testing::AssertionFailure() << impl.file << ": no pv_kernel in its ptxas report:\n" << impl.ptxas_log;
}

// O against the fp64 reference, random P and V in [-1, 1), O poisoned (NaN) first: a row or
// column no thread stores stays NaN. Bound kFp32: a K-term fp32 dot product per output.
::testing::AssertionResult computes_o(const Implementation& impl, int M, int K, std::uint64_t seed) {
  constexpr int d = spill_kernel_exercise::d;
  const std::vector<float> P = ladder::random_uniform(std::size_t(M) * K, seed);
  const std::vector<float> V = ladder::random_uniform(std::size_t(K) * d, seed + 1);
  ladder::DeviceBuffer<float> dP(P), dV(V), dO(std::size_t(M) * d);
  dO.poison();
  impl.pv(M, K, dP.data(), dV.data(), dO.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const ::testing::AssertionResult r =
      ladder::matches(dO.download(), ladder::matmul_reference(P, V, M, d, K), ladder::kFp32);
  if (r) return r;
  return ::testing::AssertionFailure() << "O at M=" << M << " K=" << K << ": " << r.message();
}

// Registers first (no GPU needed), then the numbers at M that are multiples of no block
// (kWarps kRows = 16 rows), fewer rows than one warp owns, and a long K.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  ::testing::AssertionResult r = in_registers(impl);
  if (!r) return r;
  int run = 0;
  for (auto [M, K] : std::vector<std::pair<int, int>>{{1, 5}, {3, 64}, {77, 33}, {1021, 257}, {200, 2048}}) {
    r = computes_o(impl, M, K, seed + 2 * run++);
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

TEST(CpuExerciseSolution, AccumulatorsInRegisters) { EXPECT_TRUE(in_registers(kSolution)); }

TEST(CpuExerciseWrongAnswers, LocalMemoryIsCaughtWithoutAGpu) {
  for (const Implementation& w : kWrongAnswers) {
    if (!w.caught_by_ptxas) continue;
    EXPECT_FALSE(in_registers(w)) << w.file << " keeps acc in registers, which it should not";
  }
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

#if LADDER_EXERCISE_MINE  // only in 08_spilling_study_exercise: the default build never compiles mine.cu
const char kPtxasMine[] =
#include "ptxas_mine.inc"
    ;

TEST(ExerciseKernel, AccumulatorsInRegistersAndORight) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 08_spilling_study/exercises/mine.cu "
                                     "(rewrite pv_kernel's loops, then set kImplemented = true)";
  const Implementation mine_cu{"mine.cu", mine::kImplemented, mine::pv, kPtxasMine, false};
  ASSERT_TRUE(in_registers(mine_cu));  // what ptxas said: needs no GPU
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check(mine_cu, seed));
}
#endif

}  // namespace
