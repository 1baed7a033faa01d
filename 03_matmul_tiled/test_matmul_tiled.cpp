#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bank_model.h"
#include "device_buffer.h"
#include "gtest_helpers.h"
#include "matmul_tiled.h"
#include "reference_matmul.h"

namespace {

using tiled::Kernel;

TEST(CpuTiledMatmul, GridCoversEveryElementOfCWithNoEmptyBlocks) {
  for (auto [M, N] : std::vector<std::pair<int, int>>{{1, 1}, {31, 33}, {128, 128}, {129, 4093}, {4096, 127}}) {
    for (Kernel k : tiled::kAll) {
      const tiled::Launch l = tiled::launch_config(k, M, N);
      const std::string what = std::string(tiled::name(k)) + " M=" + std::to_string(M) + " N=" + std::to_string(N);
      EXPECT_GE(l.grid.x * l.tile_n, unsigned(N)) << what;
      EXPECT_LT((l.grid.x - 1) * l.tile_n, unsigned(N)) << what;
      EXPECT_GE(l.grid.y * l.tile_m, unsigned(M)) << what;
      EXPECT_LT((l.grid.y - 1) * l.tile_m, unsigned(M)) << what;
      EXPECT_EQ(l.grid.z, 1u) << what;
      EXPECT_LE(l.block.x * l.block.y * l.block.z, 1024u) << what;
    }
  }
  // The shared-memory kernels: one thread per element of the tile. RegisterTiled: 8 x 8 elements per thread.
  EXPECT_EQ(tiled::launch_config(Kernel::SmemTiled16, 1, 1).block.x, 16u);
  EXPECT_EQ(tiled::launch_config(Kernel::SmemTiled32, 1, 1).block.y, 32u);
  const tiled::Launch r = tiled::launch_config(Kernel::RegisterTiled, 1, 1);
  EXPECT_EQ(r.block.x * r.block.y * 64u, unsigned(r.tile_m * r.tile_n));
}

TEST(CpuTiledMatmul, BadShapesAreRejectedBeforeAnyLaunch) {
  for (Kernel k : tiled::kAll)
    for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {8, -8, 8}})
      EXPECT_THROW(tiled::matmul(k, M, N, K, nullptr, nullptr, nullptr), std::invalid_argument)
          << tiled::name(k) << " M=" << M << " N=" << N << " K=" << K;
}

TEST(CpuTiledMatmul, GridPastCudaLimitIsRejected) {
  for (Kernel k : tiled::kAll) {
    const int most = 65535 * tiled::launch_config(k, 1, 1).tile_m;  // gridDim.y <= 65535
    EXPECT_NO_THROW(tiled::launch_config(k, most, 1)) << tiled::name(k);
    EXPECT_THROW(tiled::launch_config(k, most + 1, 1), std::invalid_argument) << tiled::name(k);
  }
}

TEST(CpuTiledMatmul, RegisterTiledFastPathNeedsWholeTilesAndAlignment) {
  const float* aligned = nullptr;
  const float* misaligned = reinterpret_cast<const float*>(std::uintptr_t{4});
  EXPECT_TRUE(tiled::register_tiled_fast_path(4096, 4096, 4096, aligned, aligned, aligned));
  EXPECT_TRUE(tiled::register_tiled_fast_path(128, 256, 8, aligned, aligned, aligned));
  EXPECT_FALSE(tiled::register_tiled_fast_path(4093, 4096, 4096, aligned, aligned, aligned));
  EXPECT_FALSE(tiled::register_tiled_fast_path(4096, 4000, 4096, aligned, aligned, aligned));
  EXPECT_FALSE(tiled::register_tiled_fast_path(4096, 4096, 4092, aligned, aligned, aligned));
  EXPECT_FALSE(tiled::register_tiled_fast_path(4096, 4096, 4096, misaligned, aligned, aligned));
  EXPECT_FALSE(tiled::register_tiled_fast_path(4096, 4096, 4096, aligned, misaligned, aligned));
  EXPECT_FALSE(tiled::register_tiled_fast_path(4096, 4096, 4096, aligned, aligned, misaligned));
}

// The bank model against the closed forms. A scalar request costs max over banks of the
// distinct words that bank must deliver; a float4 request is 4 quarter-warp phases.
TEST(CpuBankModel, ClosedForms) {
  std::vector<long> words(32);
  for (int stride : {1, 2, 4, 8, 16, 32, 33, 64, 65}) {
    // lane l reads word l * stride: gcd(stride, 32) lanes share each bank they hit.
    int g = 1;
    while (g < 32 && stride % (2 * g) == 0) g *= 2;
    for (int l = 0; l < 32; ++l) words[l] = long(l) * stride;
    EXPECT_EQ(banks::cost(words, 1).wavefronts, g) << "stride " << stride;
  }
  for (int l = 0; l < 32; ++l) words[l] = 7;  // one word for all: a broadcast
  EXPECT_EQ(banks::cost(words, 1).wavefronts, 1);
  for (int l = 0; l < 32; ++l) words[l] = 4L * l;  // consecutive float4s: 4 phases of 128 bytes
  EXPECT_EQ(banks::cost(words, 4).wavefronts, 4);
  EXPECT_EQ(banks::cost(words, 4).ideal, 4);
  for (int l = 0; l < 32; ++l) words[l] = l < 16 ? l : -1;  // half the lanes sit out
  EXPECT_EQ(banks::cost(words, 1).wavefronts, 1);
}

// What the chapter's kernels rely on: its padding turns each conflict into one pass, and
// the unpadded versions really conflict (README, "Shared-memory banks").
TEST(CpuBankModel, ThePaddingOfEachKernelRemovesItsConflict) {
  for (const banks::Scenario& s : banks::scenarios()) {
    const banks::Cost c = s.cost();
    if (s.name.rfind("smem_tiled", 0) == 0) {
      EXPECT_EQ(c.wavefronts, c.ideal) << s.name << ": no padding needed";
    } else if (s.pad == 0) {
      EXPECT_GT(c.wavefronts, c.ideal) << s.name << " without padding";
    } else {
      EXPECT_EQ(c.wavefronts, c.ideal) << s.name << " with pad " << s.pad;
    }
    if (s.pad != 0) continue;
    if (s.name == "32 x 32 tile column read") {
      EXPECT_EQ(c.worst_bank, 32);
    } else if (s.name == "register_tiled A_tile store") {
      EXPECT_EQ(c.worst_bank, 2);
    } else if (s.name.rfind("FA tiles", 0) == 0) {
      EXPECT_EQ(c.wavefronts, 32);  // 8-way in each of 4 phases
    }
  }
}

// Shapes with M != N != K around every boundary the kernels have: 1, the tiles
// (8, 16, 32, 128 and the K step 8), one past and one short of them, sizes that
// are multiples of nothing, and shapes where register_tiled takes its fast path
// (marked *). One fp64 reference per shape, shared by all the kernels.
class GpuTiledMatmul : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(GpuTiledMatmul, EveryKernelMatchesReferenceEverywhere) {
  LADDER_REQUIRE_GPU();
  const auto [M, N, K] = GetParam();
  if (ladder::small_mode() && double(M) * N * K > double(1 << 25)) GTEST_SKIP() << "large shape; LADDER_SMALL is set";
  LADDER_TEST_SEED(seed);
  const auto A = ladder::random_uniform(std::size_t(M) * K, seed),
             B = ladder::random_uniform(std::size_t(K) * N, seed + 1);
  const std::vector<double> ref = ladder::matmul_reference(A, B, M, N, K);

  ladder::DeviceBuffer<float> dA(A), dB(B), dC(std::size_t(M) * N);
  const bool fast = tiled::register_tiled_fast_path(M, N, K, dA.data(), dB.data(), dC.data());
  for (Kernel k : tiled::kAll) {
    dC.poison();
    tiled::matmul(k, M, N, K, dA.data(), dB.data(), dC.data());
    EXPECT_TRUE(ladder::matches(dC.download(), ref, ladder::kFp32))
        << tiled::name(k) << (k == Kernel::RegisterTiled ? (fast ? " (fast path)" : " (guarded path)") : "");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuTiledMatmul,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(31, 33, 1),
                                           std::make_tuple(33, 31, 1000), std::make_tuple(127, 129, 7),
                                           std::make_tuple(129, 130, 9), std::make_tuple(17, 4093, 33),
                                           std::make_tuple(256, 128, 36),     // whole tiles in M and N, not in K
                                           std::make_tuple(128, 128, 8),      // *
                                           std::make_tuple(512, 256, 128),    // *
                                           std::make_tuple(256, 384, 520),    // *
                                           std::make_tuple(768, 1152, 1032),  // *
                                           std::make_tuple(1000, 1000, 1000), std::make_tuple(4093, 127, 1001)),
                         [](const auto& info) {
                           const auto& p = info.param;
                           return "M" + std::to_string(std::get<0>(p)) + "_N" + std::to_string(std::get<1>(p)) + "_K" +
                                  std::to_string(std::get<2>(p));
                         });

// A, B or C that are not 16-byte aligned (a view into a larger buffer, say) must
// send register_tiled down the guarded path, even at a whole-tile shape.
TEST(GpuTiledMatmul, RegisterTiledHandlesMisalignedPointers) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int M = 256, N = 128, K = 64;
  auto A = ladder::random_uniform(std::size_t(M) * K, seed), B = ladder::random_uniform(std::size_t(K) * N, seed + 1);
  const std::vector<double> ref = ladder::matmul_reference(A, B, M, N, K);
  A.insert(A.begin(), 0.0f);  // every operand one float past a 16-byte boundary
  B.insert(B.begin(), 0.0f);
  ladder::DeviceBuffer<float> dA(A), dB(B), dC(std::size_t(M) * N + 1);
  ASSERT_FALSE(tiled::register_tiled_fast_path(M, N, K, dA.data() + 1, dB.data() + 1, dC.data() + 1));
  dC.poison();
  tiled::matmul(Kernel::RegisterTiled, M, N, K, dA.data() + 1, dB.data() + 1, dC.data() + 1);
  std::vector<float> C = dC.download();
  C.erase(C.begin());
  EXPECT_TRUE(ladder::matches(C, ref, ladder::kFp32));
}

}  // namespace
