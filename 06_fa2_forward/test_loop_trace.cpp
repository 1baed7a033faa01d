// The loop trace (loop_trace.h) against the tile model, the kernel's shared memory, and
// the split-Q property of the O_i micro-tiles.
#include <set>
#include <utility>

#include "gtest_helpers.h"
#include "loop_trace.h"
#include "tile_model.h"

namespace {

TEST(CpuFa2LoopTrace, AddsUpToTheTileModel) {
  for (bool causal : {false, true})
    for (int N : {1, 100, 1000, 4093})
      for (int d : {32, 64, 128}) {
        const ladder::AttentionShape s{1, 1, N, d, causal};
        const fa2::Tiles t = fa2::tiles(s, ladder::kH200SmemPerBlock);
        const auto io = fa2::tile_model(s, t, nullptr, nullptr, nullptr).traffic;
        double Q = 0, K = 0, V = 0, O = 0, L = 0;
        std::set<std::pair<int, int>> pairs;
        for (const fa2::Visit& v : fa2::loop_trace(s, t)) {
          Q += v.Q_read, K += v.K_read, V += v.V_read, O += v.O_write, L += v.L_write;
          EXPECT_TRUE(pairs.insert({v.i, v.j}).second) << "tile pair visited twice";
          EXPECT_EQ(v.block, v.i);
          EXPECT_EQ(v.step, v.j);
        }
        EXPECT_EQ(Q, io.Q_read);
        EXPECT_EQ(K, io.K_read);
        EXPECT_EQ(V, io.V_read);
        EXPECT_EQ(O, io.O_write);
        EXPECT_EQ(L, io.L_write);
        if (!causal) {
          EXPECT_EQ(int(pairs.size()), t.T_r * t.T_c);
        }
      }
}

TEST(CpuFa2LoopTrace, SharedMemoryPartsAddUpToTheKernelsRequest) {
  for (int d : {32, 64, 128}) {
    const fa2::Tiles t = fa2::tiles({1, 1, 4096, d, false}, ladder::kH200SmemPerBlock);
    long floats = 0;
    for (const fa1::SmemPart& p : fa2::smem_parts(d, t.B_r, t.B_c)) floats += p.floats;
    EXPECT_EQ(4 * std::size_t(floats), t.smem_bytes) << "d=" << d;
  }
  // The numbers the README's "Other GPUs" quotes.
  EXPECT_EQ(fa2::tiles({1, 1, 1, 64, false}, ladder::kH200SmemPerBlock).smem_bytes, std::size_t(102.5 * 1024));
  EXPECT_EQ(fa2::tiles({1, 1, 1, 128, false}, ladder::kH200SmemPerBlock).smem_bytes, std::size_t(166.5 * 1024));
}

// Why d > 128 is refused (README): at d = 256 the same tiles would need more shared memory
// than any GPU gives one block.
TEST(CpuFa2LoopTrace, HeadDim256WouldNotFit) {
  EXPECT_EQ(fa2::smem_bytes(256, 128, 64), std::size_t(294.5 * 1024));
  EXPECT_GT(fa2::smem_bytes(256, 128, 64), ladder::kH200SmemPerBlock);
}

TEST(CpuFa2LoopTrace, EveryRowOfOBelongsToOneWarp) {
  for (int d : {32, 64, 128}) {
    const std::vector<int> owner = fa2::o_owner_warps(d);
    std::set<int> warps;
    for (int r = 0; r < 128; ++r) {
      for (int c = 0; c < d; ++c) {
        ASSERT_GE(owner[r * d + c], 0) << "d=" << d << ": element (" << r << ", " << c << ") has no owner";
        EXPECT_EQ(owner[r * d + c], owner[r * d]) << "d=" << d << ": row " << r << " is split between warps";
      }
      warps.insert(owner[r * d]);
    }
    EXPECT_EQ(warps.size(), 8u) << "all 8 warps of the 256-thread block own rows";
  }
}

}  // namespace
