// The tests of chapter 06's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/06_fa2_forward_exercise --gtest_filter='Exercise*'
#include <iostream>
#include <string>
#include <vector>

#include "attention_inputs.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "reference_attention.h"

namespace {

using Fa2Forward = void (*)(const ladder::AttentionShape&, const float*, const float*, const float*, float*, float*,
                            cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  Fa2Forward fa2_forward;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::fa2_forward};
const Implementation kWrongAnswers[] = {
    {"wrong/o_not_rescaled.cu", wrong_o_not_rescaled::kImplemented, wrong_o_not_rescaled::fa2_forward},
    {"wrong/alpha_after_max_update.cu", wrong_alpha_after_max_update::kImplemented,
     wrong_alpha_after_max_update::fa2_forward},
};

// One run on fresh inputs (Q scaled by logit_scale), O and L poisoned (NaN) first, both against
// the fp64 reference.
::testing::AssertionResult matches_reference(const Implementation& impl, const ladder::AttentionShape& s,
                                             float logit_scale, const ladder::Bound& bound, std::uint64_t seed) {
  const ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, false, logit_scale);
  const ladder::AttentionForward ref = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
  ladder::DeviceBuffer<float> Q(x.Q), K(x.K), V(x.V), O(s.elems()), L(s.rows());
  O.poison();
  L.poison();
  impl.fa2_forward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string where = s.str() + (logit_scale != 1.0f ? ", logits x" + std::to_string(int(logit_scale)) : "");
  ::testing::AssertionResult r = ladder::matches(O.download(), ref.O, bound);
  if (!r) return ::testing::AssertionFailure() << "O at " << where << ": " << r.message();
  r = ladder::matches(L.download(), ref.L, bound);
  if (!r) return ::testing::AssertionFailure() << "L at " << where << ": " << r.message();
  return r;
}

// N a multiple of neither tile (B_r = 64, B_c = 32), one key only, several heads, causal and not
// (causal: rows that see none of a tile's keys). Bounds: kFp32 at unit logits (d-term dot
// products and N-term sums in fp32); with logits x100 every rounding of a score is 100x larger
// in absolute terms and exp() makes it a relative error of P, so kFp32LargeLogits. A missing
// or misplaced rescale is off by O(1) in O.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (bool causal : {false, true}) {
    for (int N : {1, 77, 200, 301}) {
      const ::testing::AssertionResult r =
          matches_reference(impl, {2, 2, N, fa2_kernel_exercise::d, causal}, 1.0f, ladder::kFp32, seed + 4 * run++);
      if (!r) return r;
    }
    const ::testing::AssertionResult r = matches_reference(impl, {1, 2, 300, fa2_kernel_exercise::d, causal}, 100.0f,
                                                           ladder::kFp32LargeLogits, seed + 4 * run++);
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

#if LADDER_EXERCISE_MINE  // only in 06_fa2_forward_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, Fa2MatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 06_fa2_forward/exercises/mine.cu "
                                     "(write step and finish, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::fa2_forward}, seed));
}
#endif

}  // namespace
