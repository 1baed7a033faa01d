// The backward's loop trace (loop_trace.h): coverage, and the rotation that keeps the
// blocks' dQ atomics apart.
#include <set>
#include <utility>
#include <vector>

#include "fit.h"
#include "gtest_helpers.h"
#include "loop_trace.h"

namespace {

TEST(CpuFaBackwardLoopTrace, EveryNeededTilePairIsVisitedOnce) {
  for (bool causal : {false, true})
    for (int N : {1, 64, 100, 1000, 4093})
      for (int d : {32, 64, 128}) {
        const ladder::AttentionShape s{1, 1, N, d, causal};
        const fa2::BackwardTiles t = fa2::backward_tiles(s);
        std::set<std::pair<int, int>> pairs;
        for (const fa2::BackwardVisit& v : fa2::backward_trace(s, t)) {
          EXPECT_TRUE(pairs.insert({v.i, v.j}).second) << "pair visited twice";
          EXPECT_EQ(v.block, v.j);
          // Causal: a query tile that ends before the key tile's first key sees none of it.
          if (causal) {
            EXPECT_GE((v.i + 1) * t.B_r - 1, v.j * t.B_c) << s.str();
          }
        }
        // Dense: all T_r x T_c pairs. Causal (B_r = B_c): the pairs with i >= j.
        EXPECT_EQ(int(pairs.size()), causal ? t.T_r * (t.T_r + 1) / 2 : t.T_r * t.T_c) << s.str();
      }
}

TEST(CpuFaBackwardLoopTrace, RotationKeepsTheBlocksOnDifferentDqTiles) {
  const ladder::AttentionShape s{1, 1, 4096, 64, false};
  const fa2::BackwardTiles t = fa2::backward_tiles(s);
  EXPECT_EQ(fa2::max_blocks_per_dq_tile(fa2::backward_trace(s, t, true)), 1);
  EXPECT_EQ(fa2::max_blocks_per_dq_tile(fa2::backward_trace(s, t, false)), t.T_c);  // all on dQ_0, then dQ_1, ...
}

TEST(CpuFaBackwardLoopTrace, SharedMemoryMatchesTheReadme) {
  // 102.5 KiB per block for d <= 64, 166.5 KiB at d = 128 (README, "Design").
  for (auto [d, kib] : std::vector<std::pair<int, double>>{{64, 102.5}, {128, 166.5}}) {
    long floats = 0;
    for (const fa1::SmemPart& p : fa2::backward_smem_parts(d, fa2::backward_tiles({1, 1, 64, d, false})))
      floats += p.floats;
    EXPECT_EQ(4.0 * floats, kib * 1024) << "d=" << d;
  }
  // dq_kernel (the deterministic path) double-buffers K_j: the top README's "Other GPUs" table.
  for (auto [d, kib] : std::vector<std::pair<int, double>>{{32, 62.5}, {64, 102.5}, {128, 182.5}}) {
    long floats = 0;
    for (const fa1::SmemPart& p : fa2::dq_smem_parts(d, fa2::backward_tiles({1, 1, 64, d, false}))) floats += p.floats;
    EXPECT_EQ(4.0 * floats, kib * 1024) << "d=" << d;
  }
}

// Other GPUs' limits: the measured tiles on an H200; the first smaller ones that fit on an
// A100 (d = 128) and an RTX 30/40/50, each within the limit by the kernels' own formulas
// (the parts above, which add up to what the launcher asks for).
TEST(CpuFaBackwardLoopTrace, EachGpuGetsTheFirstTilesThatFit) {
  auto tiles_on = [](int d, const std::string& cap) {
    const std::size_t limit = ladder::limits_of(cap).smem_per_block_optin;
    const fa2::BackwardTiles t = fa2::backward_tiles({1, 1, 1000, d, false}, limit);
    long dk_dv = 0, dq = 0;
    for (const fa1::SmemPart& p : fa2::backward_smem_parts(d, t)) dk_dv += p.floats;
    for (const fa1::SmemPart& p : fa2::dq_smem_parts(d, t)) dq += p.floats;
    EXPECT_EQ(4 * std::size_t(std::max(dk_dv, dq)), t.smem_bytes) << cap << " d=" << d;
    EXPECT_LE(t.smem_bytes, limit) << cap << " d=" << d;
    return std::to_string(t.B_r) + "x" + std::to_string(t.B_c) + "/" + std::to_string(t.threads);
  };
  EXPECT_EQ(tiles_on(32, ""), "64x64/128");
  EXPECT_EQ(tiles_on(64, ""), "64x64/128");
  EXPECT_EQ(tiles_on(128, ""), "64x64/256");
  EXPECT_EQ(tiles_on(64, "sm80"), "64x64/128");
  EXPECT_EQ(tiles_on(128, "sm80"), "64x32/128");
  for (const std::string cap : {"sm86", "sm89", "sm120"}) {
    EXPECT_EQ(tiles_on(32, cap), "64x64/128");
    EXPECT_EQ(tiles_on(64, cap), "64x32/128");
    EXPECT_EQ(tiles_on(128, cap), "32x32/64");
  }
}

}  // namespace
