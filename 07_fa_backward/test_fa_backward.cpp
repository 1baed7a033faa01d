#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "06_fa2_forward/fa_forward.h"
#include "device_buffer.h"
#include "fa_backward.h"
#include "gtest_helpers.h"
#include "on_device.h"
#include "p_from_l.h"
#include "reference_attention.h"

namespace {

using ladder::AttentionShape;

struct Problem {
  AttentionShape s;
  std::vector<float> Q, K, V, dO;
};
Problem random_problem(const AttentionShape& s, std::uint64_t seed) {
  return {s, ladder::random_uniform(s.elems(), seed), ladder::random_uniform(s.elems(), seed + 1),
          ladder::random_uniform(s.elems(), seed + 2), ladder::random_uniform(s.elems(), seed + 3)};
}
std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// ---- CPU: the reference, the identities the kernels rely on, bad input --------

// Central differences of the scalar loss sum(O * dO) against the analytic fp64
// backward: proves the reference the GPU tests trust. In fp64 with h = 1e-5 the
// truncation (~h^2) and rounding (~1e-16 / h) errors are both near 1e-10, so a
// relative error of 1e-7 has room; a wrong formula is off by O(1).
class CpuFaBackwardReference : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(CpuFaBackwardReference, MatchesFiniteDifferences) {
  LADDER_TEST_SEED(seed);
  const AttentionShape s = GetParam();
  const Problem p = random_problem(s, seed);
  std::vector<double> Q = widen(p.Q), K = widen(p.K), V = widen(p.V), dO = widen(p.dO);
  const ladder::AttentionGrads g = ladder::attention_backward_reference(s, Q.data(), K.data(), V.data(), dO.data());

  auto loss = [&] {
    const auto O = ladder::attention_forward_reference(s, Q.data(), K.data(), V.data()).O;
    double sum = 0.0;
    for (std::size_t e = 0; e < O.size(); ++e) sum += O[e] * dO[e];
    return sum;
  };
  const double h = 1e-5;
  auto check = [&](std::vector<double>& X, const std::vector<double>& dX, const char* name) {
    double err2 = 0.0, ref2 = 0.0;
    for (std::size_t e = 0; e < X.size(); ++e) {
      const double x = X[e];
      X[e] = x + h;
      const double up = loss();
      X[e] = x - h;
      const double down = loss();
      X[e] = x;
      const double fd = (up - down) / (2 * h);
      err2 += (dX[e] - fd) * (dX[e] - fd);
      ref2 += fd * fd;
    }
    // As ladder::compare: absolute when the gradient is 0 (N = 1: P = 1, so dQ = dK = 0).
    EXPECT_LT(ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2), 1e-7) << name << " of " << s.str();
  };
  check(Q, g.dQ, "dQ");
  check(K, g.dK, "dK");
  check(V, g.dV, "dV");
}

INSTANTIATE_TEST_SUITE_P(TinyShapes, CpuFaBackwardReference,
                         ::testing::Values(AttentionShape{1, 2, 5, 4, false}, AttentionShape{2, 1, 6, 8, true},
                                           AttentionShape{1, 1, 1, 4, false}, AttentionShape{1, 1, 7, 4, true}),
                         [](const auto& info) {
                           const AttentionShape& s = info.param;
                           return "N" + std::to_string(s.N) + "_d" + std::to_string(s.d) + (s.causal ? "_causal" : "");
                         });

// The chapter's idea: exp(S - L) with the saved L is softmax(S), no max or sum needed.
TEST(CpuFaBackward, PFromLIsTheSoftmax) {
  LADDER_TEST_SEED(seed);
  for (bool causal : {false, true}) {
    const AttentionShape s{1, 2, 100, 64, causal};
    const Problem p = random_problem(s, seed);
    const auto fwd = ladder::attention_forward_reference(s, p.Q.data(), p.K.data(), p.V.data());
    for (int head = 0; head < 2; ++head) {
      const fa2::PFromL r = fa2::p_from_l(s, p.Q.data(), p.K.data(), fwd.L.data(), head);
      EXPECT_LT(r.max_abs_diff, 1e-12) << "head " << head << " " << s.str();  // fp64 rounding only
      for (int i = 0; i < s.N; ++i) {
        double row = 0.0;
        for (int j = 0; j < s.N; ++j) row += r.from_L[std::size_t(i) * s.N + j];
        ASSERT_NEAR(row, 1.0, 1e-12) << "row " << i;
      }
    }
  }
}

// Why the kernel needs no row reduction over the tile: sum_j P_ij dP_ij, which
// would need the whole row of P, equals D_i = sum_k dO_ik O_ik, a d-term dot product.
TEST(CpuFaBackward, DIsTheRowSumOfPTimesdP) {
  LADDER_TEST_SEED(seed);
  const AttentionShape s{1, 1, 50, 32, true};
  const Problem p = random_problem(s, seed);
  const auto fwd = ladder::attention_forward_reference(s, p.Q.data(), p.K.data(), p.V.data());
  const fa2::PFromL P = fa2::p_from_l(s, p.Q.data(), p.K.data(), fwd.L.data(), 0);
  for (int i = 0; i < s.N; ++i) {
    double P_dP = 0.0, D = 0.0;
    for (int j = 0; j < s.N; ++j) {
      double dP = 0.0;  // dP_ij = dO_i . V_j
      for (int k = 0; k < s.d; ++k) dP += double(p.dO[i * s.d + k]) * p.V[j * s.d + k];
      P_dP += P.softmax[std::size_t(i) * s.N + j] * dP;
    }
    for (int k = 0; k < s.d; ++k) D += double(p.dO[i * s.d + k]) * fwd.O[i * s.d + k];
    ASSERT_NEAR(P_dP, D, 1e-12) << "row " << i;
  }
}

TEST(CpuFaBackward, TilesCoverTheSequence) {
  for (int d : {32, 64, 128})
    for (int N : {1, 17, 64, 65, 4093}) {
      const fa2::BackwardTiles t = fa2::backward_tiles({1, 1, N, d, false});
      EXPECT_GE(t.T_r * t.B_r, N);
      EXPECT_LT((t.T_r - 1) * t.B_r, N);
      EXPECT_GE(t.T_c * t.B_c, N);
      EXPECT_LT((t.T_c - 1) * t.B_c, N);
    }
}

TEST(CpuFaBackward, BadInputIsRejectedBeforeAnyLaunch) {
  // Never dereferenced: the checks throw first, so this runs without a GPU.
  float* aligned = reinterpret_cast<float*>(std::uintptr_t{256});
  float* misaligned = reinterpret_cast<float*>(std::uintptr_t{260});
  auto call = [](const AttentionShape& s, float* p) { fa2::backward(s, p, p, p, p, p, p, p, p, p, p); };
  try {
    call({1, 1, 16, 96, false}, aligned);
    FAIL() << "d=96 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("32, 64, 128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(call({1, 1, 0, 64, false}, aligned), std::invalid_argument);
  EXPECT_THROW(call({0, 1, 8, 64, false}, aligned), std::invalid_argument);
  EXPECT_THROW(call({1, -1, 8, 64, false}, aligned), std::invalid_argument);
  EXPECT_THROW(call({1, 1, 8, 64, false}, nullptr), std::invalid_argument);
  EXPECT_THROW(call({1, 1, 8, 64, false}, misaligned), std::invalid_argument);
  EXPECT_THROW(call({1, 1, 65535 * 64 + 1, 64, false}, aligned), std::invalid_argument);
  EXPECT_THROW(fa2::backward_tiles({1, 1, 8, 256, false}), std::invalid_argument);
}

// ---- GPU: the kernels against the fp64 reference -----------------------------

using fa2::OnDevice;
using Grads = OnDevice::Grads;

// A problem on the device; O and L from the chapter-06 forward, or the ones given.
OnDevice on_device(const Problem& p, const std::vector<float>* O_in = nullptr,
                   const std::vector<float>* L_in = nullptr) {
  OnDevice dev(p.s, {p.Q, p.K, p.V, p.dO});
  if (O_in && L_in) dev.O.upload(*O_in), dev.L.upload(*L_in);
  return dev;
}
Grads backward(OnDevice& dev, fa2::DqPath path) {
  dev.backward(path);
  return dev.grads();
}

// D_i = rowsum(dO_i * O_i) in fp64, from the O the backward was given.
std::vector<double> expected_D(const AttentionShape& s, const std::vector<float>& dO, const std::vector<float>& O) {
  std::vector<double> D(s.rows(), 0.0);
  for (std::size_t r = 0; r < s.rows(); ++r)
    for (int k = 0; k < s.d; ++k) D[r] += double(dO[r * s.d + k]) * O[r * s.d + k];
  return D;
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Both paths against the reference (dQ, dK, dV and D, every element), against each
// other, and the deterministic one against itself.
void expect_correct_gradients(OnDevice& dev, const Problem& p) {
  const AttentionShape& s = p.s;
  const auto ref = ladder::attention_backward_reference(s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
  const auto D_ref = expected_D(s, p.dO, dev.O.download());
  Grads out[2];
  for (fa2::DqPath path : fa2::kAllDqPaths) {
    const Grads g = backward(dev, path);
    const std::string what = std::string(fa2::name(path)) + ", " + s.str();
    EXPECT_TRUE(ladder::matches(g.dQ, ref.dQ, ladder::kFp32Grad)) << "dQ " << what;
    EXPECT_TRUE(ladder::matches(g.dK, ref.dK, ladder::kFp32Grad)) << "dK " << what;
    EXPECT_TRUE(ladder::matches(g.dV, ref.dV, ladder::kFp32Grad)) << "dV " << what;
    EXPECT_TRUE(ladder::matches(g.D, D_ref, ladder::kFp32)) << "D " << what;
    out[path == fa2::DqPath::Atomic ? 0 : 1] = g;
  }
  // The paths differ only in the order dQ's terms are added.
  EXPECT_TRUE(ladder::matches(out[0].dQ, widen(out[1].dQ), ladder::kFp32Grad)) << "atomic vs deterministic dQ";
  EXPECT_TRUE(ladder::matches(out[0].dK, widen(out[1].dK), ladder::kFp32Grad)) << "atomic vs deterministic dK";
  EXPECT_TRUE(ladder::matches(out[0].dV, widen(out[1].dV), ladder::kFp32Grad)) << "atomic vs deterministic dV";
  const Grads again = backward(dev, fa2::DqPath::Deterministic);
  EXPECT_TRUE(bit_identical(again.dQ, out[1].dQ)) << "deterministic dQ differs between two runs, " << s.str();
  EXPECT_TRUE(bit_identical(again.dK, out[1].dK)) << "deterministic dK differs between two runs, " << s.str();
  EXPECT_TRUE(bit_identical(again.dV, out[1].dV)) << "deterministic dV differs between two runs, " << s.str();
}

class GpuFaBackward : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(GpuFaBackward, MatchesTheReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const auto [N, d, causal] = GetParam();
  if (ladder::small_mode() && N > 100) GTEST_SKIP() << "small mode (compute-sanitizer): N <= 100 only";
  // Several batches and heads where the fp64 reference is cheap; one head at N = 4093;
  // two heads under compute-sanitizer, whose racecheck is slow.
  const AttentionShape s = ladder::small_mode() ? AttentionShape{1, 2, N, d, causal}
                           : N <= 1000          ? AttentionShape{2, 3, N, d, causal}
                                                : AttentionShape{1, 1, N, d, causal};
  const Problem p = random_problem(s, seed);
  OnDevice dev = on_device(p);
  expect_correct_gradients(dev, p);
}

std::vector<std::tuple<int, int, bool>> gpu_shapes() {
  std::vector<std::tuple<int, int, bool>> v;
  for (int N : {1, 17, 100, 1000, 4093})
    for (int d : {32, 64, 128})
      for (bool causal : {false, true})
        if (N < 4093 || d != 32) v.emplace_back(N, d, causal);  // N = 4093: d = 64, 128 (CPU reference time)
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuFaBackward, ::testing::ValuesIn(gpu_shapes()), [](const auto& info) {
  return "N" + std::to_string(std::get<0>(info.param)) + "_d" + std::to_string(std::get<1>(info.param)) +
         (std::get<2>(info.param) ? "_causal" : "");
});

// O and L from the fp64 reference instead of chapter 06: a failure here is this chapter's.
TEST(GpuFaBackward, ReferenceForwardIsolatesTheBackward) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      const AttentionShape s =
          ladder::small_mode() ? AttentionShape{1, 2, 33, d, causal} : AttentionShape{2, 3, 300, d, causal};
      const Problem p = random_problem(s, seed);
      const auto fwd = ladder::attention_forward_reference(s, p.Q.data(), p.K.data(), p.V.data());
      const std::vector<float> O(fwd.O.begin(), fwd.O.end()), L(fwd.L.begin(), fwd.L.end());
      OnDevice dev = on_device(p, &O, &L);
      expect_correct_gradients(dev, p);
    }
}

// The demo with the kernel's own L: exp(S - L) from chapter 06's fp32 L is softmax(S)
// to fp32 accuracy, for every head.
TEST(GpuFaBackward, PRecoveredFromTheForwardsLIsTheSoftmax) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  for (bool causal : {false, true}) {
    const AttentionShape s{1, 2, ladder::small_mode() ? 40 : 300, 64, causal};
    const Problem p = random_problem(s, seed);
    OnDevice dev = on_device(p);
    const std::vector<float> L = dev.L.download();
    for (int head = 0; head < 2; ++head) {
      const fa2::PFromL r = fa2::p_from_l(s, p.Q.data(), p.K.data(), L.data(), head);
      EXPECT_TRUE(ladder::matches(std::vector<float>(r.from_L.begin(), r.from_L.end()), r.softmax, ladder::kFp32))
          << "head " << head << ", " << s.str() << ", max |exp(S - L) - softmax(S)| = " << r.max_abs_diff;
    }
  }
}

}  // namespace
