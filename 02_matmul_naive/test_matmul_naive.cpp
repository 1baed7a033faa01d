#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "coalescing_model.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "matmul_harness.h"
#include "matmul_naive.h"
#include "reference_matmul.h"

namespace {

using naive::Kernel;

TEST(CpuNaiveMatmul, GridCoversEveryElementOfCWithNoEmptyBlocks) {
  for (auto [M, N] : std::vector<std::pair<int, int>>{{1, 1}, {31, 33}, {32, 32}, {33, 1000}, {4093, 127}}) {
    // RowPerX: x walks the M rows of C, y the N columns; ColPerX the other way round.
    for (Kernel k : naive::kAll) {
      const dim3 g = naive::grid(k, M, N);
      const unsigned along_x = k == Kernel::RowPerX ? M : N, along_y = k == Kernel::RowPerX ? N : M;
      EXPECT_GE(g.x * naive::kBlock, along_x) << naive::name(k) << " M=" << M << " N=" << N;
      EXPECT_LT((g.x - 1) * naive::kBlock, along_x) << naive::name(k) << " M=" << M << " N=" << N;
      EXPECT_GE(g.y * naive::kBlock, along_y) << naive::name(k) << " M=" << M << " N=" << N;
      EXPECT_LT((g.y - 1) * naive::kBlock, along_y) << naive::name(k) << " M=" << M << " N=" << N;
      EXPECT_EQ(g.z, 1u);
    }
  }
}

TEST(CpuNaiveMatmul, BadShapesAreRejectedBeforeAnyLaunch) {
  for (Kernel k : naive::kAll)
    for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {-4, 8, 8}})
      EXPECT_THROW(naive::matmul(k, M, N, K, nullptr, nullptr, nullptr), std::invalid_argument)
          << naive::name(k) << " M=" << M << " N=" << N << " K=" << K;
}

TEST(CpuNaiveMatmul, GridPastCudaLimitIsRejected) {
  const int most = 65535 * int(naive::kBlock);  // gridDim.y <= 65535
  EXPECT_NO_THROW(naive::grid(Kernel::RowPerX, 1, most));
  EXPECT_THROW(naive::grid(Kernel::RowPerX, 1, most + 1), std::invalid_argument);
  EXPECT_NO_THROW(naive::grid(Kernel::ColPerX, most, 1));
  EXPECT_THROW(naive::grid(Kernel::ColPerX, most + 1, 1), std::invalid_argument);
}

// The warp model against the closed forms of the README's table: a request costs its
// distinct 32-byte sectors.
TEST(CpuCoalescingModel, OneWarpAtEveryStepMatchesTheClosedForms) {
  using naive::Operand;
  for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{{4096, 4096, 4096}, {64, 48, 40}, {1000, 1000, 8}}) {
    for (int step : {0, 1, 7, K - 1}) {
      // naive_row_per_x: lanes are 32 rows. A[row, k]: 32 addresses K floats apart, one sector
      // each once K >= 8 (32 bytes); B[k, col]: one address; C: a column, one sector per lane.
      const auto a = naive::warp_request(Kernel::RowPerX, Operand::A, M, N, K, 0, 0, 0, step);
      EXPECT_EQ(a.distinct, 32);
      EXPECT_EQ(a.sectors, 32) << "K=" << K;
      EXPECT_EQ(a.lines, K >= 32 ? 32 : K);  // rows 4K bytes apart: 128 / 4K rows share a line
      const auto b = naive::warp_request(Kernel::RowPerX, Operand::B, M, N, K, 0, 0, 0, step);
      EXPECT_EQ(b.distinct, 1);
      EXPECT_EQ(b.sectors, 1);
      EXPECT_EQ(naive::warp_request(Kernel::RowPerX, Operand::C, M, N, K, 0, 0, 0, 0).sectors, 32);
      // naive_col_per_x: lanes are 32 columns. A: one address; B and C: 32 consecutive
      // floats, 4 sectors when the row starts on a 32-byte boundary, else 5.
      EXPECT_EQ(naive::warp_request(Kernel::ColPerX, Operand::A, M, N, K, 0, 0, 0, step).distinct, 1);
      const auto row_b = naive::warp_request(Kernel::ColPerX, Operand::B, M, N, K, 0, 0, 0, step);
      EXPECT_EQ(row_b.distinct, 32);
      EXPECT_EQ(row_b.sectors, (long long)step * N % 8 == 0 ? 4 : 5) << "N=" << N << " step=" << step;
      EXPECT_EQ(row_b.useful_bytes(), 128);
    }
  }
}

TEST(CpuCoalescingModel, LanesPastTheEdgeOfCDoNotTakePart) {
  // M = 20: lanes 20..31 of naive_row_per_x's first warp have no row; N = 20 the same for naive_col_per_x.
  EXPECT_EQ(naive::warp_request(Kernel::RowPerX, naive::Operand::A, 20, 64, 64, 0, 0, 0, 0).active, 20);
  EXPECT_EQ(naive::warp_request(Kernel::ColPerX, naive::Operand::B, 64, 20, 64, 0, 0, 0, 0).active, 20);
  // M = 40: in block y = 1, warp 8 would compute row 32 + 8 = 40: the whole warp sits out.
  EXPECT_EQ(naive::warp_request(Kernel::ColPerX, naive::Operand::B, 40, 64, 64, 0, 1, 8, 0).active, 0);
}

// Over a whole k loop the strided warp asks for K x 32 sectors but only 32 K / 8 distinct
// ones: each sector holds 8 consecutive k of a row, so a cache that keeps the warp's 32
// sectors between steps serves 7 of every 8 requests.
TEST(CpuCoalescingModel, TheLoopRequestsEightTimesTheDistinctSectors) {
  const int K = 256;
  const auto t = naive::loop_traffic(Kernel::RowPerX, naive::Operand::A, 64, 64, K);
  EXPECT_EQ(t.requested_sectors, 32LL * K);
  EXPECT_EQ(t.distinct_sectors, 32LL * K / 8);
  const auto c = naive::loop_traffic(Kernel::ColPerX, naive::Operand::B, 64, 64, K);
  EXPECT_EQ(c.requested_sectors, 4LL * K);
  EXPECT_EQ(c.distinct_sectors, 4LL * K);
}

TEST(CpuMatmulHarness, SampledRowsAreSortedDistinctAndIncludeFirstAndLast) {
  for (int M : {1, 2, 5, 4096}) {
    const std::vector<int> rows = mm::sample_rows(M, 8, 42);
    ASSERT_EQ(int(rows.size()), std::min(M, 8)) << M;
    EXPECT_EQ(rows.front(), 0);
    EXPECT_EQ(rows.back(), M - 1);
    for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_LT(rows[i - 1], rows[i]);
  }
}

TEST(CpuMatmulHarness, ReferenceRowsAgreeWithTheFullReference) {
  LADDER_TEST_SEED(seed);
  const int M = 17, N = 23, K = 19;
  const auto A = ladder::random_uniform(std::size_t(M) * K, seed),
             B = ladder::random_uniform(std::size_t(K) * N, seed + 1);
  const std::vector<double> full = ladder::matmul_reference(A, B, M, N, K);
  const std::vector<int> rows{0, 5, 16};
  const std::vector<double> some = mm::reference_rows(A, B, N, K, rows);
  ASSERT_EQ(some.size(), rows.size() * N);
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (int j = 0; j < N; ++j) EXPECT_NEAR(some[i * N + j], full[std::size_t(rows[i]) * N + j], 1e-12);
}

// Shapes with M != N != K around every boundary the kernels have (1, the 32-wide
// block, sizes that are multiples of nothing), one fp64 reference per shape shared
// by both kernels.
class GpuNaiveMatmul : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(GpuNaiveMatmul, EveryKernelMatchesReferenceEverywhere) {
  LADDER_REQUIRE_GPU();
  const auto [M, N, K] = GetParam();
  if (ladder::small_mode() && double(M) * N * K > double(1 << 25)) GTEST_SKIP() << "large shape; LADDER_SMALL is set";
  LADDER_TEST_SEED(seed);
  const auto A = ladder::random_uniform(std::size_t(M) * K, seed),
             B = ladder::random_uniform(std::size_t(K) * N, seed + 1);
  const std::vector<double> ref = ladder::matmul_reference(A, B, M, N, K);

  ladder::DeviceBuffer<float> dA(A), dB(B), dC(std::size_t(M) * N);
  for (Kernel k : naive::kAll) {
    dC.poison();
    naive::matmul(k, M, N, K, dA.data(), dB.data(), dC.data());
    EXPECT_TRUE(ladder::matches(dC.download(), ref, ladder::kFp32)) << naive::name(k);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuNaiveMatmul,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(31, 33, 1),
                                           std::make_tuple(33, 31, 1000), std::make_tuple(32, 32, 32),
                                           std::make_tuple(17, 4093, 33), std::make_tuple(512, 256, 128),
                                           std::make_tuple(1000, 1000, 1000), std::make_tuple(4093, 127, 1001)),
                         [](const auto& info) {
                           const auto& p = info.param;
                           return "M" + std::to_string(std::get<0>(p)) + "_N" + std::to_string(std::get<1>(p)) + "_K" +
                                  std::to_string(std::get<2>(p));
                         });

}  // namespace
