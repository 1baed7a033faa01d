// The tests of chapter 10's kernel exercise (kernel_exercise.h), on the GPU:
//   GpuExerciseSolution.*      solution.cu passes                        (every GPU test run)
//   GpuExerciseWrongAnswers.*  each wrong/*.cu fails, as its comment says (every GPU test run)
//   ExerciseKernel.*           your mine.cu: build/bin/10_fa2_tensor_cores_exercise --gtest_filter='Exercise*'
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "compare.h"
#include "device_buffer.h"
#include "fa2_tc_problem.h"
#include "gtest_helpers.h"
#include "kernel_exercise.h"
#include "reference_attention.h"

namespace {

using Fa2Forward = void (*)(const ladder::AttentionShape&, const ladder::bf16*, const ladder::bf16*,
                            const ladder::bf16*, ladder::bf16*, float*, cudaStream_t);
struct Implementation {
  const char* file;
  const bool& implemented;
  Fa2Forward fa2_forward;
};
const Implementation kSolution{"solution.cu", solution::kImplemented, solution::fa2_forward};
const Implementation kWrongAnswers[] = {
    {"wrong/max_one_shuffle.cu", wrong_max_one_shuffle::kImplemented, wrong_max_one_shuffle::fa2_forward},
    {"wrong/o_not_rescaled.cu", wrong_o_not_rescaled::kImplemented, wrong_o_not_rescaled::fa2_forward},
};

// L = m ln 2 + ln l is fp32 throughout (the scores are exact bf16 products summed in fp32 by
// the tensor cores, then ex2, an fp32 row sum and logf), so it is checked in absolute terms, as
// the chapter's own test does: an error e in the scores is an error of about e in L. 1e-4 at
// unit-scale logits, scaled with the logits. A missing rescale or a wrong max moves L by far more.
constexpr double kLMaxAbs = 1e-4;

// One run on fresh bf16-rounded inputs (Q scaled by logit_scale), O and L poisoned (NaN) first,
// both against the fp64 reference computed on the same bf16 values. O's bound is the chapter's,
// kBf16Attention (common/compare.h): P~ is rounded to bf16 for P~ V_j and O is stored in bf16,
// two roundings of 2^-8 / sqrt(3) relative rms each, with a x2 margin; the input rounding is
// not error, since the reference sees the rounded inputs.
::testing::AssertionResult matches_reference(const Implementation& impl, const ladder::AttentionShape& s,
                                             float logit_scale, std::uint64_t seed) {
  const fa2tc::Problem x = fa2tc::make_problem(s, seed, logit_scale);
  const ladder::AttentionForward ref = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
  ladder::DeviceBuffer<ladder::bf16> Q(ladder::to_bf16(x.Q)), K(ladder::to_bf16(x.K)), V(ladder::to_bf16(x.V)),
      O(s.elems());
  ladder::DeviceBuffer<float> L(s.rows());
  O.poison();
  L.poison();
  impl.fa2_forward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string where = s.str() + (logit_scale != 1.0f ? ", logits x" + std::to_string(int(logit_scale)) : "");
  const ::testing::AssertionResult r = ladder::matches(ladder::from_bf16(O.download()), ref.O, ladder::kBf16Attention);
  if (!r) return ::testing::AssertionFailure() << "O at " << where << ": " << r.message();
  const ladder::Comparison c = ladder::compare_lse(L.download(), ref.L);
  if (c.size_mismatch || c.nonfinite > 0 || c.max_abs > kLMaxAbs * logit_scale)
    return ::testing::AssertionFailure() << "L at " << where << ": " << c.str() << " (bound: max_abs "
                                         << kLMaxAbs * logit_scale << "; rows that see no key must be -inf)";
  return ::testing::AssertionSuccess();
}

// N a multiple of neither tile (B_r = B_c = 64), one key only, several heads, causal and not;
// GQA (4 query heads on 2 KV heads); N_kv != N both ways, causal, where 123 queries see no key
// (O = 0, L = -inf, never NaN); logits x10 (peaked rows, maxima that move more). A missing
// rescale or a max over part of the row is off by far more than the bound.
::testing::AssertionResult check(const Implementation& impl, std::uint64_t seed) {
  const int d = fa2tc_kernel_exercise::d;
  struct Case {
    ladder::AttentionShape s;
    float logit_scale;
  };
  std::vector<Case> cases;
  for (bool causal : {false, true}) {
    for (int N : {1, 77, 200, 301}) cases.push_back({ladder::attention_shape(2, 2, 2, N, N, d, causal), 1.0f});
    cases.push_back({ladder::attention_shape(1, 4, 2, 130, 130, d, causal), 1.0f});
    cases.push_back({ladder::attention_shape(1, 2, 2, 300, 300, d, causal), 10.0f});
  }
  cases.push_back({ladder::attention_shape(1, 2, 2, 200, 77, d, true), 1.0f});
  cases.push_back({ladder::attention_shape(1, 2, 2, 77, 200, d, true), 1.0f});
  int run = 0;
  for (const Case& c : cases) {
    const ::testing::AssertionResult r = matches_reference(impl, c.s, c.logit_scale, seed + 4 * run++);
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

// Bad input is refused before any launch, on any machine (the pointers are never dereferenced).
TEST(CpuExerciseKernel, BadInputIsRefusedBeforeAnyLaunch) {
  const auto* p = reinterpret_cast<const ladder::bf16*>(std::uintptr_t{256});
  auto* o = reinterpret_cast<ladder::bf16*>(std::uintptr_t{512});
  auto* L = reinterpret_cast<float*>(std::uintptr_t{1024});
  const ladder::AttentionShape d128 = ladder::attention_shape(1, 1, 1, 64, 64, 128, false);
  EXPECT_THROW(solution::fa2_forward(d128, p, p, p, o, L, nullptr), std::invalid_argument);
  const ladder::AttentionShape bad_group = ladder::attention_shape(1, 3, 2, 64, 64, 64, false);
  EXPECT_THROW(solution::fa2_forward(bad_group, p, p, p, o, L, nullptr), std::invalid_argument);
  const ladder::AttentionShape ok = ladder::attention_shape(1, 1, 1, 64, 64, 64, false);
  EXPECT_THROW(solution::fa2_forward(ok, nullptr, p, p, o, L, nullptr), std::invalid_argument);
  EXPECT_THROW(solution::fa2_forward(ok, p, p, p, o + 1, L, nullptr), std::invalid_argument);  // O not 16-byte aligned
}

#if LADDER_EXERCISE_MINE  // only in 10_fa2_tensor_cores_exercise: the default build never compiles mine.cu
TEST(ExerciseKernel, Fa2TcMatchesReference) {
  ASSERT_TRUE(mine::kImplemented) << "unimplemented: edit 10_fa2_tensor_cores/exercises/mine.cu "
                                     "(write online_softmax, then set kImplemented = true)";
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  EXPECT_TRUE(check({"mine.cu", mine::kImplemented, mine::fa2_forward}, seed));
}
#endif

}  // namespace
