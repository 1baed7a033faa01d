// The tests of chapter 05's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/05_fa1_forward_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <iostream>
#include <vector>

#include "attention_inputs.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "reference_attention.h"

namespace {

using Fa1Forward = void (*)(const ladder::AttentionShape&, const float*, const float*, const float*, float*, float*,
                            float*, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  Fa1Forward fa1_forward;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::fa1_forward};
const Implementation kWrongAnswers[] = {
    {"wrong/missing_alpha.cu", wrong_missing_alpha::kImplemented, wrong_missing_alpha::fa1_forward},
    {"wrong/forgot_l_i.cu", wrong_forgot_l_i::kImplemented, wrong_forgot_l_i::fa1_forward},
};

// One run on fresh inputs (Q scaled by logit_scale), O, l and m poisoned (NaN) first, O and
// L = m + log(l) against the fp64 reference.
::testing::AssertionResult matches_reference(const Implementation& impl, const ladder::AttentionShape& s,
                                             float logit_scale, const ladder::Bound& bound, std::uint64_t seed) {
  const ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, false, logit_scale);
  const ladder::AttentionForward ref = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
  ladder::DeviceBuffer<float> Q(x.Q), K(x.K), V(x.V), O(s.elems()), l(s.rows()), m(s.rows());
  O.poison();
  l.poison();
  m.poison();
  impl.fa1_forward(s, Q.data(), K.data(), V.data(), O.data(), l.data(), m.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> out_l = l.download(), out_m = m.download();
  std::vector<float> L(out_l.size());
  for (std::size_t r = 0; r < L.size(); ++r) L[r] = out_m[r] + std::log(out_l[r]);
  const std::string where = s.str() + (logit_scale != 1.0f ? ", logits x" + std::to_string(int(logit_scale)) : "");
  ::testing::AssertionResult r = ladder::matches(O.download(), ref.O, bound);
  if (!r) return ::testing::AssertionFailure() << "O at " << where << ": " << r.message();
  r = ladder::matches(L, ref.L, bound);
  if (!r) return ::testing::AssertionFailure() << "m + log(l) at " << where << ": " << r.message();
  return r;
}

// N a multiple of neither tile (B_r = 64, B_c = 32), one key only, several heads. Bounds:
// kFp32 at unit logits (d-term dot products and N-term sums in fp32); with logits x100 every
// rounding of a score is 100x larger in absolute terms and exp() makes it a relative error of
// P, so kFp32LargeLogits. A missing or wrong rescale is off by O(1) in both.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  int run = 0;
  for (int N : {1, 77, 200, 301}) {
    const ::testing::AssertionResult r =
        matches_reference(impl, {2, 2, N, fa1_kernel_exercise::d, false}, 1.0f, ladder::kFp32, seed + 4 * run++);
    if (!r) return r;
  }
  return matches_reference(impl, {1, 2, 300, fa1_kernel_exercise::d, false}, 100.0f, ladder::kFp32LargeLogits,
                           seed + 4 * run);
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

#if LADDER_EXERCISE_MINE  // only in 05_fa1_forward_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, Fa1MatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 05_fa1_forward/exercises/mine.cu "
                                     "(write update_row, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::fa1_forward}, seed));
}
#endif

}  // namespace
