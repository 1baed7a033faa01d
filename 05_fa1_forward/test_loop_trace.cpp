// The loop trace (loop_trace.h) against the tile model and the kernel's shared-memory size.
#include <set>
#include <utility>

#include "gtest_helpers.h"
#include "loop_trace.h"
#include "tile_model.h"

namespace {

TEST(CpuFa1LoopTrace, AddsUpToTheTileModel) {
  for (bool causal : {false, true})
    for (int N : {1, 100, 1000, 4093})
      for (int d : {32, 64, 128}) {
        const ladder::AttentionShape s{1, 1, N, d, causal};
        const fa1::Tiles t = fa1::tiles(s, ladder::kH200SmemPerBlock);
        const auto io = fa1::tile_model(s, t, nullptr, nullptr, nullptr).traffic;
        double Q = 0, K = 0, V = 0, O_r = 0, O_w = 0, lm = 0;
        std::set<std::pair<int, int>> pairs;
        int expected_step = 0;
        for (const fa1::Visit& v : fa1::loop_trace(s, t)) {
          Q += v.Q_read, K += v.K_read, V += v.V_read, O_r += v.O_read, O_w += v.O_write, lm += v.lm_read;
          EXPECT_TRUE(pairs.insert({v.i, v.j}).second) << "tile pair visited twice";
          EXPECT_EQ(v.step, expected_step++);
          EXPECT_EQ(v.block, 0);  // one block per head
        }
        EXPECT_EQ(Q, io.Q_read);
        EXPECT_EQ(K, io.K_read);
        EXPECT_EQ(V, io.V_read);
        EXPECT_EQ(O_r, io.O_read);
        EXPECT_EQ(O_w, io.O_write);
        EXPECT_EQ(lm, io.l_read + io.m_read);
        if (!causal) {
          EXPECT_EQ(int(pairs.size()), t.T_r * t.T_c);
        }
      }
}

TEST(CpuFa1LoopTrace, SharedMemoryPartsAddUpToTheKernelsRequest) {
  for (int d : {32, 64, 128}) {
    const fa1::Tiles t = fa1::tiles({1, 1, 4096, d, false}, ladder::kH200SmemPerBlock);
    long floats = 0;
    for (const fa1::SmemPart& p : fa1::smem_parts(d, t.B_r, t.B_c)) floats += p.floats;
    EXPECT_EQ(4 * std::size_t(floats), t.smem_bytes) << "d=" << d;
  }
}

}  // namespace
