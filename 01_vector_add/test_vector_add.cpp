#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "device_buffer.h"
#include "gtest_helpers.h"
#include "thread_model.h"
#include "vector_add.h"

namespace {

TEST(CpuVectorAdd, GridCoversEveryElement) {
  for (std::size_t n : {1u, 255u, 256u, 257u, 1000u}) EXPECT_GE(vadd::blocks_for(n, 256) * 256, n) << n;
  EXPECT_EQ(vadd::blocks_for(256, 256), 1u);
  EXPECT_EQ(vadd::blocks_for(257, 256), 2u);
}

TEST(CpuVectorAdd, EmptyInputIsRejectedBeforeAnyLaunch) {
  for (vadd::Kernel k : vadd::kAll)
    EXPECT_THROW(vadd::vector_add(k, nullptr, nullptr, nullptr, 0), std::invalid_argument);
}

// The CPU model of the kernels' index arithmetic: every element is written by exactly
// one thread, whatever n and the grid, for every kernel.
TEST(CpuThreadModel, EveryElementIsWrittenExactlyOnce) {
  for (std::size_t n : {1u, 3u, 4u, 5u, 19u, 31u, 33u, 255u, 256u, 257u, 1000u, 4093u})
    for (vadd::Kernel k : vadd::kAll) {
      const std::vector<std::size_t> grids = k == vadd::Kernel::OnePerElement
                                                 ? std::vector<std::size_t>{vadd::blocks_for(n, 256) * 256}
                                                 : std::vector<std::size_t>{1, 8, 32, 256, 1024};
      for (std::size_t threads : grids)
        for (int w : vadd::writes_per_element(k, n, threads))
          ASSERT_EQ(w, 1) << vadd::name(k) << " n=" << n << " threads=" << threads;
    }
}

// The float4 kernel: thread t takes float4s t, t + T, ... then at most one tail element.
TEST(CpuThreadModel, Float4ThreadsTakeWholeFloat4sThenTheTail) {
  const auto runs = vadd::runs_of_thread(vadd::Kernel::Float4, 19, 2, 8);  // n4 = 4, tail 16, 17, 18
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].first, 8u);
  EXPECT_EQ(runs[0].width, 4);
  EXPECT_EQ(runs[1].first, 18u);
  EXPECT_EQ(runs[1].width, 1);
  EXPECT_TRUE(vadd::runs_of_thread(vadd::Kernel::Float4, 19, 5, 8).empty());  // 4 float4s, 3 tail elements: idle
}

// Warp-wide loads: closed forms (ceil(n / 32) scalar, ceil(n/4 / 32) float4 + one for
// the tail) against a count of the warps and loop iterations in which any lane is active.
TEST(CpuThreadModel, WarpLoadsMatchACountOverTheGrid) {
  for (std::size_t n : {1u, 4u, 31u, 32u, 33u, 127u, 128u, 129u, 1000u, 4093u, 65536u})
    for (vadd::Kernel k : {vadd::Kernel::GridStride, vadd::Kernel::Float4}) {
      const std::size_t threads = 256;
      std::size_t vector = 0, scalar = 0;
      for (std::size_t warp = 0; warp < threads / 32; ++warp) {
        std::vector<std::size_t> v_iters, s_iters;  // per lane: iterations of each loop
        for (std::size_t lane = 0; lane < 32; ++lane) {
          std::size_t v = 0, sc = 0;
          for (const vadd::Run& r : vadd::runs_of_thread(k, n, warp * 32 + lane, threads)) (r.width == 4 ? v : sc)++;
          v_iters.push_back(v), s_iters.push_back(sc);
        }
        vector += *std::max_element(v_iters.begin(), v_iters.end());
        scalar += *std::max_element(s_iters.begin(), s_iters.end());
      }
      const vadd::WarpLoads w = vadd::warp_loads(k, n);
      EXPECT_EQ(w.vector_loads, vector) << vadd::name(k) << " n=" << n;
      EXPECT_EQ(w.scalar_loads, scalar) << vadd::name(k) << " n=" << n;
    }
  EXPECT_EQ(vadd::warp_loads(vadd::Kernel::OnePerElement, 1u << 28).scalar_loads, (1u << 28) / 32);
  EXPECT_EQ(vadd::warp_loads(vadd::Kernel::Float4, 1u << 28).vector_loads, (1u << 28) / 128);
}

// Sizes around every boundary a kernel has: 1, the float4 width (4), a warp (32),
// the block (256), and sizes that are multiples of none of them.
class GpuVectorAdd : public ::testing::TestWithParam<std::tuple<vadd::Kernel, std::size_t>> {};

TEST_P(GpuVectorAdd, MatchesReferenceEverywhere) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const auto [kernel, n] = GetParam();
  const auto a = ladder::random_uniform(n, seed), b = ladder::random_uniform(n, seed + 1);
  std::vector<double> ref(n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = double(a[i]) + double(b[i]);

  ladder::DeviceBuffer<float> d_a(a), d_b(b), d_c(n);
  d_c.poison();
  vadd::vector_add(kernel, d_a.data(), d_b.data(), d_c.data(), n);
  EXPECT_TRUE(ladder::matches(d_c.download(), ref, ladder::kFp32)) << vadd::name(kernel) << " n=" << n;
}

INSTANTIATE_TEST_SUITE_P(Sizes, GpuVectorAdd,
                         ::testing::Combine(::testing::ValuesIn(vadd::kAll),
                                            ::testing::Values(1, 3, 4, 5, 31, 33, 255, 256, 257, 1000, 4093,
                                                              (1 << 20) + 3)),
                         [](const auto& info) {
                           return std::string(vadd::name(std::get<0>(info.param))) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(GpuVectorAdd, Float4RejectsMisalignedPointers) {
  LADDER_REQUIRE_GPU();
  ladder::DeviceBuffer<float> buf(64);
  EXPECT_THROW(vadd::vector_add(vadd::Kernel::Float4, buf.data() + 1, buf.data(), buf.data() + 32, 8),
               std::invalid_argument);
}

}  // namespace
