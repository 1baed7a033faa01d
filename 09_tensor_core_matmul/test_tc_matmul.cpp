// Chapter 09 tests.
//   Cpu*: the layout models of tc_layout.h against the PTX ISA's formulas (written out
//         here again, independently), the ldmatrix address mappings the kernels use,
//         the bank map with and without the swizzle, and the launchers' argument checks.
//   Gpu*: every step at shapes around every boundary (tails of every tile, 1 x N, N x 1,
//         K not a multiple of 8, long K) against the fp64 reference on the bf16-rounded
//         inputs, C poisoned, every element checked.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bf16.h"
#include "compare.h"
#include "device.h"
#include "device_buffer.h"
#include "fit.h"
#include "gtest_helpers.h"
#include "random.h"
#include "reference_matmul.h"
#include "tc_layout.h"
#include "tc_matmul.h"

namespace {

namespace L = tc::layout;
using tcmm::Variant;

bool operator==(L::Coord a, L::Coord b) { return a.row == b.row && a.col == b.col; }
std::string str(L::Coord c) { return "(" + std::to_string(c.row) + ", " + std::to_string(c.col) + ")"; }

// ---- PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" ----------------
// Written as the ISA writes them: element a_i / b_i / c_i of the thread, i counting the
// 16-bit (A, B) or 32-bit (C) elements across its registers in order.
struct Isa {
  static L::Coord a(int lane, int i) {  // A: a0..a7
    const int group = lane >> 2, tig = lane % 4;
    const int row = (i < 2 || (i >= 4 && i < 6)) ? group : group + 8;
    const int col = (i < 4) ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
    return {row, col};
  }
  static L::Coord b(int lane, int i) {  // B: b0..b3, (row = k, col = n)
    const int group = lane >> 2, tig = lane % 4;
    const int row = (i < 2) ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
    return {row, group};
  }
  static L::Coord c(int lane, int i) {  // C, D: c0..c3
    const int group = lane >> 2, tig = lane % 4;
    return {i < 2 ? group : group + 8, tig * 2 + (i & 1)};
  }
  // ldmatrix: "each thread receives a fragment: row = laneid / 4, columns 2 * (laneid % 4) + {0, 1}"
  // of each matrix; the addresses of matrix j's 8 rows come from threads 8j .. 8j + 7.
  static L::Coord ldmatrix(int lane, int h) { return {lane / 4, 2 * (lane % 4) + h}; }
  // wgmma m64nNk16 D: warp w of the warpgroup owns rows 16w..16w+15; d_i like mma's C,
  // repeated every 8 columns: i = 4 j + {0..3} sits in column block j.
  static L::Coord wgmma_d(int thread, int i) {
    const int warp = thread / 32, lane = thread % 32;
    const L::Coord c = Isa::c(lane, i % 4);
    return {16 * warp + c.row, 8 * (i / 4) + c.col};
  }
};

TEST(CpuFragments, MmaAMatchesThePtxIsaAndCoversTheTileOnce) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 8; ++i) {
      const L::Coord model = L::mma_a(lane, i / 2, i % 2);
      EXPECT_TRUE(model == Isa::a(lane, i))
          << "lane " << lane << " a" << i << ": " << str(model) << " vs " << str(Isa::a(lane, i));
      seen.insert({model.row, model.col});
    }
  EXPECT_EQ(seen.size(), 256u);
}

TEST(CpuFragments, MmaBMatchesThePtxIsaAndCoversTheTileOnce) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const L::Coord model = L::mma_b(lane, i / 2, i % 2);
      EXPECT_TRUE(model == Isa::b(lane, i)) << "lane " << lane << " b" << i;
      seen.insert({model.row, model.col});
    }
  EXPECT_EQ(seen.size(), 128u);
}

TEST(CpuFragments, MmaCMatchesThePtxIsaAndCoversTheTileOnce) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      EXPECT_TRUE(L::mma_c(lane, i) == Isa::c(lane, i)) << "lane " << lane << " c" << i;
      seen.insert({L::mma_c(lane, i).row, L::mma_c(lane, i).col});
    }
  EXPECT_EQ(seen.size(), 128u);
}

TEST(CpuFragments, LdmatrixModelMatchesThePtxIsa) {
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(L::ldmatrix_matrix_of_lane(lane) * 8 + L::ldmatrix_row_of_lane(lane), lane);
    for (int h = 0; h < 2; ++h) {
      EXPECT_TRUE(L::ldmatrix_element(lane, h, false) == Isa::ldmatrix(lane, h));
      const L::Coord t = L::ldmatrix_element(lane, h, true), n = Isa::ldmatrix(lane, h);
      EXPECT_TRUE(t.row == n.col && t.col == n.row) << "trans is the transpose";
    }
  }
}

// What ldmatrix.x4 delivers to (lane, register j, half h) when the lanes pass the row
// addresses row_of(l), col_of(l): matrix j's row r is addressed by lane 8j + r.
template <class RowOf, class ColOf>
L::Coord delivered(int lane, int j, int h, RowOf row_of, ColOf col_of) {
  const L::Coord e = L::ldmatrix_element(lane, h, false);  // (row within matrix j, column within it)
  const int addresser = 8 * j + e.row;
  return {row_of(addresser), col_of(addresser) + e.col};
}

TEST(CpuFragments, LdmatrixX4AddressesOfTheKernelsDeliverMmaAFragments) {
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j)
      for (int h = 0; h < 2; ++h) {
        const L::Coord got = delivered(lane, j, h, L::ldsm_a_row, L::ldsm_a_col);
        EXPECT_TRUE(got == L::mma_a(lane, j, h)) << "lane " << lane << " register " << j << " half " << h << ": "
                                                 << str(got) << " vs a fragment " << str(L::mma_a(lane, j, h));
      }
}

TEST(CpuFragments, LdmatrixX4AddressesOfTheKernelsDeliverTwoMmaBFragments) {
  // Registers 0, 1: b0, b1 of the n8 tile at n 0..7; registers 2, 3: of the tile at n 8..15.
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j)
      for (int h = 0; h < 2; ++h) {
        const L::Coord nk = delivered(lane, j, h, L::ldsm_b_row, L::ldsm_b_col);  // (n, k) in B^T
        const L::Coord kn = L::mma_b(lane, j % 2, h);                             // (k, n) in B
        EXPECT_EQ(nk.col, kn.row) << "lane " << lane << " register " << j;
        EXPECT_EQ(nk.row, kn.col + 8 * (j / 2)) << "lane " << lane << " register " << j;
      }
}

TEST(CpuFragments, WgmmaAccumulatorsMatchThePtxIsaAndCoverTheTileOnce) {
  for (int n : {128, 256}) {
    std::set<std::pair<int, int>> seen;
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < n / 2; ++i) {
        const L::Coord model = L::wgmma_d(t, i);
        EXPECT_TRUE(model == Isa::wgmma_d(t, i)) << "thread " << t << " d" << i;
        EXPECT_LT(model.col, n);
        seen.insert({model.row, model.col});
      }
    EXPECT_EQ(seen.size(), std::size_t(64) * n) << "N = " << n;
  }
}

TEST(CpuFragments, WgmmaDescriptorFields) {
  // start 0x1000 >> 4 = 0x100 in bits 0-13, LBO 16 >> 4 = 1 in 16-29, SBO 1024 >> 4 = 64 in
  // 32-45, swizzle mode 1 (128B) in 62-63.
  EXPECT_EQ(L::wgmma_desc(0x1000, 16, 1024, 1), 0x4000004000010100ull);
  const std::uint64_t d = L::wgmma_desc(0x2A3F0, 16, 1024, 1);
  EXPECT_EQ(d & 0x3FFF, 0x2A3F0u >> 4);
  EXPECT_EQ((d >> 16) & 0x3FFF, 1u);
  EXPECT_EQ((d >> 32) & 0x3FFF, 64u);
  EXPECT_EQ((d >> 49) & 0x7, 0u);
  EXPECT_EQ(d >> 62, 1u);
  // Advancing along K by 16 bf16 = 32 bytes moves only the start address field, by 2.
  EXPECT_EQ(L::wgmma_desc(0x1000 + 32, 16, 1024, 1) - L::wgmma_desc(0x1000, 16, 1024, 1), 2u);
}

// ---- banks and the swizzle -----------------------------------------------------------
// Step 4 on other GPUs: three stages (144 KiB) on an H200 and an A100; two (96 KiB) on an
// RTX 30/40/50's 99 KiB; nothing on a T4's 64 KiB (which has no bf16 mma.sync anyway).
TEST(CpuPipeline, EachGpuGetsTheDeepestPipelineThatFits) {
  EXPECT_EQ(tcmm::pipeline_stages(ladder::limits_of("").smem_per_block_optin), 3);
  EXPECT_EQ(tcmm::pipeline_stages(ladder::limits_of("sm80").smem_per_block_optin), 3);
  for (const std::string cap : {"sm86", "sm89", "sm120"})
    EXPECT_EQ(tcmm::pipeline_stages(ladder::limits_of(cap).smem_per_block_optin), 2) << cap;
  EXPECT_EQ(tcmm::pipeline_stages(ladder::limits_of("sm75").smem_per_block_optin), 0);
  EXPECT_EQ(tcmm::tiling(tcmm::Variant::MmaPipeline).stages, 3);  // the H200's, without a GPU
}

TEST(CpuSwizzle, SwizzledLayoutIsAPermutationOfEachRowAndEqualsTmas128B) {
  for (int row = 0; row < 256; ++row) {
    std::set<std::uint32_t> offsets;
    for (int col = 0; col < 64; ++col) {
      const std::uint32_t s = L::swizzled_offset(row, col);
      EXPECT_EQ(s / 128, std::uint32_t(row)) << "stays in its row";
      offsets.insert(s);
      EXPECT_EQ(s, L::swizzle_128b_address(L::plain_offset(row, col))) << "row " << row << " col " << col;
    }
    EXPECT_EQ(offsets.size(), 64u);
  }
}

TEST(CpuSwizzle, PlainLayoutCosts8WavefrontsPerLdmatrixPhaseSwizzledOne) {
  for (int row0 : {0, 8, 64, 120})
    for (int chunk = 0; chunk < 8; ++chunk) {
      std::uint32_t plain[8], swizzled[8];
      for (int r = 0; r < 8; ++r) {
        plain[r] = L::plain_offset(row0 + r, 8 * chunk);
        swizzled[r] = L::swizzled_offset(row0 + r, 8 * chunk);
      }
      EXPECT_EQ(L::ldmatrix_phase_wavefronts(plain), 8) << "rows " << row0 << "+, chunk " << chunk;
      EXPECT_EQ(L::ldmatrix_phase_wavefronts(swizzled), 1) << "rows " << row0 << "+, chunk " << chunk;
    }
}

// The kernels' own ldmatrix.x4 reads (warp piece at (wm, wn), every m16 tile, every k16
// step): each phase of 8 lanes costs 8 wavefronts plain and 1 swizzled, for A and B.
TEST(CpuSwizzle, TheKernelsLdmatrixReadsAreConflictFreeOnlyWhenSwizzled) {
  auto phase_cost = [](bool swizzle, int base_row, int kk, auto row_of, auto col_of, int phase) {
    std::uint32_t addr[8];
    for (int r = 0; r < 8; ++r) {
      const int lane = 8 * phase + r;
      const int row = base_row + row_of(lane), col = kk + col_of(lane);
      addr[r] = swizzle ? L::swizzled_offset(row, col) : L::plain_offset(row, col);
    }
    return L::ldmatrix_phase_wavefronts(addr);
  };
  for (bool swizzle : {false, true})
    for (int base_row : {0, 16, 64, 176})
      for (int kk = 0; kk < 64; kk += 16)
        for (int phase = 0; phase < 4; ++phase) {
          EXPECT_EQ(phase_cost(swizzle, base_row, kk, L::ldsm_a_row, L::ldsm_a_col, phase), swizzle ? 1 : 8);
          EXPECT_EQ(phase_cost(swizzle, base_row, kk, L::ldsm_b_row, L::ldsm_b_col, phase), swizzle ? 1 : 8);
        }
}

// The tile loaders' 16-byte stores: 8 consecutive threads (one phase of a 16-byte store)
// write the 8 chunks of one row: conflict-free in both layouts.
TEST(CpuSwizzle, TileLoaderStoresAreConflictFreeInBothLayouts) {
  for (int row = 0; row < 16; ++row) {
    std::uint32_t plain[8], swizzled[8];
    for (int c = 0; c < 8; ++c) plain[c] = L::plain_offset(row, 8 * c), swizzled[c] = L::swizzled_offset(row, 8 * c);
    EXPECT_EQ(L::ldmatrix_phase_wavefronts(plain), 1);
    EXPECT_EQ(L::ldmatrix_phase_wavefronts(swizzled), 1);
  }
}

// ---- launch checks, no GPU needed --------------------------------------------------------
const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(CpuLaunch, BadShapesAndPointersAreRejectedBeforeAnyLaunch) {
  const auto* A = static_cast<const tcmm::bf16*>(at(256));
  const auto* B = static_cast<const tcmm::bf16*>(at(512));
  auto* C = static_cast<float*>(const_cast<void*>(at(1024)));
  for (Variant v : tcmm::kAll) {
    const std::string who = tcmm::name(v);
    for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{
             {0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {-4, 8, 8}, {8, 8, tcmm::kMaxDim + 1}}) {
      try {
        tcmm::matmul(v, M, N, K, A, B, C);
        ADD_FAILURE() << who << " accepted M=" << M << " N=" << N << " K=" << K;
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(who), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("between 1 and"), std::string::npos) << e.what();
      }
    }
    EXPECT_THROW(tcmm::matmul(v, 8, 8, 8, nullptr, B, C), std::invalid_argument) << who;
    EXPECT_THROW(tcmm::matmul(v, 8, 8, 8, A, nullptr, C), std::invalid_argument) << who;
    EXPECT_THROW(tcmm::matmul(v, 8, 8, 8, A, B, nullptr), std::invalid_argument) << who;
    EXPECT_THROW(tcmm::matmul(v, 8, 8, 8, static_cast<const tcmm::bf16*>(at(257)), B, C), std::invalid_argument)
        << who << ": A not 2-byte aligned";
    EXPECT_THROW(tcmm::matmul(v, 8, 8, 8, A, static_cast<const tcmm::bf16*>(at(513)), C), std::invalid_argument)
        << who << ": Bt not 2-byte aligned";
    EXPECT_THROW(tcmm::matmul(v, 8, 8, 8, A, B, static_cast<float*>(const_cast<void*>(at(1026)))),
                 std::invalid_argument)
        << who << ": C not 4-byte aligned";
    EXPECT_NO_THROW(tcmm::validate(v, 4093, 4095, 4097, A, B, C)) << who;
    EXPECT_NO_THROW(tcmm::validate(v, 1, 65536, 1, A, B, C)) << who;
  }
}

TEST(CpuLaunch, FastPathNeedsSixteenByteRows) {
  EXPECT_TRUE(tcmm::fast_path(4096, 4096, 4096, at(0), at(0)));
  EXPECT_TRUE(tcmm::fast_path(4093, 4095, 8, at(16), at(32)));  // M, N tails: zero-filled by the copies
  EXPECT_FALSE(tcmm::fast_path(4096, 4096, 4097, at(0), at(0)));
  EXPECT_FALSE(tcmm::fast_path(4096, 4096, 4092, at(0), at(0)));
  EXPECT_FALSE(tcmm::fast_path(4096, 4096, 4096, at(2), at(0)));
  EXPECT_FALSE(tcmm::fast_path(4096, 4096, 4096, at(0), at(8)));
}

TEST(CpuLaunch, EveryTilingFitsAnH200AndEveryStepSaysWhatItNeeds) {
  std::set<std::string> ideas;
  for (Variant v : tcmm::kAll) {
    const tcmm::Tiling t = tcmm::tiling(v);
    EXPECT_LE(t.smem_bytes, ladder::kH200SmemPerBlock) << tcmm::name(v);
    EXPECT_EQ(t.BK, 64) << tcmm::name(v);
    // Whole warps (whole warpgroups for wgmma), within a CTA's 1024 threads.
    EXPECT_EQ(t.threads % (std::string(tcmm::name(v)).rfind("wgmma", 0) == 0 ? 128 : 32), 0) << tcmm::name(v);
    EXPECT_LE(t.threads, 1024) << tcmm::name(v);
    // The ring holds `stages` bf16 slices of A and of B.
    EXPECT_GE(t.smem_bytes, std::size_t(t.stages) * (t.BM + t.BN) * t.BK * 2) << tcmm::name(v);
    EXPECT_TRUE(ideas.insert(tcmm::idea(v)).second) << tcmm::name(v) << ": its idea repeats another step's";
    if (!ladder::device().available) {
      EXPECT_NE(tcmm::unavailable_reason(v).find("no CUDA device"), std::string::npos) << tcmm::name(v);
    }
  }
  EXPECT_TRUE(tcmm::needs_sm90a(Variant::WgmmaCluster));
  EXPECT_FALSE(tcmm::needs_sm90a(Variant::MmaPipeline));
}

// ---- GPU: every step against the fp64 reference --------------------------------------------

// One problem per shape, shared by every step: bf16-rounded inputs, the fp64 reference,
// and the per-element bound's weights sum_k |a_ik b_jk|.
struct Problem {
  int M, N, K;
  std::uint64_t seed;
  std::vector<float> A, Bt;  // exactly representable in bf16
  std::vector<double> ref, abs_ref;
};

const Problem& problem(int M, int N, int K) {
  static std::map<std::tuple<int, int, int>, Problem> cache;
  auto it = cache.find({M, N, K});
  if (it != cache.end()) return it->second;
  Problem p{M, N, K, ladder::fresh_seed(), {}, {}, {}, {}};
  p.A = ladder::round_to_bf16(ladder::random_uniform(std::size_t(M) * K, p.seed));
  p.Bt = ladder::round_to_bf16(ladder::random_uniform(std::size_t(N) * K, p.seed + 1));
  p.ref = ladder::matmul_reference_bt(p.A, p.Bt, M, N, K);
  std::vector<float> absA(p.A.size()), absB(p.Bt.size());
  for (std::size_t i = 0; i < p.A.size(); ++i) absA[i] = std::fabs(p.A[i]);
  for (std::size_t i = 0; i < p.Bt.size(); ++i) absB[i] = std::fabs(p.Bt[i]);
  p.abs_ref = ladder::matmul_reference_bt(absA, absB, M, N, K);
  return cache.emplace(std::make_tuple(M, N, K), std::move(p)).first->second;
}

// Every element of C: finite (a poisoned element never written stays NaN), within the
// fp32-accumulation bound |c - ref| <= 4 K 2^-24 sum_k |a b| (a worst case: truncating
// adds, any order), and the whole within bf16_gemm_bound(K) in relative l2.
::testing::AssertionResult every_element_matches(const std::vector<float>& C, const Problem& p) {
  const double u = 1.0 / 16777216.0;
  for (std::size_t i = 0; i < C.size(); ++i) {
    const double err = std::fabs(double(C[i]) - p.ref[i]), tol = 4.0 * p.K * u * p.abs_ref[i] + 1e-30;
    if (!(err <= tol)) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "first bad element C[%zu, %zu]: got %.9g, want %.9g (|error| %.3g > %.3g)",
                    i / p.N, i % p.N, double(C[i]), p.ref[i], err, tol);
      return ::testing::AssertionFailure() << buf << "; " << ladder::compare(C, p.ref).str();
    }
  }
  return ladder::matches(C, p.ref, ladder::bf16_gemm_bound(p.K));
}

// Runs `run` on the problem with A, Bt and C at the given element offsets from a
// 256-byte boundary (0: cudaMalloc's alignment) and checks every element of C.
template <class Run>
::testing::AssertionResult run_and_check(const Problem& p, Run run, int offset_a = 0, int offset_b = 0,
                                         int offset_c = 0) {
  std::vector<ladder::bf16> A = ladder::to_bf16(p.A), B = ladder::to_bf16(p.Bt);
  A.insert(A.begin(), offset_a, ladder::bf16{});
  B.insert(B.begin(), offset_b, ladder::bf16{});
  ladder::DeviceBuffer<ladder::bf16> dA(A), dB(B);
  ladder::DeviceBuffer<float> dC(std::size_t(p.M) * p.N + offset_c);
  dC.poison();
  run(dA.data() + offset_a, dB.data() + offset_b, dC.data() + offset_c);
  std::vector<float> C = dC.download();
  C.erase(C.begin(), C.begin() + offset_c);
  return every_element_matches(C, p);
}

using Shape = std::tuple<int, int, int>;
class GpuTcMatmul : public ::testing::TestWithParam<std::tuple<Variant, Shape>> {};

TEST_P(GpuTcMatmul, MatchesTheFp64ReferenceEverywhere) {
  LADDER_REQUIRE_GPU();
  const auto [v, shape] = GetParam();
  const auto [M, N, K] = shape;
  const std::string why = tcmm::unavailable_reason(v);
  if (!why.empty()) GTEST_SKIP() << why;
  if (ladder::small_mode() && double(M) * N * K > double(1 << 25)) GTEST_SKIP() << "large shape; LADDER_SMALL is set";
  const Problem& p = problem(M, N, K);
  SCOPED_TRACE("seed " + std::to_string(p.seed) + " (replay with LADDER_SEED=" + std::to_string(p.seed) + ")");
  const bool fast = tcmm::fast_path(M, N, K, reinterpret_cast<const void*>(256), reinterpret_cast<const void*>(256));
  EXPECT_TRUE(run_and_check(
      p, [&](const ladder::bf16* A, const ladder::bf16* B, float* C) { tcmm::matmul(v, M, N, K, A, B, C); }))
      << tcmm::name(v) << " M=" << M << " N=" << N << " K=" << K << (fast ? " (fast path)" : " (guarded path)");
}

// Around every boundary the steps have: 1 x N and N x 1, tiles exactly (128 x 256 x 64),
// one short and one past them, K not a multiple of 8 (the guarded path), K = 1, long K.
INSTANTIATE_TEST_SUITE_P(Shapes, GpuTcMatmul,
                         ::testing::Combine(::testing::ValuesIn(tcmm::kAll),
                                            ::testing::Values(Shape{1, 4096, 64}, Shape{4096, 1, 64}, Shape{2, 3, 5},
                                                              Shape{3, 5, 1}, Shape{128, 256, 64}, Shape{129, 257, 72},
                                                              Shape{127, 255, 8}, Shape{300, 520, 77},
                                                              Shape{1021, 1031, 1019}, Shape{1000, 1000, 1000},
                                                              Shape{256, 512, 4096}, Shape{4093, 4095, 4097})),
                         [](const auto& info) {
                           const Shape s = std::get<1>(info.param);
                           return std::string(tcmm::name(std::get<0>(info.param))) + "_M" +
                                  std::to_string(std::get<0>(s)) + "_N" + std::to_string(std::get<1>(s)) + "_K" +
                                  std::to_string(std::get<2>(s));
                         });

// A, Bt not 16-byte aligned (views into larger buffers) send every step down the guarded
// path even at a whole-tile shape; C one float off its 8-byte alignment stores scalars.
class GpuTcMatmulMisaligned : public ::testing::TestWithParam<Variant> {};

TEST_P(GpuTcMatmulMisaligned, HandlesViewsIntoLargerBuffers) {
  LADDER_REQUIRE_GPU();
  const Variant v = GetParam();
  const std::string why = tcmm::unavailable_reason(v);
  if (!why.empty()) GTEST_SKIP() << why;
  const int M = 256, N = 512, K = 64;
  const Problem& p = problem(M, N, K);
  SCOPED_TRACE("seed " + std::to_string(p.seed));
  auto run = [&](const ladder::bf16* A, const ladder::bf16* B, float* C) {
    EXPECT_FALSE(tcmm::fast_path(M, N, K, A, B));
    tcmm::matmul(v, M, N, K, A, B, C);
  };
  EXPECT_TRUE(run_and_check(p, run, 1, 3, 1)) << tcmm::name(v);
  EXPECT_TRUE(run_and_check(p, run, 0, 4, 0)) << tcmm::name(v) << " (Bt 8 bytes off)";
}

INSTANTIATE_TEST_SUITE_P(Steps, GpuTcMatmulMisaligned, ::testing::ValuesIn(tcmm::kAll),
                         [](const auto& info) { return std::string(tcmm::name(info.param)); });

// The Hopper steps refuse, before any launch, on any device that is not sm_90a.
TEST(GpuTcMatmulDevice, HopperStepsRefuseOtherGpusNamingTheRequirement) {
  LADDER_REQUIRE_GPU();
  const ladder::DeviceInfo& d = ladder::device();
  if (d.cc_major == 9 && d.cc_minor == 0) GTEST_SKIP() << "this GPU is sm_90: the Hopper steps run here";
  ladder::DeviceBuffer<ladder::bf16> A(64), B(64);
  ladder::DeviceBuffer<float> C(64);
  for (Variant v : tcmm::kAll) {
    if (!tcmm::needs_sm90a(v)) continue;
    EXPECT_NE(tcmm::unavailable_reason(v).find(tcmm::kSm90aRequirement), std::string::npos);
    try {
      tcmm::matmul(v, 8, 8, 8, A.data(), B.data(), C.data());
      ADD_FAILURE() << tcmm::name(v) << " launched on " << d.name;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(tcmm::kSm90aRequirement), std::string::npos) << e.what();
    }
  }
}

// The tuning configurations are measured to choose the defaults: they must be right too.
class GpuTcMatmulTuned : public ::testing::TestWithParam<int> {};

TEST_P(GpuTcMatmulTuned, MatchesTheFp64Reference) {
  LADDER_REQUIRE_GPU();
  const std::vector<tcmm::Tuned> all = tcmm::tuning_variants();
  ASSERT_LT(std::size_t(GetParam()), all.size());
  const tcmm::Tuned& t = all[GetParam()];
  if (t.sm90a && !tcmm::unavailable_reason(Variant::WgmmaCluster).empty())
    GTEST_SKIP() << tcmm::unavailable_reason(Variant::WgmmaCluster);
  for (Shape s : {Shape{1021, 1031, 1019}, Shape{300, 520, 77}}) {
    const auto [M, N, K] = s;
    if (ladder::small_mode() && double(M) * N * K > double(1 << 25)) continue;
    const Problem& p = problem(M, N, K);
    SCOPED_TRACE("seed " + std::to_string(p.seed));
    try {
      EXPECT_TRUE(
          run_and_check(p, [&](const ladder::bf16* A, const ladder::bf16* B, float* C) { t.run(M, N, K, A, B, C); }))
          << t.name << " M=" << M << " N=" << N << " K=" << K;
    } catch (const std::invalid_argument& e) {  // a tuning this GPU's shared memory cannot hold: refused, not run
      if (std::string(e.what()).find("shared memory per block") == std::string::npos) throw;
      GTEST_SKIP() << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, GpuTcMatmulTuned, ::testing::Range(0, int(tcmm::tuning_variants().size())),
                         [](const auto& info) { return tcmm::tuning_variants()[info.param].name; });

}  // namespace
