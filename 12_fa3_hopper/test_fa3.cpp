#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include "09_tensor_core_matmul/tc_layout.h"
#include "attention_test_cases.h"
#include "fa3.h"
#include "fa3_kernel.h"
#include "fa3_problem.h"
#include "fp8_layout.h"
#include "gtest_helpers.h"
#include "reference_attention.h"

namespace {

using fa3::bf16;
using ladder::attention_shape;
using ladder::AttentionShape;

// A GPU test also needs an sm_90a GPU; elsewhere it says why and skips.
#define FA3_REQUIRE_SM90A()                                                                                           \
  do {                                                                                                                \
    LADDER_REQUIRE_GPU();                                                                                             \
    if (const std::string why = fa3::unavailable_reason(); !why.empty()) GTEST_SKIP() << "GPU test skipped: " << why; \
  } while (0)

// ---- CPU: the layouts the kernels rely on, bad input ---------------------------------------

// The P fragment: for bf16, the accumulator pairs of columns (8j + 2c + e) become the A
// fragment of wgmma k16 without moving between lanes (tc_layout's mma_a is the same
// per-warp layout as wgmma's A). Checked for every thread, step and register.
TEST(CpuFa3, Bf16AccumulatorIsTheAFragmentOfPV) {
  for (int t = 0; t < 128; ++t)
    for (int k = 0; k < fa3::kernel::Cfg<128, false, fa3::kBestStep>::kPSteps; ++k)
      for (int q = 0; q < 4; ++q)
        for (int half = 0; half < 2; ++half) {
          // to_p: a[k][q] = (s[8k + 2q], s[8k + 2q + 1])
          const tc::layout::Coord from = tc::layout::wgmma_d(t, 8 * k + 2 * q + half);
          const tc::layout::Coord want = tc::layout::mma_a(t % 32, q, half);
          EXPECT_EQ(from.row, 16 * (t / 32) + want.row) << "thread " << t << " k " << k << " reg " << q;
          EXPECT_EQ(from.col, 16 * k + want.col) << "thread " << t << " k " << k << " reg " << q;
        }
}

// FP8: the PTX ISA's e4m3 A fragment of wgmma k32 (thread with g = lane / 4, c = lane % 4:
// register q holds row g + 8 (q % 2), k = 16 (q / 2) + 4c + byte) against what to_p packs
// (register q, byte b = accumulator column 8j' + 2c + e with j' = 2 (q / 2) + b / 2,
// e = b % 2): the key a thread holds must sit in the slot fp8_key_slot gives it.
TEST(CpuFa3, Fp8KeySlotsMatchThePFragment) {
  std::set<int> slots;
  for (int x = 0; x < 32; ++x) {
    const int slot = fa3::fp8_key_slot(x);
    EXPECT_TRUE(slots.insert(slot).second) << "slot " << slot << " used twice";
    EXPECT_EQ(fa3::fp8_slot_key(slot), x);
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int q = 0; q < 4; ++q)
      for (int b = 0; b < 4; ++b) {
        const int c = lane % 4;
        const int k_hw = 16 * (q / 2) + 4 * c + b;                  // where the tensor core reads it
        const int key = 8 * (2 * (q / 2) + b / 2) + 2 * c + b % 2;  // which key to_p put there
        EXPECT_EQ(fa3::fp8_key_slot(key), k_hw) << "lane " << lane << " reg " << q << " byte " << b;
      }
  EXPECT_EQ(fa3::fp8_vt_column(32 + 9), 32 + fa3::fp8_key_slot(9));
}

// The MN-major descriptor of V_j: leading offset = the next 64 columns of d (the next TMA
// box), stride offset = 8 keys further (1024 bytes), 128B swizzle.
TEST(CpuFa3, VDescriptorFields) {
  const std::uint32_t addr = 0x12000;
  const std::uint64_t desc = tc::layout::wgmma_desc(addr, 128 * 128, 1024, 1);
  EXPECT_EQ(desc & 0x3FFF, addr >> 4);
  EXPECT_EQ((desc >> 16) & 0x3FFF, 128u * 128 / 16);
  EXPECT_EQ((desc >> 32) & 0x3FFF, 1024u / 16);
  EXPECT_EQ(desc >> 62, 1u);
}

// The kernel steps a tile's descriptor to each k (tc_layout.h, wgmma_desc_at): the same bits as
// building it at the new address, anywhere in a CTA's shared memory (the 1024-byte alignment
// included), for both layouts the kernel uses.
TEST(CpuFa3, DescriptorSteps) {
  const auto end = static_cast<std::uint32_t>(ladder::kH200SmemPerBlock + 1024);
  for (std::uint32_t base = 0; base < end; base += 1024)
    for (std::uint32_t bytes = 0; base + bytes < end; bytes += 32)
      for (const std::uint32_t lbo : {16u, 128u * 128, 192u * 128}) {
        const std::uint64_t at = tc::layout::wgmma_desc_at(tc::layout::wgmma_desc(base, lbo, 1024, 1), bytes);
        ASSERT_EQ(at, tc::layout::wgmma_desc(base + bytes, lbo, 1024, 1)) << base << " + " << bytes << ", lbo " << lbo;
      }
}

TEST(CpuFa3, StepsAndFootprints) {
  std::set<std::string> names;
  for (fa3::Step s : fa3::kAllSteps) EXPECT_TRUE(names.insert(fa3::name(s)).second);
  for (int d : fa3::kSupportedD)
    for (fa3::Step s : fa3::kAllSteps) {
      const fa3::kernel::Footprint f = fa3::kernel::footprint(d, false, s);
      EXPECT_LE(f.smem_bytes, ladder::kH200SmemPerBlock) << "d=" << d << " " << fa3::name(s);
      EXPECT_EQ(f.threads, s == fa3::Step::Tma ? 256 : 384);
      EXPECT_GE(f.stages, 2);
    }
  EXPECT_LE(fa3::kernel::footprint(128, true, fa3::kBestStep).smem_bytes, ladder::kH200SmemPerBlock);
  const fa3::kernel::Footprint three = fa3::kernel::footprint(128, false, fa3::Step::IntraWg, {3});
  EXPECT_EQ(three.stages, 3);
  EXPECT_LE(three.smem_bytes, ladder::kH200SmemPerBlock);
}

// FP8's key tiles: a stage is K_j (B_c rows of 128 bytes) and Vt_j in boxes of 128 keys (d = 128
// rows of 128 bytes each), beside Q_i, O's buffer and the barriers: four stages at 128 keys, three
// at 192, two at 224 (three would not fit), each within the H200's shared memory.
TEST(CpuFa3, Fp8KeyTilesAndStages) {
  const std::pair<int, int> expected[] = {{128, 4}, {192, 3}, {224, 2}};
  for (const auto& [keys, stages] : expected) {
    const fa3::kernel::Footprint f = fa3::kernel::footprint(128, true, fa3::Step::IntraWg, {0, 0, keys});
    EXPECT_EQ(f.B_c, keys);
    EXPECT_EQ(f.stages, stages) << keys << " keys";
    EXPECT_LE(f.smem_bytes, ladder::kH200SmemPerBlock) << keys << " keys";
  }
}

// The studies (studies/fa3_studies.h): the step tables' tune: rows (step_table.py) are exactly
// kStudyRows; each row's kernel is compiled at every d its shapes have (bf16 64 and 128, FP8 128
// and 256, unless the row says one); and the rows reach every configuration with_study compiles,
// so no study kernel is built that no row runs.
TEST(CpuFa3Studies, TheStepTablesRowsAreTheCompiledStudies) {
  std::ifstream in(FA3_STEP_TABLE);
  ASSERT_TRUE(in) << "cannot read " << FA3_STEP_TABLE;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> table, rows, configs;
  const std::regex tune("\"tune:([a-z0-9_]+)\"");
  for (auto m = std::sregex_iterator(text.begin(), text.end(), tune); m != std::sregex_iterator(); ++m)
    table.insert((*m)[1].str());
  for (const fa3::kernel::StudyRow& r : fa3::kernel::kStudyRows) {
    EXPECT_TRUE(rows.insert(r.name).second) << r.name << " twice";
    const std::vector<int> ds = r.d     ? std::vector<int>{r.d}
                                : r.fp8 ? std::vector<int>{128, 256}
                                        : std::vector<int>{64, 128};
    for (int d : ds) {
      EXPECT_NO_THROW(fa3::kernel::footprint(d, r.fp8, r.step, r.t)) << r.name << " at d=" << d;
      if (!fa3::kernel::is_lesson(r.fp8, r.t))
        fa3::kernel::with_study(d, r.fp8, r.step, r.t, [&](auto c) { configs.insert(typeid(c).name()); });
    }
  }
  EXPECT_EQ(table, rows) << "step_table.py's tune: rows and kStudyRows differ";
  EXPECT_EQ(configs.size(), std::size_t(fa3::kernel::kStudyConfigs)) << "a study configuration no row runs";
  EXPECT_THROW(fa3::kernel::with_study(128, false, fa3::Step::IntraWg, {}, [](auto) {}), std::invalid_argument);
}

TEST(CpuFa3, BadInputIsRejectedBeforeAnyLaunch) {
  bf16* p = reinterpret_cast<bf16*>(std::uintptr_t{256});
  float* f = reinterpret_cast<float*>(std::uintptr_t{512});
  const AttentionShape ok = attention_shape(1, 4, 2, 64, 64, 64, false);
  auto fwd = [&](const AttentionShape& s, bf16* q = nullptr, float* L = nullptr) {
    fa3::forward(s, q ? q : p, p, p, p, L ? L : f);
  };
  try {
    fwd(attention_shape(1, 1, 1, 16, 16, 96, false));
    FAIL() << "d=96 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("64, 128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fwd(attention_shape(1, 1, 1, 0, 0, 64, false)), std::invalid_argument);  // N = 0
  EXPECT_THROW(fwd(attention_shape(1, 6, 4, 8, 8, 64, false)), std::invalid_argument);  // H not a multiple of H_kv
  EXPECT_THROW(fwd(ok, reinterpret_cast<bf16*>(264)), std::invalid_argument);           // Q not 16-byte aligned (TMA)
  EXPECT_THROW(fwd(ok, nullptr, reinterpret_cast<float*>(2)), std::invalid_argument);   // misaligned L
  EXPECT_THROW(fa3::forward(ok, nullptr, p, p, p, f), std::invalid_argument);           // null Q
  EXPECT_THROW(fa3::forward(ok, p, p, p, nullptr, f), std::invalid_argument);           // null O
  EXPECT_THROW(fa3::forward(ok, p, p, p, p, f, {fa3::Step::IntraWg, 3}), std::invalid_argument);  // 3 stages: d=128
  EXPECT_THROW(fa3::forward(attention_shape(1, 1, 1, 64, 64, 128, false), p, p, p, p, f, {fa3::Step::PingPong, 3}),
               std::invalid_argument);  // 3 stages: intrawg only
  try {                                 // the speculative max: d = 128 only, and only beside FA4's max rule
    fa3::forward(ok, p, p, p, p, f, {fa3::Step::IntraWg, 0, false, true});
    FAIL() << "speculative max at d=64 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is not compiled"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      fa3::forward(attention_shape(1, 1, 1, 64, 64, 128, false), p, p, p, p, f, {fa3::Step::IntraWg, 0, true, true}),
      std::invalid_argument);  // speculative max with FA2's rule
  try {                        // a Step outside the enum names the steps, instead of launching nothing
    fa3::forward(ok, p, p, p, p, f, {static_cast<fa3::Step>(99), 0});
    FAIL() << "step 99 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("intrawg"), std::string::npos) << e.what();
  }
  fa3::Fp8Inputs in{reinterpret_cast<std::uint8_t*>(p),
                    reinterpret_cast<std::uint8_t*>(p),
                    reinterpret_cast<std::uint8_t*>(p),
                    f,
                    f,
                    f};
  try {
    fa3::forward_fp8(ok, in, p, f);  // d = 64
    FAIL() << "FP8 at d=64 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("128"), std::string::npos) << e.what();
  }
  in.descale_v = nullptr;
  EXPECT_THROW(fa3::forward_fp8(attention_shape(1, 4, 2, 64, 64, 128, false), in, p, f), std::invalid_argument);
  // Everything valid: on a machine without an sm_90a GPU the refusal names the device.
  if (!fa3::unavailable_reason().empty()) {
    try {
      fwd(ok);
      FAIL() << "launched without an sm_90a GPU";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(fa3::unavailable_reason()), std::string::npos) << e.what();
    }
  }
}

// ---- GPU: every step against the fp64 reference ---------------------------------------------

// O within the bf16 bound, L within kLMaxAbs (scaled with the logits: chapter 10's argument),
// rows without a key at O = 0 and L = -inf; every step on the same inputs.
void expect_forward_correct(const fa3::Problem& p, float q_scale_note = 1.0f) {
  const AttentionShape& s = p.s;
  const auto ref = ladder::attention_forward_reference(s, p.Q.data(), p.K.data(), p.V.data());
  fa3::OnDevice dev(p);
  std::vector<fa3::ForwardOptions> variants;
  for (fa3::Step step : fa3::kAllSteps) variants.push_back({step});
  if (s.d == 128) variants.push_back({fa3::Step::IntraWg, 3});  // the 3-stage experiment
  if (s.d == 128)  // the speculative max (FA4's max rule: every other bf16 kernel has FA2's)
    for (fa3::Step step : {fa3::Step::IntraWg, fa3::Step::Persistent}) variants.push_back({step, 0, false, true});
  for (const fa3::ForwardOptions& opt : variants) {
    dev.forward(opt);
    const std::string what = std::string("step ") + fa3::name(opt.step) +
                             (opt.kv_stages ? ", " + std::to_string(opt.kv_stages) + " stages" : "") +
                             (opt.eager_rescale ? ", eager rescale" : "") +
                             (opt.speculative_max ? ", speculative max" : "") + ", " + s.str() +
                             (q_scale_note != 1.0f ? ", Q x " + std::to_string(q_scale_note) : "");
    EXPECT_TRUE(ladder::matches(dev.O_host(), ref.O, ladder::kBf16Attention)) << "O, " << what;
    const ladder::Comparison L = ladder::compare_lse(dev.L_host(), ref.L);
    EXPECT_TRUE(!L.size_mismatch && L.nonfinite == 0 && L.max_abs <= fa3::kLMaxAbs * q_scale_note)
        << "L, " << what << ": " << L.str();
  }
}

// The edge-shape matrix of chapter 10 (common/attention_test_cases.h), every step on each.

class GpuFa3Forward : public ::testing::TestWithParam<ladder::edge::Case> {};
TEST_P(GpuFa3Forward, EveryStepMatchesTheReference) {
  FA3_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  if (const std::string why = ladder::edge::skip_reason(GetParam()); !why.empty()) GTEST_SKIP() << why;
  expect_forward_correct(fa3::make_problem(ladder::edge::case_shape(GetParam()), seed));
}
INSTANTIATE_TEST_SUITE_P(Shapes, GpuFa3Forward, ladder::edge::kCases, ladder::edge::case_name);

// N_q != N_kv, causal aligned at the bottom right: with 300 queries on 100 keys the first
// 200 see no key (O = 0, L = -inf), and whole row tiles have no key tile at all.
TEST(GpuFa3, QueriesAndKeysOfDifferentLengths) {
  FA3_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int a = ladder::small_mode() ? 17 : 100, b = ladder::small_mode() ? 150 : 300;
  for (int d : fa3::kSupportedD)
    for (bool causal : {false, true})
      for (const auto& [N, N_kv] : {std::pair{a, b}, std::pair{b, a}})
        expect_forward_correct(fa3::make_problem(attention_shape(2, 4, 2, N, N_kv, d, causal), seed));
}

// The persistent step walks several row tiles per CTA only when there are more tiles than
// SMs (132 on an H200): 9 x 32 = 288 tiles (up to three per CTA: every barrier phase of
// Q_i wraps) at d = 64, 9 x 16 = 144 at d = 128, with GQA and a ragged last row tile.
TEST(GpuFa3, PersistentWalksSeveralRowTilesPerCta) {
  FA3_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  if (ladder::small_mode()) GTEST_SKIP() << "small mode (compute-sanitizer): one tile per CTA";
  expect_forward_correct(fa3::make_problem(attention_shape(2, 16, 4, 1100, 1100, 64, false), seed));
  expect_forward_correct(fa3::make_problem(attention_shape(1, 16, 4, 1100, 1100, 128, false), seed));
}

// Logits 100x larger: the running max keeps every exponential <= 1.
TEST(GpuFa3, LargeLogitsStayFiniteAndAccurate) {
  FA3_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 33 : 300;
  for (int d : fa3::kSupportedD)
    for (bool causal : {false, true})
      expect_forward_correct(fa3::make_problem(attention_shape(1, 4, 2, N, N, d, causal), seed, 100.0f), 100.0f);
}

// The speculative max keeps FA4's rule (the ordinary bf16 path has FA2's exact max, so their
// bits differ; chapter 12's FP8 test compares the speculative and ordinary paths bit for bit,
// both with FA4's rule). Here it meets the reference where the vote fails: with logits x 30
// tiles often raise a row's max by more than 2^8 and S is computed again; with logits x 1
// almost only the first tile does.
TEST(GpuFa3, SpeculativeMaxMatchesTheReferenceWhenTheVoteFails) {
  FA3_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 200 : 1000;
  for (float logits : {1.0f, 30.0f})
    for (bool causal : {false, true})
      expect_forward_correct(fa3::make_problem(attention_shape(1, 16, 4, N, N, 128, causal), seed, logits), logits);
}

// The same inputs through chapter 10's kernel: both within the bound of the reference, and
// close to each other (both round P to bf16; they differ in summation order only).
TEST(GpuFa3, AgreesWithChapter10) {
  FA3_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const fa3::Problem p =
      fa3::make_problem(attention_shape(1, 8, 2, ladder::small_mode() ? 77 : 1000, 0, 128, true), seed);
  fa3::OnDevice dev(p);
  dev.forward_fa2();
  const std::vector<float> O10 = dev.O_host();
  dev.forward();
  std::vector<double> O10d(O10.begin(), O10.end());
  EXPECT_TRUE(ladder::matches(dev.O_host(), O10d, ladder::kBf16Attention)) << "O, chapter 12 vs chapter 10";
}

// FP8 on inputs quantised on the host (per tensor and per block), against the fp64
// reference on the dequantised inputs: kFp8Attention (fa3_problem.h says why).
TEST(GpuFa3, Fp8MatchesTheReferenceOnItsInputs) {
  FA3_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int n1 = ladder::small_mode() ? 17 : 1000, n2 = ladder::small_mode() ? 100 : 333;
  for (bool per_block : {false, true})
    for (const AttentionShape& s :
         {attention_shape(2, 4, 2, n1, n1, 128, false), attention_shape(1, 8, 2, n1, n1, 128, true),
          attention_shape(1, 4, 1, n2, n1, 128, true), attention_shape(1, 2, 2, 1, 1, 128, false)}) {
      const fa3::Problem p = fa3::make_problem(s, seed);
      fa3::Fp8Problem q = fa3::quantize_on_host(p, per_block);
      const auto ref = ladder::attention_forward_reference(s, q.Q.data(), q.K.data(), q.V.data());
      q.forward();
      const std::string what = std::string(per_block ? "per-block" : "per-tensor") + " scales, " + s.str();
      EXPECT_TRUE(ladder::matches(q.O_host(), ref.O, fa3::kFp8Attention)) << "FP8 O, " << what;
      const ladder::Comparison L = ladder::compare_lse(q.L_host(), ref.L);
      EXPECT_TRUE(!L.size_mismatch && L.nonfinite == 0 && L.max_abs <= fa3::fp8_l_max_abs(1.0))
          << "FP8 L, " << what << ": " << L.str();
    }
}

}  // namespace
