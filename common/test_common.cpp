// The harness checks itself: if compare() or the references were wrong, every
// chapter's "PASS" would mean nothing.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "attention_shape.h"
#include "cli.h"
#include "gtest_helpers.h"
#include "npy.h"
#include "reference_attention.h"
#include "reference_matmul.h"
#include "reference_softmax.h"

namespace {

TEST(CpuCompare, ExactMatchHasZeroError) {
  const std::vector<float> out{1.0f, -2.0f, 3.5f};
  const auto c = ladder::compare(out, {1.0, -2.0, 3.5});
  EXPECT_EQ(c.rel_l2, 0.0);
  EXPECT_EQ(c.nonfinite, 0u);
  EXPECT_TRUE(c.within(ladder::kFp32));
}

TEST(CpuCompare, RelativeL2IsNormOfDifferenceOverNormOfReference) {
  const auto c = ladder::compare(std::vector<float>{3.0f, 4.0f}, {0.0, 0.0 + 5.0});
  // diff = (3, -1), |diff| = sqrt(10), |ref| = 5
  EXPECT_NEAR(c.rel_l2, std::sqrt(10.0) / 5.0, 1e-12);
  EXPECT_EQ(c.max_abs, 3.0);
  EXPECT_EQ(c.argmax_abs, 0u);
}

TEST(CpuCompare, PoisonedElementIsCaught) {
  std::vector<float> out(100, 1.0f);
  out[42] = std::numeric_limits<float>::quiet_NaN();
  const auto c = ladder::compare(out, std::vector<double>(100, 1.0));
  EXPECT_EQ(c.nonfinite, 1u);
  EXPECT_EQ(c.first_nonfinite, 42u);
  EXPECT_FALSE(c.within(ladder::kFp32));
}

TEST(CpuCompare, PoisonBytesAreNaN) {
  float f;
  std::memset(&f, 0xFF, sizeof f);
  EXPECT_TRUE(std::isnan(f));
  double d;
  std::memset(&d, 0xFF, sizeof d);
  EXPECT_TRUE(std::isnan(d));
}

TEST(CpuCompare, InfIsCaughtAndSizeMismatchFails) {
  EXPECT_FALSE(ladder::compare(std::vector<float>{INFINITY}, {1.0}).within(ladder::kFp32));
  EXPECT_FALSE(ladder::compare(std::vector<float>{1.0f}, {1.0, 2.0}).within(ladder::kFp32));
}

TEST(CpuRandom, SameSeedSameDataFreshSeedDifferent) {
  const auto a = ladder::random_uniform(3'000'000, 7), b = ladder::random_uniform(3'000'000, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, ladder::random_uniform(3'000'000, 8));
  for (float x : a) ASSERT_TRUE(x >= -1.0f && x < 1.0f);
}

TEST(CpuReference, MatmulMatchesTripleLoop) {
  const int M = 5, N = 7, K = 3;
  const auto A = ladder::random_uniform(M * K, 1), B = ladder::random_uniform(K * N, 2);
  const auto C = ladder::matmul_reference(A, B, M, N, K);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k) acc += double(A[i * K + k]) * B[k * N + j];
      EXPECT_NEAR(C[i * N + j], acc, 1e-12);
    }
}

TEST(CpuReference, SoftmaxRowsSumToOneAndSurviveHugeLogits) {
  std::vector<float> X{1.0f, 2.0f, 3.0f, 1e4f, -1e4f, 1e4f};
  const auto P = ladder::softmax_reference(X, 2, 3);
  EXPECT_NEAR(P[0] + P[1] + P[2], 1.0, 1e-15);
  EXPECT_NEAR(P[2] / P[1], std::exp(1.0), 1e-12);
  EXPECT_NEAR(P[3], 0.5, 1e-15);
  EXPECT_EQ(P[4], 0.0);
}

TEST(CpuReference, AttentionMatchesTheDefinitionAndLIsLogsumexp) {
  for (bool causal : {false, true}) {
    const ladder::AttentionShape s{2, 1, 5, 3, causal};
    const auto Q = ladder::random_uniform(s.elems(), 3), K = ladder::random_uniform(s.elems(), 4),
               V = ladder::random_uniform(s.elems(), 5);
    const auto ref = ladder::attention_forward_reference(s, Q.data(), K.data(), V.data());
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < s.N; ++i) {
        std::vector<double> e(s.N);
        double sum = 0;
        for (int j = 0; j < s.N; ++j) {
          double dot = 0;
          for (int k = 0; k < s.d; ++k) dot += double(Q[(h * s.N + i) * s.d + k]) * K[(h * s.N + j) * s.d + k];
          e[j] = (causal && j > i) ? 0.0 : std::exp(dot / std::sqrt(3.0));
          sum += e[j];
        }
        EXPECT_NEAR(ref.L[h * s.N + i], std::log(sum), 1e-12);
        for (int k = 0; k < s.d; ++k) {
          double o = 0;
          for (int j = 0; j < s.N; ++j) o += e[j] / sum * V[(h * s.N + j) * s.d + k];
          EXPECT_NEAR(ref.O[(h * s.N + i) * s.d + k], o, 1e-12);
        }
      }
  }
}

TEST(CpuShape, UnsupportedHeadDimNamesTheSupportedOnes) {
  try {
    ladder::validate({1, 1, 8, 96, false}, {32, 64, 128});
    FAIL() << "d=96 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("d=96"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("32, 64, 128"), std::string::npos);
  }
  EXPECT_THROW(ladder::validate({1, 1, 0, 64, false}, {64}), std::invalid_argument);
  EXPECT_NO_THROW(ladder::validate({2, 3, 1, 64, true}, {64}));
}

int run(std::vector<std::string> argv_strings, long long* n = nullptr) {
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = ladder::run_main(int(argv.size()), argv.data(), "  --n N\n", [&](ladder::Args& a) {
    const long long v = a.integer("--n", 10);
    a.done();
    if (n) *n = v;
    return 0;
  });
  testing::internal::GetCapturedStderr();
  testing::internal::GetCapturedStdout();
  return rc;
}

TEST(CpuCli, BadInputIsAClearErrorWithExitCode2) {
  long long n = 0;
  EXPECT_EQ(run({"prog", "--n", "4093"}, &n), 0);
  EXPECT_EQ(n, 4093);
  EXPECT_EQ(run({"prog", "--n=5"}, &n), 0);
  EXPECT_EQ(n, 5);
  EXPECT_EQ(run({"prog", "--n", "0"}), 2);
  EXPECT_EQ(run({"prog", "--n", "-3"}), 2);
  EXPECT_EQ(run({"prog", "--n", "12x"}), 2);
  EXPECT_EQ(run({"prog", "--n"}), 2);
  EXPECT_EQ(run({"prog", "--bogus"}), 2);
  EXPECT_EQ(run({"prog", "stray"}), 2);
  EXPECT_EQ(run({"prog", "--help"}), 0);
}

TEST(CpuNpy, HeaderIsAlignedAndDataFollows) {
  const auto dir = std::filesystem::temp_directory_path() / "ladder_npy_test";
  ladder::Dumper dump(dir.string());
  const std::vector<float> v{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  dump("x", v, {2, 3});
  std::ifstream f(dir / "x.npy", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(1, 5), "NUMPY");
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (2, 3)"), std::string::npos);
  EXPECT_NE(bytes.find("'<f4'"), std::string::npos);
  ASSERT_EQ(bytes.size(), 10 + header_len + v.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(bytes.data() + 10 + header_len, v.data(), v.size() * sizeof(float)), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
