// Which chapter's kernels answer a call, and what is refused before any launch: pure host logic,
// so it runs on every machine. The kernels themselves are tested through the operators
// (tests/test_ops.py, on a GPU) and in their own chapters.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "attention_ops.h"

namespace {

using ladder::AttentionShape;
using ops::Kernels;
using ops::Mask;
using ops::ScoreMod;
using ops::Variant;

AttentionShape shape(int d = 128, int N = 1000, int N_kv = 0, int H = 8, int H_kv = 0) {
  return ladder::attention_shape(2, H, H_kv ? H_kv : H, N, N_kv ? N_kv : N, d, false);
}
Variant with(Mask m, ScoreMod s = ScoreMod::None) {
  Variant v;
  static const int doc = 0;
  static const float slope = 0.5f;
  v.mask = m, v.score = s, v.doc = &doc, v.slopes = &slope, v.softcap = 30.0f;
  return v;
}
// A call's checks as forward() makes them: the parameters, then the choice.
Kernels choose(const AttentionShape& s, const Variant& v, bool hopper, bool any_gpu) {
  ops::check_parameters(v);
  return ops::choose(s, v.mask, v.score, hopper, any_gpu);
}
// The message of the std::invalid_argument `f` throws ("" when it throws none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CpuChoose, DenseAndCausalRunOnFa3OnHopperAndOnFa2Elsewhere) {
  for (Mask m : {Mask::None, Mask::Causal})
    for (int d : {64, 128}) {
      EXPECT_EQ(choose(shape(d), with(m), true, true), Kernels::Fa3);
      EXPECT_EQ(choose(shape(d), with(m), false, true), Kernels::Fa2);
    }
  EXPECT_EQ(choose(shape(128, 300, 1000, 32, 8), with(Mask::Causal), true, true), Kernels::Fa3);  // GQA, N_kv > N
}

TEST(CpuChoose, MasksAndScoreModifiersRunOnChapter15) {
  for (Mask m : {Mask::SlidingWindow, Mask::PrefixLM, Mask::Documents})
    EXPECT_EQ(choose(shape(), with(m), true, true), Kernels::Flex);
  for (ScoreMod s : {ScoreMod::Softcap, ScoreMod::Alibi})
    EXPECT_EQ(choose(shape(), with(Mask::Causal, s), true, true), Kernels::Flex);
}

TEST(CpuChoose, RefusesWhatNoKernelTakesNamingWhatIsAllowed) {
  EXPECT_NE(refusal([] { choose(shape(96), with(Mask::Causal), true, true); }).find("d in {64, 128}"),
            std::string::npos);
  EXPECT_EQ(choose(shape(64), with(Mask::SlidingWindow), true, true), Kernels::Flex);  // both head dims
  EXPECT_NE(refusal([] { choose(shape(), with(Mask::PrefixLM), false, true); }).find("sm_90a"), std::string::npos);
  EXPECT_NE(refusal([] { choose(shape(), with(Mask::Causal), false, false); }).find("no usable GPU"),
            std::string::npos);
  EXPECT_NE(refusal([] { choose(shape(), with(Mask::None, ScoreMod::Softcap), true, true); }).find("causal"),
            std::string::npos);
  EXPECT_NE(refusal([] { choose(shape(128, 100, 200), with(Mask::Documents), true, true); }).find("N_kv = N"),
            std::string::npos);
  EXPECT_NE(refusal([] {
              choose(ladder::attention_shape(1, 6, 4, 64, 64, 128, false), with(Mask::None), true, true);
            }).find("multiple of H_kv"),
            std::string::npos);
  AttentionShape causal_shape = shape();
  causal_shape.causal = true;
  EXPECT_NE(refusal([&] { choose(causal_shape, with(Mask::None), true, true); }).find("Mask::Causal"),
            std::string::npos);
  Variant window = with(Mask::SlidingWindow);
  window.window_left = -1;
  EXPECT_NE(refusal([&] { choose(shape(), window, true, true); }).find(">= 0"), std::string::npos);
  Variant docs = with(Mask::Documents);
  docs.doc = nullptr;
  EXPECT_NE(refusal([&] { choose(shape(), docs, true, true); }).find("document ids"), std::string::npos);
  Variant cap = with(Mask::Causal, ScoreMod::Softcap);
  cap.softcap = 0.0f;
  EXPECT_NE(refusal([&] { choose(shape(), cap, true, true); }).find("> 0"), std::string::npos);
}

TEST(CpuChoose, NamesAreTheOperatorsSpelling) {
  EXPECT_EQ(ops::mask_from_name("sliding_window"), Mask::SlidingWindow);
  EXPECT_EQ(ops::score_mod_from_name("alibi"), ScoreMod::Alibi);
  EXPECT_NE(refusal([] { ops::mask_from_name("window"); }).find("none, causal, sliding_window, prefix_lm, documents"),
            std::string::npos);
  EXPECT_NE(refusal([] { ops::score_mod_from_name("tanh"); }).find("none, softcap, alibi"), std::string::npos);
}

}  // namespace
