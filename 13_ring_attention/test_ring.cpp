#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "attention_inputs.h"
#include "bf16.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "fa2_tc_problem.h"
#include "gtest_helpers.h"
#include "reference_attention.h"
#include "ring.h"
#include "ring_host.h"
#include "ring_kernels.h"
#include "ring_schedule.h"
#include "ring_sim.h"
#include "studies.h"

namespace {

using ladder::AttentionShape;
using ring::Sharding;

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / den);
}

// ---- CPU: the schedule -------------------------------------------------------------------

TEST(CpuRingSchedule, EveryPairIsComputedExactlyOnce) {
  for (int P = 1; P <= 6; ++P)
    for (Sharding sh : ring::kAllShardings)
      for (bool causal : {false, true}) {
        const ring::Layout l = ring::make_layout(2 * P * 3, P, sh);
        EXPECT_EQ(ring::check_schedule(l, causal), "") << ring::name(sh) << " P=" << P << " causal=" << causal;
      }
}

TEST(CpuRingSchedule, EachRankHoldsEveryShardOnce) {
  for (int P = 1; P <= 6; ++P)
    for (int r = 0; r < P; ++r) {
      std::vector<int> seen(P, 0);
      for (int t = 0; t < P; ++t) ++seen[ring::source(P, r, t)];
      for (int s = 0; s < P; ++s) EXPECT_EQ(seen[s], 1) << "P=" << P << " rank " << r;
      EXPECT_EQ(ring::source(P, r, 0), r);                // its own shard first
      EXPECT_EQ(ring::source(P, r, 1), (r + P - 1) % P);  // then its predecessor's
    }
}

TEST(CpuRingSchedule, ZigzagBalancesCausalWorkPlainDoesNot) {
  for (int P = 2; P <= 8; ++P) {
    const ring::Layout z = ring::make_layout(2 * P, P, Sharding::Zigzag);
    for (int t = 0; t < P; ++t)
      for (int r = 0; r < P; ++r) EXPECT_DOUBLE_EQ(ring::step_work(z, true, r, t), 2.0) << "P=" << P;
    EXPECT_DOUBLE_EQ(ring::imbalance(z, true), 1.0);
    // Plain: step t's rank r computes a full tile if it holds an earlier chunk (r >= t),
    // nothing otherwise; every step but the first costs a full tile, so the critical
    // path is P - 1/2 tiles against an ideal of (P^2 / 2) / P = P / 2.
    const ring::Layout p = ring::make_layout(P, P, Sharding::Plain);
    EXPECT_NEAR(ring::imbalance(p, true), (P - 0.5) / (P / 2.0), 1e-12) << "P=" << P;
  }
}

TEST(CpuRingSchedule, ZigzagTilesAreTheChunkMasks) {
  const ring::Layout l = ring::make_layout(8, 2, Sharding::Zigzag);  // chunks 0..3: r0 {0,3}, r1 {1,2}
  const auto t0 = ring::tiles(l, true, 0, 0);                        // r0 with its own {0,3}
  ASSERT_EQ(t0.size(), 3u);
  EXPECT_EQ(std::make_tuple(t0[0].q_chunk, t0[0].k_chunk, t0[0].mask), std::make_tuple(0, 0, ring::TileMask::Diagonal));
  EXPECT_EQ(std::make_tuple(t0[1].q_chunk, t0[1].k_chunk, t0[1].mask), std::make_tuple(3, 0, ring::TileMask::Full));
  EXPECT_EQ(std::make_tuple(t0[2].q_chunk, t0[2].k_chunk, t0[2].mask), std::make_tuple(3, 3, ring::TileMask::Diagonal));
  const auto t1 = ring::tiles(l, true, 0, 1);  // r0 with r1's {1,2}: only chunk 3 sees them
  ASSERT_EQ(t1.size(), 2u);
  for (const ring::Tile& t : t1) EXPECT_EQ(t.q_chunk, 3);
}

TEST(CpuRingSchedule, RefusesNThatDoesNotSplitEvenly) {
  EXPECT_NO_THROW(ring::make_layout(1000, 2, Sharding::Zigzag));
  try {
    ring::make_layout(1001, 2, Sharding::Zigzag);
    FAIL() << "N = 1001 over 2 zigzag ranks accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ring::make_layout(1001, 2, Sharding::Plain), std::invalid_argument);
  EXPECT_THROW(ring::make_layout(8, 0, Sharding::Plain), std::invalid_argument);
  EXPECT_NO_THROW(ring::make_layout(1001, 1, Sharding::Plain));
}

TEST(CpuRingSchedule, TileShapeNamesBothLengths) {
  // The whole sequence with N_kv spelled out, as ladder::attention_shape and validate() make it:
  // a tile must not inherit N_kv = N while its buffers hold C keys.
  const AttentionShape whole = ladder::attention_shape(2, 4, 4, 24, 24, 64, true);
  for (Sharding sh : ring::kAllShardings) {
    const ring::Layout l = ring::make_layout(whole.N, 3, sh);
    for (ring::TileMask m : {ring::TileMask::Full, ring::TileMask::Diagonal}) {
      const AttentionShape t = ring::tile_shape(whole, l, m);
      EXPECT_EQ(t.N, l.chunk_len()) << ring::name(sh);
      EXPECT_EQ(t.nkv(), l.chunk_len()) << ring::name(sh);
      EXPECT_EQ(t.hkv(), whole.H);
      EXPECT_EQ(t.causal, m == ring::TileMask::Diagonal);
      EXPECT_EQ(t.B, whole.B);
      EXPECT_EQ(t.d, whole.d);
    }
  }
}

TEST(CpuRingSchedule, DescribeShowsWhoHoldsWhat) {
  const std::string s = ring::describe(ring::make_layout(8, 2, Sharding::Zigzag), true);
  EXPECT_NE(s.find("step 1:"), std::string::npos) << s;
  EXPECT_NE(s.find("r0 holds K/V of r1{1,2}"), std::string::npos) << s;
}

// ---- CPU: the fp64 simulator -------------------------------------------------------------

TEST(CpuRingSim, MergeIsTheLogSumExpOfTheTwoSides) {
  double O[2] = {1.0, 2.0}, L = std::log(3.0);
  const double Ob[2] = {4.0, 8.0};
  ring::merge_lse(O, L, Ob, std::log(1.0), 2);  // weights 3/4 and 1/4
  EXPECT_NEAR(L, std::log(4.0), 1e-15);
  EXPECT_NEAR(O[0], 0.75 * 1 + 0.25 * 4, 1e-15);
  EXPECT_NEAR(O[1], 0.75 * 2 + 0.25 * 8, 1e-15);
  double E[1] = {0.0}, LE = -INFINITY;
  const double Z[1] = {5.0};
  ring::merge_lse(E, LE, Z, -INFINITY, 1);  // neither side saw a key
  EXPECT_EQ(LE, -INFINITY);
  EXPECT_EQ(E[0], 0.0);
  ring::merge_lse(E, LE, Z, 0.0, 1);  // the empty side weighs nothing
  EXPECT_EQ(E[0], 5.0);
  EXPECT_EQ(LE, 0.0);
}

class CpuRingSimulator : public ::testing::TestWithParam<std::tuple<int, Sharding, bool>> {};

TEST_P(CpuRingSimulator, EqualsTheWholeSequenceReference) {
  const auto [P, sh, causal] = GetParam();
  LADDER_TEST_SEED(seed);
  const AttentionShape s{2, 3, 2 * P * 7, 16, causal};
  const ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, true);
  const ring::SimResult sim = ring::simulate(s, P, sh, x.Q, x.K, x.V, &x.dO);
  const auto f = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
  const auto g = ladder::attention_backward_reference(s, x.Q.data(), x.K.data(), x.V.data(), x.dO.data());
  EXPECT_LT(rel_l2(sim.fwd.O, f.O), 1e-12);
  EXPECT_LT(rel_l2(sim.fwd.L, f.L), 1e-12);
  EXPECT_LT(rel_l2(sim.grads.dQ, g.dQ), 1e-11);
  EXPECT_LT(rel_l2(sim.grads.dK, g.dK), 1e-11);
  EXPECT_LT(rel_l2(sim.grads.dV, g.dV), 1e-11);
}

INSTANTIATE_TEST_SUITE_P(All, CpuRingSimulator,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::ValuesIn(ring::kAllShardings),
                                            ::testing::Bool()));

// N_kv written out (ladder::attention_shape, as every chapter's flags give it): the simulator's
// tiles must still be C keys long, not the whole sequence's N_kv.
TEST(CpuRingSim, ShapeWithKeyLengthSpelledOut) {
  LADDER_TEST_SEED(seed);
  for (int P : {2, 3})
    for (Sharding sh : ring::kAllShardings)
      for (bool causal : {false, true}) {
        SCOPED_TRACE(std::string(ring::name(sh)) + " P=" + std::to_string(P) + (causal ? " causal" : " dense"));
        const int N = 2 * P * 5;
        const AttentionShape s = ladder::attention_shape(2, 3, 3, N, N, 16, causal);
        const ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, true);
        const ring::SimResult sim = ring::simulate(s, P, sh, x.Q, x.K, x.V, &x.dO);
        const auto f = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
        const auto g = ladder::attention_backward_reference(s, x.Q.data(), x.K.data(), x.V.data(), x.dO.data());
        EXPECT_LT(rel_l2(sim.fwd.O, f.O), 1e-12);
        EXPECT_LT(rel_l2(sim.fwd.L, f.L), 1e-12);
        EXPECT_LT(rel_l2(sim.grads.dQ, g.dQ), 1e-11);
        EXPECT_LT(rel_l2(sim.grads.dK, g.dK), 1e-11);
        EXPECT_LT(rel_l2(sim.grads.dV, g.dV), 1e-11);
      }
}

TEST(CpuRingSim, RefusesWhatTheRingDoesNotTake) {
  const AttentionShape s{1, 2, 10, 16, true};
  const std::vector<float> x(s.elems(), 0.5f);
  EXPECT_THROW(ring::simulate(s, 3, Sharding::Zigzag, x, x, x), std::invalid_argument);  // 10 % 6 != 0
  AttentionShape gqa{1, 2, 12, 16, false};
  gqa.H_kv = 1;
  EXPECT_THROW(ring::simulate(gqa, 2, Sharding::Plain, x, x, x), std::invalid_argument);
  const AttentionShape cross = ladder::attention_shape(1, 2, 2, 12, 24, 16, false);
  EXPECT_THROW(ring::simulate(cross, 2, Sharding::Plain, x, x, x), std::invalid_argument);
  const AttentionShape twelve{1, 2, 12, 16, false};  // x holds 10 tokens' worth, not 12
  EXPECT_THROW(ring::simulate(twelve, 2, Sharding::Plain, x, x, x), std::invalid_argument);
}

// ---- CPU: host glue, bad input before any CUDA call ---------------------------------------

TEST(CpuRingHost, ScatterThenGatherIsTheIdentity) {
  const AttentionShape s{2, 3, 24, 4, true};
  std::vector<float> full(s.elems());
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = float(i);
  for (int P : {1, 2, 3})
    for (Sharding sh : ring::kAllShardings) {
      const ring::Layout l = ring::make_layout(s.N, P, sh);
      std::vector<float> back(full.size(), -1.0f);
      for (int r = 0; r < P; ++r) ring::gather(ring::scatter(full, s, l, r, s.d), s, l, r, s.d, back);
      EXPECT_EQ(back, full) << ring::name(sh) << " P=" << P;
    }
}

// A transport that is never asked to move anything: the checks come first.
class NoTransport final : public ring::Transport {
 public:
  explicit NoTransport(int P) : P_(P) {}
  const char* name() const override { return "none"; }
  int ranks() const override { return P_; }
  int device(int) const override { return 0; }
  void shift(const std::vector<std::vector<ring::Message>>&, const std::vector<cudaStream_t>&) override {
    throw std::logic_error("no transport");
  }

 private:
  int P_;
};

TEST(CpuRing, RefusesBadShapesBeforeTouchingTheGpu) {
  NoTransport two(2);
  EXPECT_THROW(ring::Ring(AttentionShape{1, 2, 1001, 128, true}, Sharding::Zigzag, two), std::invalid_argument);
  EXPECT_THROW(ring::Ring(AttentionShape{1, 2, 1000, 96, true}, Sharding::Zigzag, two), std::invalid_argument);
  AttentionShape gqa{1, 4, 1000, 128, true};
  gqa.H_kv = 2;
  EXPECT_THROW(ring::Ring(gqa, Sharding::Zigzag, two), std::invalid_argument);
}

TEST(CpuRing, BytesPerRankDoNotDependOnHowTheShapeIsWritten) {
  const ring::Layout l = ring::make_layout(1024, 2, Sharding::Zigzag);
  EXPECT_EQ(ring::Ring::bytes_per_rank(AttentionShape{1, 4, 1024, 128, true}, l),
            ring::Ring::bytes_per_rank(ladder::attention_shape(1, 4, 4, 1024, 1024, 128, true), l));
}

// P < 1 is bad input on every machine (not a std::length_error from sizing P buffers), and
// it is refused before the transport looks for a GPU.
TEST(CpuRing, TransportsRefuseRankCountsBelowOne) {
  for (int P : {0, -2}) {
    SCOPED_TRACE("P = " + std::to_string(P));
    try {
      ring::make_loopback_transport(P);
      FAIL() << "a loopback ring of " << P << " ranks was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("P must be >= 1"), std::string::npos) << e.what();
    }
    try {
      ring::make_nccl_transport(P);
      FAIL() << "an NCCL ring of " << P << " ranks was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("P must be >= 1"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuRing, LoopbackRefusesADeviceThatIsNotThere) {
  for (int dev : {-1, ring::visible_gpus()}) {  // no GPU: device 0 is not there either
    try {
      ring::make_loopback_transport(2, dev);
      FAIL() << "a loopback ring on device " << dev << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("device " + std::to_string(dev)), std::string::npos) << e.what();
    }
  }
}

TEST(CpuRing, NcclTransportSaysWhyItIsMissing) {
  const int gpus = ring::visible_gpus();
  try {
    ring::make_nccl_transport(gpus + 1);
    FAIL() << "an NCCL ring with more ranks than GPUs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(ring::nccl_built() ? "GPUs" : "no NCCL"), std::string::npos) << e.what();
  }
}

TEST(CpuRingLimit, MemoryModelCountsChapter10Buffers) {
  const AttentionShape s{1, 8, 1, 128, true};
  const ring::MemoryModel m = ring::memory_model(s, 100e9);
  EXPECT_DOUBLE_EQ(m.fwd_bytes_per_token, 8 * (4 * 2 * 128 + 4));  // Q K V O bf16 + L fp32, per head
  EXPECT_DOUBLE_EQ(m.fwdbwd_bytes_per_token, 8 * (8 * 2 * 128 + 4 + 4 + 4 * 128));
  EXPECT_EQ(m.fwdbwd_max_N, static_cast<long long>(100e9 / m.fwdbwd_bytes_per_token));
  EXPECT_LE(m.fwd_max_N, 2147483647ll / 128);  // chapter 10 indexes a head's rows with an int
}

// ---- GPU ----------------------------------------------------------------------------------

TEST(GpuRingKernels, MergeMatchesTheFp64Formula) {
  LADDER_REQUIRE_GPU();
  const int rows = 37, d = 128;
  std::vector<float> O(rows * d), L(rows), Os(rows * d), Ls(rows);
  const std::vector<float> u = ladder::random_uniform(2 * rows * d + 2 * rows, 77);
  for (int i = 0; i < rows * d; ++i) O[i] = u[i], Os[i] = ladder::round_to_bf16(u[rows * d + i]);
  for (int i = 0; i < rows; ++i) L[i] = 4 * u[2 * rows * d + i], Ls[i] = 4 * u[2 * rows * d + rows + i];
  L[3] = -INFINITY;          // this side saw no key
  Ls[5] = -INFINITY;         // the other side saw none
  L[7] = Ls[7] = -INFINITY;  // neither
  for (int k = 0; k < d; ++k) O[7 * d + k] = 0.0f;
  ladder::DeviceBuffer<float> dO_acc(O), dL(L), dLs(Ls);
  ladder::DeviceBuffer<ring::bf16> dOs(ladder::to_bf16(Os));
  ring::merge(dO_acc.data(), dL.data(), dOs.data(), dLs.data(), rows, d, nullptr);
  const std::vector<float> got = dO_acc.download(), gotL = dL.download();
  std::vector<double> want(O.begin(), O.end()), wantL(L.begin(), L.end());
  for (int i = 0; i < rows; ++i) {
    const std::vector<double> b(Os.begin() + i * d, Os.begin() + (i + 1) * d);
    ring::merge_lse(&want[i * d], wantL[i], b.data(), Ls[i], d);
  }
  EXPECT_TRUE(ladder::matches(got, want, ladder::kFp32));
  EXPECT_TRUE(ladder::compare_lse(gotL, wantL).within(ladder::kLse)) << ladder::compare_lse(gotL, wantL).str();
}

struct RingCase {
  int P;
  Sharding sharding;
  bool causal;
  int C;  // tokens per chunk: no multiple of any tile
  int d;
};

std::string case_name(const ::testing::TestParamInfo<RingCase>& info) {
  const RingCase& c = info.param;
  return "P" + std::to_string(c.P) + "_" + ring::name(c.sharding) + (c.causal ? "_causal" : "_dense") + "_C" +
         std::to_string(c.C) + "_d" + std::to_string(c.d);
}

void check_ring(ring::Transport& tr, const RingCase& c, std::uint64_t seed) {
  const int chunks = c.sharding == Sharding::Plain ? c.P : 2 * c.P;
  const AttentionShape s{1, 2, chunks * c.C, c.d, c.causal};
  const ring::RingCheck r = ring::check_against_reference(s, c.sharding, tr, seed);
  EXPECT_TRUE(r.O.within(ladder::kBf16Attention)) << "O: " << r.O.str();
  EXPECT_TRUE(r.L.within(ladder::kLse)) << "L: " << r.L.str();
  EXPECT_TRUE(r.dQ.within(ladder::kBf16AttentionGrad)) << "dQ: " << r.dQ.str();
  EXPECT_TRUE(r.dK.within(ladder::kBf16AttentionGrad)) << "dK: " << r.dK.str();
  EXPECT_TRUE(r.dV.within(ladder::kBf16AttentionGrad)) << "dV: " << r.dV.str();
}

class GpuRingLoopback : public ::testing::TestWithParam<RingCase> {};

TEST_P(GpuRingLoopback, ForwardAndBackwardMatchTheReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  auto tr = ring::make_loopback_transport(GetParam().P);
  check_ring(*tr, GetParam(), seed);
}

std::vector<RingCase> loopback_cases() {
  std::vector<RingCase> out;
  for (int P : {1, 2, 3})
    for (Sharding sh : ring::kAllShardings)
      for (bool causal : {false, true}) out.push_back({P, sh, causal, 67, 128});
  out.push_back({4, Sharding::Zigzag, true, 33, 64});
  out.push_back({2, Sharding::Zigzag, true, 1, 64});  // one token per chunk
  if (!ladder::small_mode()) {
    out.push_back({2, Sharding::Zigzag, true, 300, 128});
    out.push_back({4, Sharding::Plain, true, 129, 64});
  }
  return out;
}
INSTANTIATE_TEST_SUITE_P(Cases, GpuRingLoopback, ::testing::ValuesIn(loopback_cases()), case_name);

// N_kv written out, as ladder::attention_shape (and every chapter's --N-kv) gives it: every tile
// must still read C keys, not the whole sequence's N_kv from buffers that hold one chunk.
TEST(GpuRingShapes, KeyLengthSpelledOut) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  auto tr = ring::make_loopback_transport(2);
  for (Sharding sh : ring::kAllShardings) {
    SCOPED_TRACE(ring::name(sh));
    const AttentionShape s = ladder::attention_shape(1, 2, 2, 512, 512, 64, true);
    const ring::RingCheck r = ring::check_against_reference(s, sh, *tr, seed);
    EXPECT_TRUE(r.O.within(ladder::kBf16Attention)) << "O: " << r.O.str();
    EXPECT_TRUE(r.L.within(ladder::kLse)) << "L: " << r.L.str();
    EXPECT_TRUE(r.dQ.within(ladder::kBf16AttentionGrad)) << "dQ: " << r.dQ.str();
    EXPECT_TRUE(r.dK.within(ladder::kBf16AttentionGrad)) << "dK: " << r.dK.str();
    EXPECT_TRUE(r.dV.within(ladder::kBf16AttentionGrad)) << "dV: " << r.dV.str();
  }
}

// ---- GPU: the ring rounds its gradients once, as one chapter-10 call does -------------------
//
// The shape where rounding each tile's partial gradients to bf16 showed most: chunks of one or
// two tokens (B = 5, N = 4 over P = 2 ranks), d = 128, logits x 3 (Q x 3).
AttentionShape small_chunks(int H, bool causal) { return ladder::attention_shape(5, H, H, 4, 4, 128, causal); }
constexpr float kLogitScale = 3.0f;

struct Grads {
  std::vector<float> dQ, dK, dV;
};
struct OneCall {
  std::vector<float> O, L;
  Grads g;
};
OneCall one_call(const fa2tc::Problem& p) {
  fa2tc::OnDevice one(p);
  one.forward();
  one.backward();
  CUDA_CHECK(cudaDeviceSynchronize());
  return {one.O_host(), one.L_host(), {one.dQ_host(), one.dK_host(), one.dV_host()}};
}

// The ring's backward given chapter 10's own O and L of one call on the whole sequence. Every
// tile then computes exactly the one call's P, D and bf16 dS (the same products of the same
// rows), so the fp32 sums differ from the one call's only in the order of their additions, and
// rounded once at the end they are the one call's but for the rare element whose sum lands on
// the other side of a bf16 rounding boundary: ||ring - one|| / ||one|| ~ 1e-4 or less. A ring
// that rounds each tile's partial to bf16 before summing adds one more bf16 error (rms
// 2^-9/sqrt(3) ~ 1.1e-3 of the partial) wherever a row or key sees two or more tiles: about
// 3e-3 here (a CPU emulation of both on this shape). 5e-4 lies between the two. Against fp64
// the two then err alike: an element that flips sat on a rounding boundary, half an ulp from
// either neighbour, so the ring's error stays within 5 % of the one call's.
constexpr double kSameAsOneCall = 5e-4;

TEST(GpuRingAccuracy, BackwardRoundsOnceLikeOneCall) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  auto tr = ring::make_loopback_transport(2);
  for (Sharding sh : ring::kAllShardings)
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(ring::name(sh)) + (causal ? " causal" : " dense"));
      const fa2tc::Problem p = fa2tc::make_problem(small_chunks(2, causal), seed, kLogitScale);
      const OneCall one = one_call(p);
      ring::Ring ring(p.s, sh, *tr);
      ring::upload(ring, p.Q, p.K, p.V, p.dO);
      ring::upload_forward(ring, one.O, one.L);
      ring.backward();
      ring.synchronize();
      const ring::RingOutputs out = ring::download(ring, true);
      const auto ref = ladder::attention_backward_reference(p.s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
      auto expect_same = [](const char* name, const std::vector<float>& ring_g, const std::vector<float>& one_g,
                            const std::vector<double>& ref_g) {
        const ladder::Comparison diff = ladder::compare(ring_g, fa2tc::widen(one_g));
        EXPECT_TRUE(diff.nonfinite == 0 && diff.rel_l2 <= kSameAsOneCall)
            << name << " ring vs one call: " << diff.str() << " (bound " << kSameAsOneCall << ")";
        const double e_ring = ladder::compare(ring_g, ref_g).rel_l2, e_one = ladder::compare(one_g, ref_g).rel_l2;
        EXPECT_LE(e_ring, 1.05 * e_one) << name << " vs fp64: ring " << e_ring << ", one call " << e_one;
      };
      expect_same("dQ", out.dQ, one.g.dQ, ref.dQ);
      expect_same("dK", out.dK, one.g.dK, ref.dK);
      expect_same("dV", out.dV, one.g.dV, ref.dV);
    }
}

// The whole ring, forward and backward, against one chapter-10 call on the same inputs, both
// against fp64. The backward rounds once, but the forward still rounds each tile's O to bf16
// before the merge (chapter 10's forward writes bf16), so the ring's O, and through
// D = rowsum(dO * O) its dQ and dK, carry up to about sqrt(2) times the one call's rounding of
// O; with 4 keys per row D's error is a large share of dQ's and dK's. A CPU emulation of both
// (bf16 roundings where chapter 10 rounds, 40 seeds, plain split, dense and causal) puts the
// ring's dQ and dK error at 0.96x to 1.24x the one call's with B*H = 40 heads, dV's at 1.00x
// (dV does not see D). With B*H = 10 the spread reaches 1.5x, so this test takes H = 8.
// Bound: 1.5x.
constexpr double kRingVsOneCall = 1.5;

TEST(GpuRingAccuracy, GradientErrorWithinFactorOfOneCall) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  auto tr = ring::make_loopback_transport(2);
  for (Sharding sh : ring::kAllShardings)
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(ring::name(sh)) + (causal ? " causal" : " dense"));
      const fa2tc::Problem p = fa2tc::make_problem(small_chunks(8, causal), seed, kLogitScale);
      const OneCall one = one_call(p);
      ring::Ring ring(p.s, sh, *tr);
      ring::upload(ring, p.Q, p.K, p.V, p.dO);
      ring.forward();
      ring.backward();
      ring.synchronize();
      const ring::RingOutputs out = ring::download(ring, true);
      const auto f = ladder::attention_forward_reference(p.s, p.Q.data(), p.K.data(), p.V.data());
      const auto ref = ladder::attention_backward_reference(p.s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
      EXPECT_TRUE(ladder::compare(out.O, f.O).within(ladder::kBf16Attention)) << ladder::compare(out.O, f.O).str();
      auto expect_close = [](const char* name, const std::vector<float>& ring_g, const std::vector<float>& one_g,
                             const std::vector<double>& ref_g) {
        const ladder::Comparison e_ring = ladder::compare(ring_g, ref_g), e_one = ladder::compare(one_g, ref_g);
        EXPECT_TRUE(e_ring.within(ladder::kBf16AttentionGrad)) << name << ": " << e_ring.str();
        EXPECT_LE(e_ring.rel_l2, kRingVsOneCall * e_one.rel_l2)
            << name << " vs fp64: ring " << e_ring.rel_l2 << ", one call " << e_one.rel_l2;
      };
      expect_close("dQ", out.dQ, one.g.dQ, ref.dQ);
      expect_close("dK", out.dK, one.g.dK, ref.dK);
      expect_close("dV", out.dV, one.g.dV, ref.dV);
    }
}

TEST(GpuRingLoopbackPhases, ComputeOnlyAndCommOnlyRunAndTheTimelineIsOrdered) {
  LADDER_REQUIRE_GPU();
  auto tr = ring::make_loopback_transport(3);
  ring::Ring ring(AttentionShape{1, 2, 6 * 64, 64, true}, Sharding::Zigzag, *tr);
  ring::fill_random(ring, 3);
  for (ring::Phase ph : {ring::Phase::ComputeOnly, ring::Phase::CommOnly, ring::Phase::Both}) {
    ring.forward(ph);
    ring.synchronize();
    ring.backward(ph);
    ring.synchronize();
  }
  const auto tl = ring.timeline();
  ASSERT_EQ(tl.size(), 3u);
  for (const ring::RankTimeline& r : tl) {
    for (std::size_t t = 0; t < r.compute.size(); ++t) {
      EXPECT_LE(r.compute[t].start_ms, r.compute[t].end_ms);
      if (t > 0) {
        EXPECT_GE(r.compute[t].start_ms, r.kv[t - 1].end_ms) << "step " << t << " ran before its shard came";
      }
      EXPECT_GE(r.dkv[t].start_ms, r.compute[t].end_ms) << "dK/dV of step " << t << " left before they were summed";
      if (t > 0) {
        EXPECT_GE(r.add[t].start_ms, r.dkv[t - 1].end_ms) << "step " << t << " added before the sums came";
        EXPECT_GE(r.dkv[t].start_ms, r.add[t].end_ms) << "dK/dV of step " << t << " left before the add";
      }
    }
    EXPECT_GE(r.total_ms, r.dkv.back().end_ms);
  }
  const double f = ring::overlap_fraction(tl);
  EXPECT_GE(f, 0.0);
  EXPECT_LE(f, 1.0);
}

TEST(GpuRingNccl, ForwardAndBackwardMatchTheReference) {
  LADDER_REQUIRE_GPU();
  if (!ring::nccl_built()) GTEST_SKIP() << "built without NCCL";
  if (ring::visible_gpus() < 2) GTEST_SKIP() << "the NCCL ring needs >= 2 GPUs; " << ring::visible_gpus() << " visible";
  LADDER_TEST_SEED(seed);
  const int P = std::min(ring::visible_gpus(), 4);
  auto tr = ring::make_nccl_transport(P);
  for (Sharding sh : ring::kAllShardings)
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(ring::name(sh)) + (causal ? " causal" : " dense"));
      check_ring(*tr, {P, sh, causal, 67, 128}, seed);
    }
}

}  // namespace
