#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "device_buffer.h"
#include "gtest_helpers.h"
#include "reference_softmax.h"
#include "softmax.h"
#include "softmax_cpu.h"

namespace osm {
void PrintTo(Kernel k, std::ostream* os) { *os << name(k); }
}  // namespace osm

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Logits uniform in [-10, 10), then a fraction of them replaced: -inf (masked
// out, as in causal attention), +1e4 and -1e4 (huge, in both directions). Every
// third row starts with a run of -inf, so the online pair starts out empty.
// No row is all -inf: its softmax is not defined.
std::vector<float> logits_with_extremes(int R, int C, std::uint64_t seed) {
  std::vector<float> x = ladder::random_uniform(std::size_t(R) * C, seed, -10.0f, 10.0f);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int i = 0; i < R; ++i) {
    float* row = x.data() + std::size_t(i) * C;
    for (int j = 0; j < C; ++j) {
      const float r = u(rng);
      if (r < 0.15f)
        row[j] = -kInf;
      else if (r < 0.17f)
        row[j] = 1e4f;
      else if (r < 0.19f)
        row[j] = -1e4f;
    }
    if (i % 3 == 0)
      for (int j = 0; j < C / 2; ++j) row[j] = -kInf;
    bool finite = false;
    for (int j = 0; j < C; ++j) finite = finite || row[j] != -kInf;
    if (!finite) row[C - 1] = 0.5f;
  }
  return x;
}

// ---------------------------------------------------------------------------
// CPU: the row algorithms.

std::vector<double> to_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

// Largest |a_j - b_j|. Softmax outputs lie in [0, 1], so this is also relative to the largest output.
double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = a.size() == b.size() ? 0.0 : kInf;
  for (std::size_t j = 0; j < a.size() && j < b.size(); ++j) d = std::max(d, std::fabs(a[j] - b[j]));
  return d;
}

// Random rows of a few lengths: plain, with extremes after a run of -inf, and
// with extremes anywhere.
std::vector<std::vector<float>> cpu_rows(std::uint64_t seed) {
  std::vector<std::vector<float>> rows;
  for (int n : {1, 2, 7, 40, 97}) {
    rows.push_back(ladder::random_uniform(n, seed + n, -10.0f, 10.0f));
    const std::vector<float> two = logits_with_extremes(2, n, seed + 1000 + n);
    rows.emplace_back(two.begin(), two.begin() + n);
    rows.emplace_back(two.begin() + n, two.end());
  }
  return rows;
}

TEST(CpuOnlineSoftmax, EveryBlockSizeGivesTheFullSoftmax) {
  LADDER_TEST_SEED(seed);
  for (const auto& xf : cpu_rows(seed)) {
    const int n = static_cast<int>(xf.size());
    const std::vector<double> ref = ladder::softmax_reference(xf, 1, n);
    const std::vector<double> x = to_double(xf);
    std::vector<double> y;
    std::vector<float> y32;
    osm::safe_softmax(x, y);
    EXPECT_LE(max_diff(y, ref), 1e-13) << "safe, n=" << n;
    osm::online_softmax(x, y);
    EXPECT_LE(max_diff(y, ref), 1e-13) << "online, n=" << n;
    for (int B = 1; B <= n; ++B) {
      osm::blockwise_softmax(x, B, y);
      EXPECT_LE(max_diff(y, ref), 1e-13) << "blocks of " << B << ", n=" << n;
      osm::blockwise_softmax(xf, B, y32);
      EXPECT_TRUE(ladder::matches(y32, ref, ladder::kFp32)) << "fp32, blocks of " << B << ", n=" << n;
    }
  }
}

TEST(CpuOnlineSoftmax, FinalPairIsTheSafeMaxAndDenominator) {
  LADDER_TEST_SEED(seed);
  for (const auto& xf : cpu_rows(seed)) {
    const int n = static_cast<int>(xf.size());
    const std::vector<double> x = to_double(xf);
    std::vector<double> y;
    const osm::MaxSum<double> safe = osm::safe_softmax(x, y);
    const osm::MaxSum<double> online = osm::online_softmax(x, y);
    EXPECT_EQ(online.m, safe.m) << "n=" << n;  // a max is exact in any order
    EXPECT_NEAR(online.l, safe.l, 1e-13 * safe.l) << "n=" << n;
    for (int B = 1; B <= n; ++B) {
      const osm::MaxSum<double> blocks = osm::blockwise_softmax(x, B, y);
      EXPECT_EQ(blocks.m, safe.m) << "B=" << B << " n=" << n;
      EXPECT_NEAR(blocks.l, safe.l, 1e-13 * safe.l) << "B=" << B << " n=" << n;
    }
  }
}

TEST(CpuOnlineSoftmax, AnElementIsABlockOfOne) {
  LADDER_TEST_SEED(seed);
  for (const auto& xf : cpu_rows(seed)) {
    std::vector<float> y;
    std::vector<osm::MaxSum<float>> steps;
    std::vector<osm::BlockStep<float>> blocks;
    osm::online_softmax(xf, y, &steps);
    osm::blockwise_softmax(xf, 1, y, &blocks);
    ASSERT_EQ(steps.size(), blocks.size());
    for (std::size_t j = 0; j < steps.size(); ++j) {
      // The same arithmetic: update(s, x) is merge(s, (x, 1)).
      EXPECT_EQ(steps[j].m, blocks[j].running.m) << j;
      EXPECT_FLOAT_EQ(steps[j].l, blocks[j].running.l) << j;
      if (xf[j] != -kInf) {
        EXPECT_EQ(blocks[j].block.l, 1.0f) << "(x, e^0) for x = " << xf[j];
      }
    }
  }
}

// Any grouping of the merges gives the same pair: what lets a GPU merge its
// threads' pairs in a tree instead of left to right.
TEST(CpuOnlineSoftmax, MergesCanBeGroupedAnyWay) {
  LADDER_TEST_SEED(seed);
  const std::vector<double> x = to_double(logits_with_extremes(1, 64, seed));
  std::vector<osm::MaxSum<double>> pairs;
  for (int j = 0; j < 64; j += 4) pairs.push_back(osm::block_stats(x.data() + j, 4));
  osm::MaxSum<double> left_to_right;
  for (const auto& p : pairs) left_to_right = osm::merge(left_to_right, p);
  while (pairs.size() > 1) {  // a tree, as the warp shuffles do
    std::vector<osm::MaxSum<double>> next;
    for (std::size_t i = 0; i < pairs.size(); i += 2) next.push_back(osm::merge(pairs[i + 1], pairs[i]));
    pairs = next;
  }
  EXPECT_EQ(pairs[0].m, left_to_right.m);
  EXPECT_NEAR(pairs[0].l, left_to_right.l, 1e-13 * left_to_right.l);
}

TEST(CpuOnlineSoftmax, TraceOfOneThreeTwo) {
  std::vector<double> y;
  std::vector<osm::MaxSum<double>> steps;
  osm::online_softmax<double>({1, 3, 2}, y, &steps);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].m, 1.0);
  EXPECT_DOUBLE_EQ(steps[0].l, 1.0);
  EXPECT_EQ(steps[1].m, 3.0);
  EXPECT_DOUBLE_EQ(steps[1].l, std::exp(-2.0) + 1.0);  // the old sum rescaled by e^(1 - 3)
  EXPECT_EQ(steps[2].m, 3.0);
  EXPECT_DOUBLE_EQ(steps[2].l, std::exp(-2.0) + 1.0 + std::exp(-1.0));
  const double l = steps[2].l;
  EXPECT_DOUBLE_EQ(y[0], std::exp(-2.0) / l);
  EXPECT_DOUBLE_EQ(y[1], 1.0 / l);
  EXPECT_DOUBLE_EQ(y[2], std::exp(-1.0) / l);
}

TEST(CpuOnlineSoftmax, NaiveOverflowsInFp16SafeAndOnlineDoNot) {
  const std::vector<float> xf = {12.0f, 11.0f, 10.0f, 2.0f};
  const std::vector<double> ref = ladder::softmax_reference(xf, 1, 4);
  std::vector<osm::Half> x, y;
  for (float v : xf) x.push_back(osm::Half(v));
  auto as_float = [](const std::vector<osm::Half>& v) {
    std::vector<float> f;
    for (const osm::Half& e : v) f.push_back(float(e));
    return f;
  };

  const osm::MaxSum<osm::Half> naive = osm::naive_softmax(x, y);
  EXPECT_TRUE(std::isinf(float(naive.l))) << "e^12 = 162755 > 65504, the largest fp16";
  EXPECT_GT(ladder::compare(as_float(y), ref).nonfinite, 0u);
  osm::safe_softmax(x, y);
  EXPECT_TRUE(ladder::matches(as_float(y), ref, ladder::kFp16)) << "safe";
  osm::online_softmax(x, y);
  EXPECT_TRUE(ladder::matches(as_float(y), ref, ladder::kFp16)) << "online";
}

TEST(CpuOnlineSoftmax, BlockSizeMustBePositive) {
  std::vector<double> y;
  EXPECT_THROW(osm::blockwise_softmax<double>({1, 2}, 0, y), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// CPU: the GPU launcher's checks, which come before any launch.

TEST(CpuSoftmaxKernels, BadShapesAreRejectedBeforeAnyLaunch) {
  osm::RowStats none(0);
  for (osm::Kernel k : osm::kAll) {
    EXPECT_THROW(osm::softmax(k, nullptr, nullptr, 0, 8, none), std::invalid_argument) << osm::name(k);
    EXPECT_THROW(osm::softmax(k, nullptr, nullptr, 8, 0, none), std::invalid_argument) << osm::name(k);
    EXPECT_THROW(osm::softmax(k, nullptr, nullptr, -1, 8, none), std::invalid_argument) << osm::name(k);
    EXPECT_THROW(osm::softmax(k, nullptr, nullptr, 8, -1, none), std::invalid_argument) << osm::name(k);
  }
  EXPECT_THROW(osm::softmax(osm::Kernel::WarpOnChip, nullptr, nullptr, 1, 1025, none), std::invalid_argument);
  // The multi-pass kernels need somewhere to keep (m_i, l_i) between passes.
  EXPECT_THROW(osm::softmax(osm::Kernel::Safe3Pass, nullptr, nullptr, 3, 8, none), std::invalid_argument);
  EXPECT_THROW(osm::softmax(osm::Kernel::Online2Pass, nullptr, nullptr, 3, 8, none), std::invalid_argument);
}

TEST(CpuSoftmaxKernels, BestKernelFollowsTheRowLength) {
  EXPECT_EQ(osm::best_kernel(1), osm::Kernel::WarpOnChip);
  EXPECT_EQ(osm::best_kernel(1024), osm::Kernel::WarpOnChip);
  EXPECT_EQ(osm::best_kernel(1 << 20), osm::Kernel::Online2Pass);  // 4 MB rows fit on no GPU's chip
}

// ---------------------------------------------------------------------------
// GPU: every kernel against the fp64 reference, outputs poisoned first.

struct Shape {
  int R, C;
};
void PrintTo(const Shape& s, std::ostream* os) { *os << s.R << "x" << s.C; }
// 1, the float4 width (4), a warp (32), every register count of the warp
// kernel (C up to 32, 64, ..., 1024, with and without float4), its limit (1024),
// rows longer than one batch of a block, rows longer than shared memory
// (70000), many short rows, and sizes that are multiples of none of these.
const Shape kShapes[] = {{1, 1},    {17, 33},   {17, 32},   {65, 200},   {9, 255},     {9, 508},
                         {3, 301},  {3, 1023},  {33, 1024}, {31, 1025},  {1000, 1000}, {1, 4093},
                         {5, 4096}, {3, 50000}, {2, 70000}, {4099, 127}, {4099, 128},  {262147, 7}};

void expect_softmax(osm::Kernel k, const std::vector<float>& X, int R, int C) {
  const std::vector<double> ref = ladder::softmax_reference(X, R, C);
  ladder::DeviceBuffer<float> d_X(X), d_Y(X.size());
  osm::RowStats stats(R);
  d_Y.poison();
  stats.m.poison();
  stats.l.poison();
  osm::softmax(k, d_X.data(), d_Y.data(), R, C, stats);
  EXPECT_TRUE(ladder::matches(d_Y.download(), ref, ladder::kFp32)) << osm::name(k) << " R=" << R << " C=" << C;
}

class GpuSoftmax : public ::testing::TestWithParam<std::tuple<osm::Kernel, Shape>> {};

// Why this kernel and shape cannot run here, or nullptr.
const char* not_runnable(osm::Kernel k, Shape s) {
  if (!osm::applies(k, s.C)) return "the row does not fit this GPU's shared memory";
  if (ladder::small_mode() && std::size_t(s.R) * s.C > (1u << 18)) return "large shape skipped in LADDER_SMALL mode";
  return nullptr;
}

TEST_P(GpuSoftmax, MatchesReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const auto [k, s] = GetParam();
  if (const char* why = not_runnable(k, s)) GTEST_SKIP() << why;
  expect_softmax(k, ladder::random_uniform(std::size_t(s.R) * s.C, seed, -10.0f, 10.0f), s.R, s.C);
}

TEST_P(GpuSoftmax, MinusInfinityAndHugeLogits) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const auto [k, s] = GetParam();
  if (const char* why = not_runnable(k, s)) GTEST_SKIP() << why;
  expect_softmax(k, logits_with_extremes(s.R, s.C, seed), s.R, s.C);
}

std::vector<std::tuple<osm::Kernel, Shape>> kernel_shapes() {
  std::vector<std::tuple<osm::Kernel, Shape>> all;
  for (osm::Kernel k : osm::kAll)
    for (Shape s : kShapes)
      if (k != osm::Kernel::WarpOnChip || s.C <= osm::max_cols(k)) all.emplace_back(k, s);
  return all;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuSoftmax, ::testing::ValuesIn(kernel_shapes()), [](const auto& info) {
  const Shape s = std::get<1>(info.param);
  return std::string(osm::name(std::get<0>(info.param))) + "_R" + std::to_string(s.R) + "_C" + std::to_string(s.C);
});

// Rows that start off the 16-byte grid cannot use float4: the launcher falls back to scalar packs.
TEST(GpuSoftmaxKernels, MisalignedPointersStillWork) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int R = 5, C = 128;
  const std::vector<float> X = ladder::random_uniform(std::size_t(R) * C, seed, -10.0f, 10.0f);
  const std::vector<double> ref = ladder::softmax_reference(X, R, C);
  ladder::DeviceBuffer<float> d_X(X.size() + 1), d_Y(X.size() + 1);
  CUDA_CHECK(cudaMemcpy(d_X.data() + 1, X.data(), X.size() * sizeof(float), cudaMemcpyHostToDevice));
  osm::RowStats stats(R);
  for (osm::Kernel k : osm::kAll) {
    d_Y.poison();
    osm::softmax(k, d_X.data() + 1, d_Y.data() + 1, R, C, stats);
    std::vector<float> Y = d_Y.download();
    Y.erase(Y.begin());
    EXPECT_TRUE(ladder::matches(Y, ref, ladder::kFp32)) << osm::name(k);
  }
}

TEST(GpuSoftmaxKernels, BlockOnChipRejectsRowsBeyondSharedMemory) {
  LADDER_REQUIRE_GPU();
  const int C = osm::max_cols(osm::Kernel::BlockOnChip) + 1;
  osm::RowStats none(0);
  ladder::DeviceBuffer<float> buf(C);
  EXPECT_THROW(osm::softmax(osm::Kernel::BlockOnChip, buf.data(), buf.data(), 1, C, none), std::invalid_argument);
}

}  // namespace
