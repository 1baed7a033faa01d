#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "12_fa3_hopper/fa3.h"
#include "attention_test_cases.h"
#include "dq_order_model.h"
#include "fa3_bwd.h"
#include "fa3_bwd_config.h"
#include "fa3_bwd_problem.h"
#include "gtest_helpers.h"
#include "reference_attention.h"

namespace {

using fa3bwd::bf16;
using ladder::attention_shape;
using ladder::AttentionShape;

#define FA3BWD_REQUIRE_SM90A()                                              \
  do {                                                                      \
    LADDER_REQUIRE_GPU();                                                   \
    if (const std::string why = fa3bwd::unavailable_reason(); !why.empty()) \
      GTEST_SKIP() << "GPU test skipped: " << why;                          \
  } while (0)

// ---- CPU: the layouts the kernels rely on, bad input --------------------------------------------

// The dQ accumulator's swizzle permutes the 16-byte units of each row: every (row, column) of a
// 64 x 64 block has its own float, inside the row's own 256 bytes (one bulk reduce-add per
// block adds each element once), and the post-processing reads it back from the same place.
TEST(CpuFa3Bwd, DqBlockLayoutIsAPermutationOfEachRow) {
  namespace L = fa3bwd::layout;
  std::set<int> seen;
  for (int r = 0; r < L::kBlockRows; ++r)
    for (int c = 0; c < L::kChunkCols; ++c) {
      const int o = L::chunk_offset(r, c);
      EXPECT_EQ(o / L::kChunkCols, r) << "row " << r << " col " << c;
      EXPECT_TRUE(seen.insert(o).second) << "offset " << o << " used twice";
    }
  EXPECT_EQ(seen.size(), std::size_t(L::kChunkFloats));
  // A warp's 8-byte stores of accumulator rows g = 0..7 at one column: eight bank groups.
  for (int col = 0; col < L::kChunkCols; col += 2) {
    std::set<int> units;
    for (int g = 0; g < 8; ++g) units.insert((L::chunk_offset(g, col) / 4) % 8);
    EXPECT_EQ(units.size(), 8u) << "column " << col;
  }
}

TEST(CpuFa3Bwd, WorkspaceHoldsPaddedRowsAndTheDqBlocks) {
  const AttentionShape s = attention_shape(2, 4, 2, 100, 70, 128, true);
  const std::size_t rows = 2 * 4 * 128;  // N = 100 padded to 128 rows (the larger query tile)
  EXPECT_EQ(fa3bwd::backward_workspace_floats(s), 2 * rows + rows * 128 + rows * 128 / 4096);  // + one flag per block
}

// The tile policy's split of dQ_i: the two consumers' 64 x 64 blocks cover the query tile's rows
// and d's columns, each block written kDqWritersPerBlock times per CTA (once, except at d = 64
// with 64-row tiles, chapter 15's), and every query tile lies inside the padded rows.
TEST(CpuFa3Bwd, TheConsumersSplitDqIntoItsBlocks) {
  namespace L = fa3bwd::layout;
  auto check = [](auto cfg) {
    using C = decltype(cfg);
    const int rows = C::B_r / L::kBlockRows, chunks = C::d / L::kChunkCols;
    for (int i : {0, 1, 7}) {
      std::multiset<std::pair<int, int>> written;
      for (int cw = 0; cw < 2; ++cw) written.insert({C::dq_row_block(i, cw), C::dq_chunk(cw)});
      EXPECT_EQ(written.size(), std::size_t(rows * chunks * C::kDqWritersPerBlock))
          << "d=" << C::d << " B_r=" << C::B_r;
      for (int r = 0; r < rows; ++r)
        for (int ch = 0; ch < chunks; ++ch)
          EXPECT_EQ(written.count({i * rows + r, ch}), std::size_t(C::kDqWritersPerBlock))
              << "d=" << C::d << " B_r=" << C::B_r << " tile " << i << " block " << r << " chunk " << ch;
    }
    for (int N : {1, 64, 100, 128, 4093}) EXPECT_EQ(L::padded_rows(N) % C::B_r, 0) << "N=" << N;
  };
  using fa3bwd::Step;
  static_assert(
      fa3bwd::kernel::Cfg<64, Step::BulkReduce>::B_r == 128 && fa3bwd::kernel::Cfg<128, Step::BulkReduce>::B_r == 64,
      "the tile policy: 128 query rows at d = 64, 64 at d = 128");
  check(fa3bwd::kernel::Cfg<64, Step::BulkReduce>{});
  check(fa3bwd::kernel::Cfg<128, Step::BulkReduce>{});
  check(fa3bwd::kernel::Cfg<64, Step::BulkReduce, 64>{});
}

TEST(CpuFa3Bwd, SharedMemoryFitsTheH200) {
  for (int d : fa3bwd::kSupportedD)
    for (fa3bwd::Step step : fa3bwd::kAllSteps)
      EXPECT_LE(fa3bwd::kernel::smem_bytes(d, step), 227u * 1024) << "d=" << d << " " << fa3bwd::name(step);
}

TEST(CpuFa3Bwd, BadInputIsRefusedBeforeAnyLaunch) {
  alignas(16) static bf16 buf[64];
  alignas(16) static float f[64];
  bf16* p = buf;
  const AttentionShape ok = attention_shape(1, 2, 1, 64, 64, 128, false);
  auto bwd = [&](const AttentionShape& s, const bf16* q, float* ws, const fa3bwd::BackwardOptions& o = {}) {
    fa3bwd::backward(s, q, p, p, p, f, p, p, p, p, ws, o);
  };
  EXPECT_THROW(bwd(attention_shape(1, 2, 1, 64, 64, 96, false), p, f), std::invalid_argument);  // d
  EXPECT_THROW(bwd(attention_shape(1, 3, 2, 64, 64, 64, false), p, f), std::invalid_argument);  // H % H_kv
  EXPECT_THROW(bwd(ok, nullptr, f), std::invalid_argument);
  EXPECT_THROW(bwd(ok, p, nullptr), std::invalid_argument);
  EXPECT_THROW(bwd(ok, reinterpret_cast<const bf16*>(reinterpret_cast<const char*>(p) + 2), f),
               std::invalid_argument);  // misaligned
  EXPECT_THROW(bwd(ok, p, f, fa3bwd::BackwardOptions{static_cast<fa3bwd::Step>(7)}), std::invalid_argument);
  EXPECT_THROW(bwd(ok, p, f, fa3bwd::BackwardOptions{fa3bwd::kBestStep, -1}), std::invalid_argument);
  EXPECT_THROW(bwd(ok, p, f, fa3bwd::BackwardOptions{fa3bwd::Step::Deterministic, 2}), std::invalid_argument);
  try {
    bwd(attention_shape(1, 2, 1, 64, 64, 80, false), p, f);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("64, 128"), std::string::npos) << e.what();
  }
}

// The deterministic order's premise: the CTAs that visit a query tile are those of key tiles
// 0 .. last_key_tile(i), so "the CTA before me" always exists and always comes.
TEST(CpuFa3Bwd, TheCtasOfAQueryTileAreAPrefixOfTheKeyTiles) {
  for (int N : {1, 17, 64, 100, 300, 1000, 4093})
    for (int N_kv : {1, 64, 129, 300, 4096})
      for (bool causal : {false, true}) {
        const auto w = fa3bwd::model::walks(N, N_kv, causal);
        for (int i = 0; i < w.T_r; ++i) {
          std::vector<int> visitors;
          for (int j = 0; j < w.T_c; ++j)
            if (w.i_first[j] <= i) visitors.push_back(j);
          if (visitors.empty()) continue;
          const int J = w.last_key_tile(i, N, N_kv - N, causal, 64, 128);
          EXPECT_EQ(int(visitors.size()), J + 1) << "N " << N << " N_kv " << N_kv << " causal " << causal << " i " << i;
          EXPECT_EQ(visitors.back(), J);
        }
      }
}

// Why the writer adds from the last key tile down (fa3_bwd_kernel.cuh, write_dq), in the model of
// the main shape's grid on 132 SMs: causal, going up the key tiles holds every CTA until the ones
// below it are done, so the short CTAs no longer make room for the next heads; going down costs
// little over no order at all. And why that order needs every key tile of a head resident at
// once: with more key tiles than SMs, CTAs wait for CTAs that cannot start.
TEST(CpuFa3Bwd, DescendingOrderKeepsTheCausalLoadBalance) {
  using fa3bwd::model::Order;
  fa3bwd::model::Grid g;
  const double fast = fa3bwd::model::schedule(g, Order::Fast).makespan;
  const double down = fa3bwd::model::schedule(g, Order::Descending).makespan;
  const double up = fa3bwd::model::schedule(g, Order::Ascending).makespan;
  EXPECT_LE(down, 1.1 * fast) << "fast " << fast << ", descending " << down;
  EXPECT_GE(up, 1.3 * fast) << "fast " << fast << ", ascending " << up;
  g.N = 32768, g.heads = 1;  // 256 key tiles on 132 SMs
  EXPECT_FALSE(fa3bwd::model::schedule(g, Order::Descending).converged);
  EXPECT_TRUE(fa3bwd::model::schedule(g, Order::Ascending).converged);
}

// Dense attention adds from key tile 0 up (write_dq): on the model of the main shape's grid it is
// the faster of the two fixed orders, and since a CTA then waits only for CTAs launched before it,
// it finishes with more key tiles than SMs.
TEST(CpuFa3Bwd, DenseAttentionAddsFromKeyTileZero) {
  using fa3bwd::model::Order;
  fa3bwd::model::Grid g;
  g.causal = false;
  EXPECT_LT(fa3bwd::model::schedule(g, Order::Ascending).makespan,
            fa3bwd::model::schedule(g, Order::Descending).makespan);
  g.N = 32768, g.heads = 1;
  EXPECT_TRUE(fa3bwd::model::schedule(g, Order::Ascending).converged);
}

// The launch order (fa3_bwd_scheduler.h) visits every CTA of the grid once, is the plain grid
// order with one head per section, and goes key tile by key tile inside a section of heads.
TEST(CpuFa3Bwd, TheSchedulerLaunchesEveryCtaOnce) {
  namespace sched = fa3bwd::sched;
  EXPECT_EQ(sched::sections(10, 8).base, 5);  // two sections of 5, not 8 and 2
  EXPECT_EQ(sched::sections(64, 10).base, 9);
  EXPECT_EQ(sched::sections(64, 10).extra, 1);  // 10, then six of 9
  for (int heads : {1, 2, 7, 12, 64, 65})
    for (int T_c : {1, 3, 32})
      for (int most : {1, 2, 3, 10, 100}) {
        const sched::Sections sec = sched::sections(heads, most);
        EXPECT_LE(sec.base + (sec.extra > 0 ? 1 : 0), std::min(most, heads));
        std::vector<int> seen(std::size_t(heads) * T_c, 0);
        int section_start = 0;
        for (int c = 0; c < heads * T_c; ++c) {
          const sched::Tile t = sched::tile(c, T_c, sec);
          const std::string where = "heads " + std::to_string(heads) + " T_c " + std::to_string(T_c) + " most " +
                                    std::to_string(most) + " place " + std::to_string(c);
          ASSERT_TRUE(t.j >= 0 && t.j < T_c && t.head >= 0 && t.head < heads) << where;
          ++seen[std::size_t(t.head) * T_c + t.j];
          if (most == 1) {
            EXPECT_TRUE(t.head == c / T_c && t.j == c % T_c) << where;
          }
          if (c > 0 && t.j == 0 && sched::tile(c - 1, T_c, sec).j == T_c - 1) section_start = c;
          if (c > section_start) {
            EXPECT_GE(t.j, sched::tile(c - 1, T_c, sec).j) << where;
          }
        }
        for (int v : seen) EXPECT_EQ(v, 1) << "heads " << heads << " T_c " << T_c << " most " << most;
      }
}

// Why the fast steps launch in sections of heads, on the schedule model of 132 SMs: causal, the
// longest CTAs first inside sections that fit in the L2 pack the SMs better than head by head, at
// the main shape and at chapter 16's training shape (B 2, 6 heads, N = 8192), and never worse at
// any number of heads.
TEST(CpuFa3Bwd, SectionsOfHeadsPackTheCausalGrid) {
  auto makespan = [](fa3bwd::model::Grid g, int most) {
    g.heads_per_section = most;
    return fa3bwd::model::schedule(g, fa3bwd::model::Order::Fast).makespan;
  };
  fa3bwd::model::Grid g;
  const int in_l2 = fa3bwd::sched::heads_in_l2(ladder::kH200L2Bytes, 1, g.N, 128);
  EXPECT_EQ(in_l2, 10);  // 4 MB of Q, dO and dQ accumulator per head in 40 MB
  EXPECT_LE(makespan(g, in_l2), 0.95 * makespan(g, 1));
  fa3bwd::model::Grid training = g;
  training.N = 8192, training.heads = 12;
  EXPECT_LE(makespan(training, fa3bwd::sched::heads_in_l2(ladder::kH200L2Bytes, 1, 8192, 128)),
            0.9 * makespan(training, 1));
  for (g.heads = 1; g.heads <= 72; ++g.heads) EXPECT_LE(makespan(g, in_l2), makespan(g, 1)) << g.heads << " heads";
}

// ---- GPU: against the fp64 reference -------------------------------------------------------------

// Every step against the reference, with O and L from chapter 12's forward. The steps differ only
// in how dQ is summed, so dK and dV must agree bit for bit between them; the deterministic step's
// dQ must be bit-identical from one run to the next.
// q_scale: an absolute error e of the fp32 scores moves P by a factor e^e (chapter 10's bound).
void expect_backward_correct(const fa3bwd::Problem& p, float q_scale = 1.0f) {
  const ladder::Bound grad{ladder::kBf16AttentionGrad.rel_l2 + 1e-4 * q_scale,
                           "bf16 gradients, plus the fp32 scores' error at this logit scale"};
  const AttentionShape& s = p.s;
  const auto ref = ladder::attention_backward_reference(s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
  fa3bwd::OnDevice dev(p);
  dev.forward();
  std::vector<float> dK0, dV0, dQ_det;
  for (fa3bwd::Step step : fa3bwd::kAllSteps) {
    dev.backward({step});
    const std::string what = std::string("backward ") + fa3bwd::name(step) + ", " + s.str();
    const std::vector<float> dQ = dev.dQ_host(), dK = dev.dK_host(), dV = dev.dV_host();
    EXPECT_TRUE(ladder::matches(dQ, ref.dQ, grad)) << "dQ, " << what;
    EXPECT_TRUE(ladder::matches(dK, ref.dK, grad)) << "dK, " << what;
    EXPECT_TRUE(ladder::matches(dV, ref.dV, grad)) << "dV, " << what;
    if (step == fa3bwd::Step::Deterministic) dQ_det = dQ;
    if (step == fa3bwd::kAllSteps[0]) {
      dK0 = dK, dV0 = dV;
    } else {
      EXPECT_TRUE(fa2tc::bit_identical(dK, dK0)) << "dK differs between the steps, " << what;
      EXPECT_TRUE(fa2tc::bit_identical(dV, dV0)) << "dV differs between the steps, " << what;
    }
  }
  for (int run = 0; run < 2; ++run) {
    dev.backward({fa3bwd::Step::Deterministic});
    EXPECT_TRUE(fa2tc::bit_identical(dev.dQ_host(), dQ_det)) << "deterministic dQ differs between runs, " << s.str();
  }
}

class GpuFa3Backward : public ::testing::TestWithParam<ladder::edge::Case> {};
TEST_P(GpuFa3Backward, MatchesTheReference) {
  FA3BWD_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  if (const std::string why = ladder::edge::skip_reason(GetParam()); !why.empty()) GTEST_SKIP() << why;
  expect_backward_correct(fa3bwd::make_problem(ladder::edge::case_shape(GetParam()), seed));
}
INSTANTIATE_TEST_SUITE_P(Shapes, GpuFa3Backward, ladder::edge::kCases, ladder::edge::case_name);

// N_q != N_kv both ways, causal aligned at the bottom right: with 300 queries on 100 keys the
// first 200 queries see no key (L = -inf: P = 0, dQ = 0).
TEST(GpuFa3Bwd, QueriesAndKeysOfDifferentLengths) {
  FA3BWD_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int a = ladder::small_mode() ? 17 : 100, b = ladder::small_mode() ? 50 : 300;
  for (int d : fa3bwd::kSupportedD)
    for (bool causal : {false, true})
      for (const auto& [N, N_kv] : {std::pair{a, b}, std::pair{b, a}})
        expect_backward_correct(fa3bwd::make_problem(attention_shape(2, 4, 2, N, N_kv, d, causal), seed));
}

// Dense attention with more key tiles than SMs: the deterministic step adds from key tile 0 up,
// so it runs at any N_kv (the causal order is refused past one CTA per SM).
TEST(GpuFa3Bwd, DenseDeterministicTakesAnyKeyLength) {
  FA3BWD_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int N_kv = fa3bwd::layout::B_c * ladder::device().sm_count + 77;
  expect_backward_correct(fa3bwd::make_problem(attention_shape(1, 2, 1, 70, N_kv, 64, false), seed));
}

// The launch order does not change a CTA's arithmetic: dK and dV are bit-identical head by head,
// in sections of three heads (7 KV heads: sections of 3, 2, 2) and in one section.
TEST(GpuFa3Bwd, TheLaunchOrderLeavesEachTileAlone) {
  FA3BWD_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const fa3bwd::Problem p = fa3bwd::make_problem(attention_shape(7, 2, 1, 300, 300, 64, true), seed);
  const auto ref = ladder::attention_backward_reference(p.s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
  fa3bwd::OnDevice dev(p);
  dev.forward();
  std::vector<float> dK0, dV0;
  for (int most : {1, 3, 0}) {
    dev.backward({fa3bwd::kBestStep, most});
    const std::string what = "heads_per_section " + std::to_string(most);
    EXPECT_TRUE(ladder::matches(dev.dQ_host(), ref.dQ, ladder::kBf16AttentionGrad)) << "dQ, " << what;
    if (most == 1) {
      dK0 = dev.dK_host(), dV0 = dev.dV_host();
      EXPECT_TRUE(ladder::matches(dK0, ref.dK, ladder::kBf16AttentionGrad)) << "dK, " << what;
      EXPECT_TRUE(ladder::matches(dV0, ref.dV, ladder::kBf16AttentionGrad)) << "dV, " << what;
    } else {
      EXPECT_TRUE(fa2tc::bit_identical(dev.dK_host(), dK0)) << "dK, " << what;
      EXPECT_TRUE(fa2tc::bit_identical(dev.dV_host(), dV0)) << "dV, " << what;
    }
  }
}

// Logits 30x larger (the scores' error grows with them; P stays finite).
TEST(GpuFa3Bwd, LargeLogitsStayFiniteAndAccurate) {
  FA3BWD_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 33 : 300;
  for (int d : fa3bwd::kSupportedD)
    for (bool causal : {false, true})
      expect_backward_correct(fa3bwd::make_problem(attention_shape(1, 4, 2, N, N, d, causal), seed, 30.0f), 30.0f);
}

// MQA (one KV head for eight query heads) and a long sequence: every query tile of every
// head of a group walks through one CTA's registers.
TEST(GpuFa3Bwd, MultiQueryAndLongSequence) {
  FA3BWD_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  if (ladder::small_mode()) GTEST_SKIP() << "small mode (compute-sanitizer): the edge cases cover the kernel";
  expect_backward_correct(fa3bwd::make_problem(attention_shape(1, 8, 1, 1000, 1000, 128, true), seed));
  expect_backward_correct(fa3bwd::make_problem(attention_shape(1, 1, 1, 8192, 8192, 64, false), seed));
}

}  // namespace
