#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "attention_test_cases.h"
#include "bf16.h"
#include "cudnn_attention.h"
#include "device_buffer.h"
#include "fa2_tc.h"
#include "fa2_tc_problem.h"
#include "fit.h"
#include "gtest_helpers.h"
#include "reference_attention.h"

namespace {

using fa2tc::bf16;
using ladder::attention_shape;
using ladder::AttentionShape;

// ---- CPU: addressing, configurations, bad input --------------------------------------

TEST(CpuFa2Tc, SwizzledAddressingMatchesChapter09) {
  const std::string mismatch = fa2tc::detail::check_swizzle_addressing();
  EXPECT_TRUE(mismatch.empty()) << mismatch;
}

TEST(CpuFa2Tc, TileConfigsAreListedPerHeadDim) {
  for (int d : fa2tc::kSupportedD)
    for (const auto& configs : {fa2tc::forward_configs(d), fa2tc::forward_ablations(d), fa2tc::backward_configs(d)}) {
      if (configs.empty()) continue;  // no ablations at this d
      std::set<std::string> names;
      for (const fa2tc::TileConfig& c : configs) {
        EXPECT_TRUE(names.insert(c.name).second) << "duplicate config name " << c.name;
        EXPECT_EQ(c.B_c % 16, 0) << c.name;  // P is reused as A fragments of 16 keys
        EXPECT_EQ(c.B_r % 16, 0) << c.name;  // m16 tiles
        EXPECT_GE(c.warps, 4) << c.name;
      }
    }
  for (int d : fa2tc::kSupportedD) {
    EXPECT_FALSE(fa2tc::forward_configs(d).empty()) << "d=" << d;
    EXPECT_FALSE(fa2tc::backward_configs(d).empty()) << "d=" << d;
  }
  EXPECT_TRUE(fa2tc::forward_configs(96).empty());
}

// The launchers' choice (config = kFits) on other GPUs' limits: the README's configuration
// on an H200, one that fits on a 4090 or an A100 (the d = 128 backward falls back to the
// one-buffer configuration at 99 KiB). A T4 has no bf16 mma.sync: the chapter refuses it.
TEST(CpuFa2Tc, EachGpuGetsTheFirstConfigurationThatFits) {
  for (int d : fa2tc::kSupportedD) {
    EXPECT_EQ(fa2tc::forward_fit(d, ladder::limits_of("").smem_per_block_optin), 0) << "d=" << d;
    EXPECT_EQ(fa2tc::backward_fit(d, ladder::limits_of("").smem_per_block_optin), 0) << "d=" << d;
    for (const std::string cap : {"sm80", "sm86", "sm89", "sm120"}) {
      const std::size_t limit = ladder::limits_of(cap).smem_per_block_optin;
      const int f = fa2tc::forward_fit(d, limit), b = fa2tc::backward_fit(d, limit);
      ASSERT_GE(f, 0) << cap << " d=" << d;
      ASSERT_GE(b, 0) << cap << " d=" << d;
      EXPECT_LE(fa2tc::forward_configs(d)[f].smem_bytes, limit) << cap;
      EXPECT_LE(fa2tc::backward_configs(d)[b].smem_bytes, limit) << cap;
      for (int i = 0; i < b; ++i) EXPECT_GT(fa2tc::backward_configs(d)[i].smem_bytes, limit) << cap << " d=" << d;
    }
  }
  EXPECT_EQ(fa2tc::backward_configs(128)[fa2tc::backward_fit(128, 99 * 1024)].name, "w4_c64_r64_kvsmem_q1");
  EXPECT_EQ(fa2tc::backward_fit(128, 16 * 1024), -1);
}

TEST(CpuFa2Tc, BackwardWorkspaceHoldsDAndTheDqAccumulator) {
  const AttentionShape s = attention_shape(2, 8, 2, 1001, 300, 64, true);
  const std::size_t D = (s.rows() + 3) / 4 * 4;  // the accumulator starts 16-byte aligned
  EXPECT_EQ(fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Deterministic), D);
  EXPECT_EQ(fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Atomic), D + s.elems());
}

TEST(CpuFa2Tc, RowsWithoutKeysMustBeMinusInfinity) {
  const double inf = INFINITY;
  EXPECT_TRUE(fa2tc::compare_lse({-INFINITY, 1.0f}, {-inf, 1.0}).within(fa2tc::kBf16AttentionL));
  EXPECT_FALSE(fa2tc::compare_lse({0.0f, 1.0f}, {-inf, 1.0}).within(fa2tc::kBf16AttentionL));
  EXPECT_FALSE(fa2tc::compare_lse({NAN, 1.0f}, {-inf, 1.0}).within(fa2tc::kBf16AttentionL));
  EXPECT_FALSE(fa2tc::compare_lse({-INFINITY, 1.1f}, {-inf, 1.0}).within(fa2tc::kBf16AttentionL));
}

TEST(CpuFa2Tc, BadInputIsRejectedBeforeAnyLaunch) {
  // Never dereferenced: every check throws before a launch, so this runs without a GPU.
  bf16* p = reinterpret_cast<bf16*>(std::uintptr_t{256});
  bf16* misaligned = reinterpret_cast<bf16*>(std::uintptr_t{258});
  float* f = reinterpret_cast<float*>(std::uintptr_t{512});
  auto fwd = [&](const AttentionShape& s, bf16* q = nullptr, bf16* k = nullptr, float* L = nullptr,
                 const fa2tc::ForwardOptions& opt = {}) {
    fa2tc::forward(s, q ? q : p, k ? k : p, p, p, L ? L : f, opt);
  };
  auto bwd = [&](const AttentionShape& s, bf16* q = nullptr, float* ws = nullptr,
                 const fa2tc::BackwardOptions& o = {}) {
    fa2tc::backward(s, q ? q : p, p, p, p, f, p, p, p, p, ws ? ws : f, o);
  };
  const AttentionShape ok = attention_shape(1, 4, 2, 64, 64, 64, false);
  try {
    fwd(attention_shape(1, 1, 1, 16, 16, 96, false));
    FAIL() << "d=96 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("64, 128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fwd(attention_shape(1, 1, 1, 0, 0, 64, false)), std::invalid_argument);      // N = 0
  EXPECT_THROW(fwd(attention_shape(0, 1, 1, 8, 8, 64, false)), std::invalid_argument);      // B = 0
  EXPECT_THROW(fwd(attention_shape(1, 6, 4, 8, 8, 64, false)), std::invalid_argument);      // H not a multiple of H_kv
  EXPECT_THROW(fwd(attention_shape(1, 65536, 1, 8, 8, 64, false)), std::invalid_argument);  // grid.y
  EXPECT_THROW(fwd(ok, reinterpret_cast<bf16*>(1)), std::invalid_argument);                 // misaligned Q
  EXPECT_THROW(fwd(ok, nullptr, misaligned), std::invalid_argument);                        // misaligned K
  EXPECT_THROW(fwd(ok, nullptr, nullptr, reinterpret_cast<float*>(2)), std::invalid_argument);  // misaligned L
  EXPECT_THROW(fa2tc::forward(ok, nullptr, p, p, p, f), std::invalid_argument);                 // null Q
  EXPECT_THROW(fa2tc::forward(ok, p, p, p, p, nullptr), std::invalid_argument);                 // null L
  fa2tc::ForwardOptions bad_config;
  bad_config.config = 99;
  EXPECT_THROW(fwd(ok, nullptr, nullptr, nullptr, bad_config), std::invalid_argument);
  fa2tc::ForwardOptions bad_stride;
  bad_stride.strides.kv_head = 8;  // less than one head
  EXPECT_THROW(fwd(ok, nullptr, nullptr, nullptr, bad_stride), std::invalid_argument);
  bad_stride.strides.kv_head = 64 * 64 + 4;  // not 16 bytes
  EXPECT_THROW(fwd(ok, nullptr, nullptr, nullptr, bad_stride), std::invalid_argument);

  EXPECT_THROW(bwd(attention_shape(1, 1, 1, 16, 16, 96, false)), std::invalid_argument);
  EXPECT_THROW(bwd(attention_shape(1, 6, 4, 8, 8, 64, false)), std::invalid_argument);
  EXPECT_THROW(bwd(ok, misaligned), std::invalid_argument);
  EXPECT_THROW(fa2tc::backward(ok, p, p, p, p, f, p, p, p, p, nullptr), std::invalid_argument);  // no workspace
  EXPECT_THROW(fa2tc::backward(ok, p, p, p, p, nullptr, p, p, p, p, f), std::invalid_argument);  // no L
  EXPECT_THROW(bwd(ok, nullptr, nullptr, fa2tc::BackwardOptions{fa2tc::DqPath::Atomic, 99}), std::invalid_argument);

  float* q32 = reinterpret_cast<float*>(std::uintptr_t{1024});
  EXPECT_THROW(fa2tc::forward_fp32(ok, q32, q32, q32, q32, q32, fa2tc::Normalisation::FA1), std::invalid_argument);
}

// ---- GPU: the kernels against the fp64 reference ------------------------------------------

// L = m / sqrt(d) + ln l is checked in absolute terms: an error e in the scores, or a relative
// error e in the row sum l, is an error of about e in L whatever L's size (at N = 1, L is the
// one logit, near 0, and a relative bound on it means nothing). Everything in L is fp32: the
// scores are exact bf16 products summed over d by the tensor cores (truncating: at most
// ~d 2^-24 sum_k |q_k k_k| / sqrt(d), ~1e-4 for unit-scale inputs at d = 128, typically
// ~1e-6), then exp2, an fp32 row sum and logf. A scale or log-base bug moves L by O(1); one
// key too many or too few moves it by ~1/N_kv (>= 2.4e-4 at the largest N here). Logits
// scaled by s scale the score errors, hence the bound, by s.
constexpr double kLMaxAbs = 1e-4;

// Every compiled forward configuration of head dimension d (0 = the default), the benchmark's
// ablations included: a figure is only worth publishing for a kernel that is right.
std::vector<int> all_forward_configs(int d) {
  std::vector<int> all(fa2tc::forward_configs(d).size() + fa2tc::forward_ablations(d).size());
  for (std::size_t c = 0; c < all.size(); ++c) all[c] = static_cast<int>(c);
  return all;
}
// Forward configuration `config` (an index of all_forward_configs: the configs, then the ablations).
fa2tc::TileConfig forward_config(int d, int config) {
  const std::vector<fa2tc::TileConfig> configs = fa2tc::forward_configs(d);
  return std::size_t(config) < configs.size() ? configs[config]
                                              : fa2tc::forward_ablations(d).at(config - configs.size());
}
// Whether it fits this GPU's shared memory: one that does not is refused before any launch, and the
// tests leave it out.
bool forward_fits(int d, int config) {
  return forward_config(d, config).smem_bytes <= ladder::device().smem_per_block_optin;
}
std::string config_name(int d, int config) { return forward_config(d, config).name; }

// Forward (both normalisations, each of the given configs) on every element: O within the
// bf16 bound, L within kLMaxAbs, rows without a key at O = 0 and L = -inf.
void expect_forward_correct(const fa2tc::Problem& p, const std::vector<int>& configs, float q_scale_note = 1.0f) {
  const AttentionShape& s = p.s;
  const auto ref = ladder::attention_forward_reference(s, p.Q.data(), p.K.data(), p.V.data());
  fa2tc::OnDevice dev(p);
  for (int config : configs)
    for (fa2tc::Normalisation norm : fa2tc::kAllNormalisations) {
      if (!forward_fits(s.d, config)) continue;
      fa2tc::ForwardOptions opt;
      opt.norm = norm;
      opt.config = config;
      dev.forward(opt);
      const std::string what = std::string("forward ") + fa2tc::name(norm) + ", config " + config_name(s.d, config) +
                               ", " + s.str() + (q_scale_note != 1.0f ? ", Q x " + std::to_string(q_scale_note) : "");
      EXPECT_TRUE(ladder::matches(dev.O_host(), ref.O, ladder::kBf16Attention)) << "O, " << what;
      const ladder::Comparison L = fa2tc::compare_lse(dev.L_host(), ref.L);
      EXPECT_TRUE(!L.size_mismatch && L.nonfinite == 0 && L.max_abs <= kLMaxAbs * q_scale_note)
          << "L, " << what << ": " << L.str() << " (bound: max_abs " << kLMaxAbs * q_scale_note << ")";
    }
}

// Backward on both dQ paths against the reference (O and L from this chapter's forward, as
// in training), D against rowsum(dO * O), the paths against each other, and the
// deterministic path against itself.
// q_scale: the logits' scale. The scores are fp32, and an absolute error e of S scale moves P
// by a factor e^e: the forward's L bound (kLMaxAbs x the scale) is that e, so P, dS and the
// gradients gain up to that relative error beside bf16's roundings (Q x 100: +1e-2).
void expect_backward_correct(const fa2tc::Problem& p, int config = fa2tc::kFits, float q_scale = 1.0f) {
  const ladder::Bound grad{ladder::kBf16AttentionGrad.rel_l2 + kLMaxAbs * q_scale,
                           "bf16 gradients, plus the fp32 scores' error at this logit scale"};
  const AttentionShape& s = p.s;
  const auto ref = ladder::attention_backward_reference(s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
  fa2tc::OnDevice dev(p);
  dev.forward();
  const auto D_ref = fa2tc::expected_D(s, p.dO, dev.O_host());
  std::vector<float> dQ[2], dK[2], dV[2];
  for (fa2tc::DqPath path : fa2tc::kAllDqPaths) {
    dev.backward(fa2tc::BackwardOptions{path, config});
    const int k = path == fa2tc::DqPath::Atomic ? 0 : 1;
    dQ[k] = dev.dQ_host(), dK[k] = dev.dK_host(), dV[k] = dev.dV_host();
    const int shown = config == fa2tc::kFits ? fa2tc::backward_fit(s.d, ladder::device().smem_per_block_optin) : config;
    const std::string what = std::string("backward ") + fa2tc::name(path) + ", config " +
                             fa2tc::backward_configs(s.d).at(shown).name + ", " + s.str();
    EXPECT_TRUE(ladder::matches(dQ[k], ref.dQ, grad)) << "dQ, " << what;
    EXPECT_TRUE(ladder::matches(dK[k], ref.dK, grad)) << "dK, " << what;
    EXPECT_TRUE(ladder::matches(dV[k], ref.dV, grad)) << "dV, " << what;
    EXPECT_TRUE(ladder::matches(dev.D_host(), D_ref, ladder::kFp32)) << "D = rowsum(dO * O), " << what;
  }
  // dK and dV come from the same code on both paths; dQ differs in the order of its sums.
  EXPECT_TRUE(fa2tc::bit_identical(dK[0], dK[1])) << "dK differs between the dQ paths, " << s.str();
  EXPECT_TRUE(fa2tc::bit_identical(dV[0], dV[1])) << "dV differs between the dQ paths, " << s.str();
  EXPECT_TRUE(ladder::matches(dQ[0], fa2tc::widen(dQ[1]), ladder::kBf16AttentionGrad)) << "atomic vs deterministic dQ";
  dev.backward(fa2tc::BackwardOptions{fa2tc::DqPath::Deterministic, config});
  EXPECT_TRUE(fa2tc::bit_identical(dev.dQ_host(), dQ[1])) << "deterministic dQ differs between runs, " << s.str();
  EXPECT_TRUE(fa2tc::bit_identical(dev.dK_host(), dK[1])) << "deterministic dK differs between runs, " << s.str();
  EXPECT_TRUE(fa2tc::bit_identical(dev.dV_host(), dV[1])) << "deterministic dV differs between runs, " << s.str();
}

// The edge-shape matrix (common/attention_test_cases.h); the forward runs every tile
// configuration on each (they are the benchmark's sweep, and any may become the default).

class GpuFa2TcForward : public ::testing::TestWithParam<ladder::edge::Case> {};
TEST_P(GpuFa2TcForward, MatchesTheReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  if (const std::string why = ladder::edge::skip_reason(GetParam()); !why.empty()) GTEST_SKIP() << why;
  const AttentionShape s = ladder::edge::case_shape(GetParam());
  expect_forward_correct(fa2tc::make_problem(s, seed), all_forward_configs(s.d));
}
INSTANTIATE_TEST_SUITE_P(Shapes, GpuFa2TcForward, ladder::edge::kCases, ladder::edge::case_name);

class GpuFa2TcBackward : public ::testing::TestWithParam<ladder::edge::Case> {};
TEST_P(GpuFa2TcBackward, MatchesTheReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  if (const std::string why = ladder::edge::skip_reason(GetParam()); !why.empty()) GTEST_SKIP() << why;
  expect_backward_correct(fa2tc::make_problem(ladder::edge::case_shape(GetParam()), seed));
}
INSTANTIATE_TEST_SUITE_P(Shapes, GpuFa2TcBackward, ladder::edge::kCases, ladder::edge::case_name);

// N_q != N_kv, causal aligned at the bottom right. 300 queries on 100 keys, causal: the
// first 200 queries see no key (O = 0, L = -inf, dQ = 0).
TEST(GpuFa2Tc, QueriesAndKeysOfDifferentLengths) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int a = ladder::small_mode() ? 17 : 100, b = ladder::small_mode() ? 50 : 300;
  for (int d : fa2tc::kSupportedD)
    for (bool causal : {false, true})
      for (const auto& [N, N_kv] : {std::pair{a, b}, std::pair{b, a}}) {
        const fa2tc::Problem p = fa2tc::make_problem(attention_shape(2, 4, 2, N, N_kv, d, causal), seed);
        expect_forward_correct(p, all_forward_configs(d));
        expect_backward_correct(p);
      }
}

// Every compiled tile configuration (the benchmark's tuning sweep), forward with both
// normalisations and backward on both paths: dense with GQA and a ragged tail, and causal
// with N_q != N_kv.
TEST(GpuFa2Tc, EveryTileConfigMatchesTheReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 77 : 1000;
  for (int d : fa2tc::kSupportedD)
    for (const AttentionShape& s :
         {attention_shape(1, 8, 2, N, N, d, false), attention_shape(1, 4, 2, N, N + 37, d, true)}) {
      const fa2tc::Problem p = fa2tc::make_problem(s, seed);
      expect_forward_correct(p, all_forward_configs(d));
      for (std::size_t c = 1; c < fa2tc::backward_configs(d).size(); ++c)
        if (fa2tc::backward_configs(d)[c].smem_bytes <= ladder::device().smem_per_block_optin)  // else refused here
          expect_backward_correct(p, int(c));
    }
}

// Logits 100x larger: the running max and the exp2 base keep every exponential <= 1.
TEST(GpuFa2Tc, LargeLogitsStayFiniteAndAccurate) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  for (int d : fa2tc::kSupportedD)
    for (bool causal : {false, true}) {
      const fa2tc::Problem p = fa2tc::make_problem(
          attention_shape(1, 4, 2, ladder::small_mode() ? 33 : 300, ladder::small_mode() ? 33 : 300, d, causal), seed,
          100.0f);
      expect_forward_correct(p, all_forward_configs(d), 100.0f);
      expect_backward_correct(p, fa2tc::kFits, 100.0f);
    }
}

// The worst case of skiprescale (fa2_tc_problem.h): logits that rise along the key tiles in
// the order the forward visits them, so (nearly) every row's max moves at every step and no
// rescale is skipped. Every config, dense and causal, GQA, a ragged tail.
TEST(GpuFa2Tc, RisingLogitsRescaleAtEveryStep) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 77 : 1000;
  for (int d : fa2tc::kSupportedD)
    for (bool causal : {false, true}) {
      fa2tc::Problem p = fa2tc::make_problem(attention_shape(1, 8, 2, N, N, d, causal), seed);
      fa2tc::make_logits_rise(p);
      expect_forward_correct(p, all_forward_configs(d));
    }
}

// Skipping O_i *= alpha when every alpha of the warp is 1 changes nothing: each config with
// skiprescale gives bit for bit what its twin without it gives (where the list has one; the
// default's must be there), on random logits (where most steps skip) and on rising ones
// (where none does).
TEST(GpuFa2Tc, SkippedRescalesAreExact) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 77 : 1000;
  for (int d : fa2tc::kSupportedD) {
    const std::vector<fa2tc::TileConfig> configs = fa2tc::forward_configs(d);
    for (bool rising : {false, true})
      for (bool causal : {false, true}) {
        fa2tc::Problem p = fa2tc::make_problem(attention_shape(1, 4, 2, N, N + 37, d, causal), seed);
        if (rising) fa2tc::make_logits_rise(p);
        fa2tc::OnDevice dev(p);
        for (std::size_t c = 0; c < configs.size(); ++c) {
          const std::string& name = configs[c].name;
          const std::size_t at = name.find("_skiprescale");
          if (at == std::string::npos) continue;
          const std::string twin = name.substr(0, at) + name.substr(at + std::string("_skiprescale").size());
          std::size_t u = 0;
          while (u < configs.size() && configs[u].name != twin) ++u;
          if (u == configs.size()) {  // only the default must have its twin in the list
            EXPECT_NE(c, 0u) << "the default " << name << " has no twin without skiprescale (" << twin << ")";
            continue;
          }
          // (the FA1 normalisation rescales unconditionally: the FA2 one only)
          dev.forward({fa2tc::Normalisation::FA2, int(c), {}});
          const std::vector<float> O = dev.O_host(), L = dev.L_host();
          dev.forward({fa2tc::Normalisation::FA2, int(u), {}});
          const std::string what = name + " vs " + twin + ", " + p.s.str() + (rising ? ", rising logits" : "");
          EXPECT_TRUE(fa2tc::bit_identical(O, dev.O_host())) << "O differs: " << what;
          EXPECT_TRUE(fa2tc::bit_identical(L, dev.L_host())) << "L differs: " << what;
        }
      }
  }
}

// Chapters 11 and 13 call forward() on views: K/V split along N_kv inside a larger tensor,
// O and L written into slots of larger buffers. The result must be bit-identical to the
// same problem packed.
TEST(GpuFa2Tc, StridedViewsGiveThePackedResult) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int N = 64, N_kv = 200, N_total = 2 * N_kv + 8, d = 128;
  const AttentionShape s = attention_shape(2, 4, 2, N, N_kv, d, false);
  const fa2tc::Problem p = fa2tc::make_problem(s, seed);
  fa2tc::OnDevice packed(p);
  packed.forward();
  // K, V as the second N_kv rows of [B, H_kv, N_total, d]; O, L in [B, H, 2 N, d] / [B, H, 2 N].
  std::vector<float> K_big(s.kv_heads() * N_total * d, 0.0f), V_big(K_big.size(), 0.0f);
  for (std::size_t h = 0; h < s.kv_heads(); ++h)
    for (std::size_t e = 0; e < std::size_t(N_kv) * d; ++e) {
      K_big[(h * N_total + N_kv) * d + e] = p.K[h * N_kv * d + e];
      V_big[(h * N_total + N_kv) * d + e] = p.V[h * N_kv * d + e];
    }
  ladder::DeviceBuffer<bf16> Q(ladder::to_bf16(p.Q)), K(ladder::to_bf16(K_big)), V(ladder::to_bf16(V_big));
  ladder::DeviceBuffer<bf16> O(2 * s.elems());
  ladder::DeviceBuffer<float> L(2 * s.rows());
  O.poison(), L.poison();
  fa2tc::ForwardOptions opt;
  opt.strides = {std::int64_t(N) * d, std::int64_t(N_total) * d, 2 * std::int64_t(N) * d, 2 * std::int64_t(N)};
  fa2tc::forward(s, Q.data(), K.data() + std::size_t(N_kv) * d, V.data() + std::size_t(N_kv) * d, O.data(), L.data(),
                 opt);
  const std::vector<float> O_all = ladder::from_bf16(O.download()), L_all = L.download();
  const std::vector<float> O_ref = packed.O_host(), L_ref = packed.L_host();
  std::vector<float> O_view, L_view;
  for (std::size_t h = 0; h < s.heads(); ++h) {
    O_view.insert(O_view.end(), O_all.begin() + h * 2 * N * d, O_all.begin() + (h * 2 + 1) * N * d);
    L_view.insert(L_view.end(), L_all.begin() + h * 2 * N, L_all.begin() + (h * 2 + 1) * N);
  }
  EXPECT_TRUE(fa2tc::bit_identical(O_view, O_ref)) << "O through strides differs from O packed";
  EXPECT_TRUE(fa2tc::bit_identical(L_view, L_ref)) << "L through strides differs from L packed";
}

// The fp32 pair the lesson is timed beside: chapter 06's kernel with each normalisation.
TEST(GpuFa2Tc, Fp32NormalisationsMatchTheReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  for (int d : fa2tc::kSupportedD)
    for (bool causal : {false, true}) {
      const AttentionShape s{1, 2, ladder::small_mode() ? 77 : 1000, d, causal};
      const fa2tc::Problem p = fa2tc::make_problem(s, seed);
      const auto ref = ladder::attention_forward_reference(s, p.Q.data(), p.K.data(), p.V.data());
      ladder::DeviceBuffer<float> Q(p.Q), K(p.K), V(p.V), O(s.elems()), L(s.rows());
      for (fa2tc::Normalisation norm : fa2tc::kAllNormalisations) {
        O.poison(), L.poison();
        try {
          fa2tc::forward_fp32(s, Q.data(), K.data(), V.data(), O.data(), L.data(), norm);
        } catch (const std::invalid_argument& e) {  // the fp32 side-by-side's tiles need more than this GPU has
          if (std::string(e.what()).find("shared memory per block") == std::string::npos) throw;
          GTEST_SKIP() << e.what();
        }
        EXPECT_TRUE(ladder::matches(O.download(), ref.O, ladder::kFp32))
            << "fp32 O, " << fa2tc::name(norm) << ", " << s.str();
        EXPECT_TRUE(ladder::matches(L.download(), ref.L, ladder::kFp32))
            << "fp32 L, " << fa2tc::name(norm) << ", " << s.str();
      }
    }
}

// cuDNN's attention, the anchor chapters 10 and 12 are timed against, must solve the same
// problem as the kernels: layouts, scale, GQA, the causal mask aligned at the bottom right and
// L in natural log, checked against the same reference and bounds. N and N_kv differ and are
// no multiple of 64 (cuDNN takes that with the bottom-right mask from version 9.6 on).
TEST(GpuFa2Tc, CudnnAnchorMatchesTheReference) {
  LADDER_REQUIRE_GPU();
  if (const std::string why = ladder::CudnnAttention::unavailable_reason(); !why.empty())
    GTEST_SKIP() << "cuDNN anchor: " << why;
  if (ladder::small_mode()) GTEST_SKIP() << "cuDNN's kernels are not this chapter's: not run under compute-sanitizer";
  LADDER_TEST_SEED(seed);
  using Pass = ladder::CudnnAttention::Pass;
  for (int d : fa2tc::kSupportedD)
    for (bool causal : {false, true}) {
      const AttentionShape s = attention_shape(2, 4, 2, 100, 300, d, causal);
      const fa2tc::Problem p = fa2tc::make_problem(s, seed);
      const auto fwd = ladder::attention_forward_reference(s, p.Q.data(), p.K.data(), p.V.data());
      const auto grads = ladder::attention_backward_reference(s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
      ladder::CudnnAttention cudnn(s);
      for (Pass pass : {Pass::Forward, Pass::Backward}) {
        const std::string why = cudnn.unsupported_reason(pass);
        ASSERT_TRUE(why.empty()) << why;
      }
      fa2tc::OnDevice dev(p);
      dev.O.poison(), dev.L.poison();
      cudnn.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data());
      EXPECT_TRUE(ladder::matches(dev.O_host(), fwd.O, ladder::kBf16Attention)) << "cuDNN O, " << s.str();
      const ladder::Comparison L = fa2tc::compare_lse(dev.L_host(), fwd.L);
      EXPECT_TRUE(L.within(fa2tc::kBf16AttentionL)) << "cuDNN L, " << s.str() << ": " << L.str();
      dev.dQ.poison(), dev.dK.poison(), dev.dV.poison();
      cudnn.backward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data(), dev.dO.data(), dev.dQ.data(),
                     dev.dK.data(), dev.dV.data());
      EXPECT_TRUE(ladder::matches(dev.dQ_host(), grads.dQ, ladder::kBf16AttentionGrad)) << "cuDNN dQ, " << s.str();
      EXPECT_TRUE(ladder::matches(dev.dK_host(), grads.dK, ladder::kBf16AttentionGrad)) << "cuDNN dK, " << s.str();
      EXPECT_TRUE(ladder::matches(dev.dV_host(), grads.dV, ladder::kBf16AttentionGrad)) << "cuDNN dV, " << s.str();
    }
}

}  // namespace
