#include <string>
#include <tuple>

#include "device_buffer.h"
#include "gtest_helpers.h"
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
