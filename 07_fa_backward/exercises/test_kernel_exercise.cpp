// The tests of chapter 07's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/07_fa_backward_exercise --gtest_filter='Exercise*'
#include <iostream>
#include <vector>

#include "attention_inputs.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "reference_attention.h"

namespace {

using DkDv = void (*)(const ladder::AttentionShape&, const float*, const float*, const float*, const float*,
                      const float*, const float*, float*, float*, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  DkDv dk_dv;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::dk_dv};
const Implementation kWrongAnswers[] = {
    {"wrong/missing_d.cu", wrong_missing_d::kImplemented, wrong_missing_d::dk_dv},
    {"wrong/dk_without_scale.cu", wrong_dk_without_scale::kImplemented, wrong_dk_without_scale::dk_dv},
};

std::vector<float> to_float(const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); }

// One run on fresh Q, K, V, dO; O and L from the fp64 forward (rounded to fp32, as a forward
// kernel would hand them over); dK and dV poisoned (NaN) first, then against the fp64 analytic
// backward. Bound kFp32Grad: dP and S are d-term dot products, dK and dV N-term sums, and
// dP - D cancels digits where P is near uniform; a missing term or factor is O(1).
::testing::AssertionResult matches_reference(const Implementation& impl, const ladder::AttentionShape& s,
                                             std::uint64_t seed) {
  const ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, true);
  const ladder::AttentionForward fwd = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
  const ladder::AttentionGrads ref =
      ladder::attention_backward_reference(s, x.Q.data(), x.K.data(), x.V.data(), x.dO.data());
  ladder::DeviceBuffer<float> Q(x.Q), K(x.K), V(x.V), O(to_float(fwd.O)), L(to_float(fwd.L)), dO(x.dO);
  ladder::DeviceBuffer<float> dK(s.elems()), dV(s.elems());
  dK.poison();
  dV.poison();
  impl.dk_dv(s, Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(), dK.data(), dV.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  ::testing::AssertionResult r = ladder::matches(dV.download(), ref.dV, ladder::kFp32Grad);
  if (!r) return ::testing::AssertionFailure() << "dV at " << s.str() << ": " << r.message();
  r = ladder::matches(dK.download(), ref.dK, ladder::kFp32Grad);
  if (!r) return ::testing::AssertionFailure() << "dK at " << s.str() << ": " << r.message();
  return r;
}

// N a multiple of neither tile (B_c = B_r = 32), one key only, several heads, causal and not.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (bool causal : {false, true})
    for (int N : {1, 77, 200}) {
      const ::testing::AssertionResult r =
          matches_reference(impl, {1, 2, N, fa2_backward_kernel_exercise::d, causal}, seed + 4 * run++);
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

#if LADDER_EXERCISE_MINE  // only in 07_fa_backward_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, DkDvMatchReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 07_fa_backward/exercises/mine.cu "
                                     "(write accumulate, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::dk_dv}, seed));
}
#endif

}  // namespace
