// The harness checks itself: if compare() or the references were wrong, every
// chapter's "PASS" would mean nothing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_shape.h"
#include "attention_variant.h"
#include "bf16.h"
#include "cli.h"
#include "device.h"
#include "dispatch.h"
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

// GQA: the reference must equal plain multi-head attention on K, V with each KV head
// repeated for its g query heads; dK, dV are the sums over those repeats.
TEST(CpuReference, GqaEqualsRepeatedKvHeads) {
  for (bool causal : {false, true}) {
    const ladder::AttentionShape gqa{2, 4, 6, 3, causal, /*H_kv=*/2};
    ladder::AttentionShape mha = gqa;
    mha.H_kv = 0;
    const auto Q = ladder::random_uniform(gqa.elems(), 1), dO = ladder::random_uniform(gqa.elems(), 2);
    const auto K = ladder::random_uniform(gqa.kv_elems(), 3), V = ladder::random_uniform(gqa.kv_elems(), 4);
    std::vector<float> K_rep(mha.kv_elems()), V_rep(mha.kv_elems());
    const std::size_t head = std::size_t(gqa.N) * gqa.d;
    for (int b = 0; b < gqa.B; ++b)
      for (int h = 0; h < gqa.H; ++h) {
        const std::size_t src = (std::size_t(b) * gqa.H_kv + h / gqa.group()) * head, dst = (b * gqa.H + h) * head;
        std::copy_n(K.begin() + src, head, K_rep.begin() + dst);
        std::copy_n(V.begin() + src, head, V_rep.begin() + dst);
      }
    const auto f1 = ladder::attention_forward_reference(gqa, Q.data(), K.data(), V.data());
    const auto f2 = ladder::attention_forward_reference(mha, Q.data(), K_rep.data(), V_rep.data());
    for (std::size_t e = 0; e < f1.O.size(); ++e) ASSERT_NEAR(f1.O[e], f2.O[e], 1e-12);
    const auto g1 = ladder::attention_backward_reference(gqa, Q.data(), K.data(), V.data(), dO.data());
    const auto g2 = ladder::attention_backward_reference(mha, Q.data(), K_rep.data(), V_rep.data(), dO.data());
    for (std::size_t e = 0; e < g1.dQ.size(); ++e) ASSERT_NEAR(g1.dQ[e], g2.dQ[e], 1e-12);
    for (int b = 0; b < gqa.B; ++b)
      for (int kv = 0; kv < gqa.H_kv; ++kv)
        for (std::size_t e = 0; e < head; ++e) {
          double dK = 0, dV = 0;
          for (int h = kv * gqa.group(); h < (kv + 1) * gqa.group(); ++h) {
            dK += g2.dK[(b * gqa.H + h) * head + e];
            dV += g2.dV[(b * gqa.H + h) * head + e];
          }
          ASSERT_NEAR(g1.dK[(std::size_t(b) * gqa.H_kv + kv) * head + e], dK, 1e-12);
          ASSERT_NEAR(g1.dV[(std::size_t(b) * gqa.H_kv + kv) * head + e], dV, 1e-12);
        }
  }
}

// N != N_kv, causal: query i sees keys j <= i + N_kv - N (bottom right); a query that
// sees none gets O = 0 and L = -inf.
TEST(CpuReference, CausalIsAlignedAtTheBottomRight) {
  for (auto [N, N_kv] : {std::pair{3, 5}, std::pair{5, 3}}) {
    const ladder::AttentionShape s{1, 1, N, 2, true, 0, N_kv};
    const auto Q = ladder::random_uniform(s.elems(), 5), K = ladder::random_uniform(s.kv_elems(), 6),
               V = ladder::random_uniform(s.kv_elems(), 7);
    const auto ref = ladder::attention_forward_reference(s, Q.data(), K.data(), V.data());
    for (int i = 0; i < N; ++i) {
      double sum = 0, o[2] = {0, 0};
      for (int j = 0; j < N_kv && j <= i + N_kv - N; ++j) {
        const double e = std::exp((double(Q[2 * i]) * K[2 * j] + double(Q[2 * i + 1]) * K[2 * j + 1]) / std::sqrt(2.0));
        sum += e;
        o[0] += e * V[2 * j];
        o[1] += e * V[2 * j + 1];
      }
      if (sum == 0) {
        EXPECT_EQ(ref.L[i], -std::numeric_limits<double>::infinity()) << "N=" << N << " N_kv=" << N_kv << " i=" << i;
        EXPECT_EQ(ref.O[2 * i], 0.0);
        continue;
      }
      EXPECT_NEAR(ref.L[i], std::log(sum), 1e-12);
      EXPECT_NEAR(ref.O[2 * i], o[0] / sum, 1e-12);
      EXPECT_NEAR(ref.O[2 * i + 1], o[1] / sum, 1e-12);
    }
  }
}

TEST(CpuBf16, RoundsToNearestEvenLikeTheDevice) {
  EXPECT_EQ(ladder::round_to_bf16(1.0f), 1.0f);
  // Near 1, bf16 values are 2^-7 apart (7 stored significand bits).
  EXPECT_EQ(ladder::round_to_bf16(1.0f + 1.0f / 256), 1.0f);               // a tie: to the even neighbour, 1
  EXPECT_EQ(ladder::round_to_bf16(1.0f + 3.0f / 256), 1.0f + 4.0f / 256);  // a tie: to the even neighbour, up
  EXPECT_EQ(ladder::round_to_bf16(1.0f + 1.1f / 256), 1.0f + 2.0f / 256);  // past the tie: up
  EXPECT_EQ(ladder::round_to_bf16(-3.0f), -3.0f);
  EXPECT_TRUE(std::isnan(ladder::round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  const std::vector<float> x{0.1f, -2.5f, 1e-3f};
  EXPECT_EQ(ladder::from_bf16(ladder::to_bf16(x)), ladder::round_to_bf16(x));
}

TEST(CpuBf16, GemmBoundGrowsWithK) {
  EXPECT_LT(ladder::bf16_gemm_bound(64).rel_l2, ladder::bf16_gemm_bound(4096).rel_l2);
  EXPECT_NEAR(ladder::bf16_gemm_bound(4096).rel_l2, 4096.0 / 16777216.0, 1e-15);
  EXPECT_GT(ladder::bf16_gemm_bound(1).rel_l2, 0.0);
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
  // GQA and N_kv != N: only where the chapter says it takes them.
  const ladder::AttentionShape gqa{1, 8, 16, 64, false, 2, 32};
  EXPECT_THROW(ladder::validate(gqa, {64}), std::invalid_argument);
  EXPECT_NO_THROW(ladder::validate(gqa, {64}, ladder::KvHeads::Any));
  EXPECT_THROW(ladder::validate({1, 8, 16, 64, false, 3}, {64}, ladder::KvHeads::Any), std::invalid_argument);
}

TEST(CpuShape, ValidationResolvesTheDefaultsOnce) {
  const ladder::AttentionShape s{2, 8, 512, 64, true};  // H_kv = 0, N_kv = 0: "as Q"
  const ladder::AttentionShape r = ladder::validate(s, {64}, ladder::KvHeads::Any);
  EXPECT_EQ(r.H_kv, 8);
  EXPECT_EQ(r.N_kv, 512);
  EXPECT_EQ(r.str(), s.str());
}

TEST(CpuShape, DerivedShapesNameBothLengths) {
  // A shard of a self-attention problem whose N_kv was spelled out: resetting N alone would
  // keep N_kv = 512 over buffers that hold one 256-key shard.
  const ladder::AttentionShape whole = ladder::attention_shape(1, 4, 4, 512, 512, 64, true);
  const ladder::AttentionShape shard = whole.with_lengths(256, 256);
  EXPECT_EQ(shard.N, 256);
  EXPECT_EQ(shard.nkv(), 256);
  EXPECT_TRUE(shard.self_attention());
  EXPECT_EQ(shard.kv_elems(), shard.elems());
  const ladder::AttentionShape gqa = ladder::attention_shape(1, 8, 2, 100, 300, 128, false).with_lengths(7, 50);
  EXPECT_EQ(gqa.hkv(), 2);
  EXPECT_EQ(gqa.nkv(), 50);
}

TEST(CpuShape, DispatchOnTheHeadDimCallsTheCompiledInstantiation) {
  auto as_int = [](auto D) { return int(D); };
  EXPECT_EQ((ladder::dispatch_d<32, 64, 128>(64, as_int)), 64);
  EXPECT_EQ((ladder::dispatch_d<32, 64, 128>(128, as_int)), 128);
  try {
    ladder::dispatch_d<64, 128>(96, [](auto) {});
    FAIL() << "d=96 dispatched";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("64, 128"), std::string::npos) << e.what();
  }
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
  // Past what an int holds: refused with the range, never truncated.
  EXPECT_EQ(run({"prog", "--n", "3000000000"}), 2);
  EXPECT_EQ(run({"prog", "--n", "99999999999999999999999"}), 2);
}

// What run_main writes to stderr for a body that reads --repeats, --profile and a chapter's own
// GPU-only --only.
std::string gpu_only_note(std::vector<std::string> argv_strings) {
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  testing::internal::CaptureStderr();
  const int rc = ladder::run_main(int(argv.size()), argv.data(), "", [](ladder::Args& a) {
    a.gpu_only({"--only"});
    a.integer("--repeats", 10);
    a.text("--profile");
    a.text("--only");
    a.integer("--n", 10);
    a.done();
    return 0;
  });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 0) << err;
  return err;
}

TEST(CpuCli, GpuOnlyFlagsWithoutAGpuSayTheyDidNothing) {
  const std::string given = gpu_only_note({"prog", "--n", "3", "--repeats", "5", "--only", "a", "--profile", "x"});
  if (ladder::device().available) {
    EXPECT_EQ(given, "");  // on a GPU they did their work
  } else {
    EXPECT_NE(given.find("no GPU here, so --only, --profile, --repeats did nothing"), std::string::npos) << given;
    EXPECT_EQ(std::count(given.begin(), given.end(), '\n'), 1) << given;
  }
  EXPECT_EQ(gpu_only_note({"prog", "--n", "3"}), "");  // none given: nothing to say
}

// run_main's exit code and what it wrote to stderr, for a body that reads the flags it names.
struct Ran {
  int rc;
  std::string err;
};
Ran run_body(std::vector<std::string> argv_strings, const std::function<int(ladder::Args&)>& body) {
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = ladder::run_main(int(argv.size()), argv.data(), "", body);
  const std::string err = testing::internal::GetCapturedStderr();
  testing::internal::GetCapturedStdout();
  return {rc, err};
}

void expect_refused(const Ran& r, const std::string& message) {
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
}

TEST(CpuCli, AValueLeftOutIsSaidToBeMissing) {
  auto reads = [](ladder::Args& a) {
    a.integer("--n", 10);
    a.integers("--list", {1});
    a.choice("--mode", {"a", "b"}, "a");
    a.text("--file", "", "a file name");
    a.done();
    return 0;
  };
  expect_refused(run_body({"prog", "--n"}, reads), "--n is missing its value: a whole number between 1 and 2147483647");
  expect_refused(run_body({"prog", "--n", "--list", "3"}, reads), "--n is missing its value");
  expect_refused(run_body({"prog", "--list"}, reads), "--list is missing its value: a comma-separated list");
  expect_refused(run_body({"prog", "--mode"}, reads), "--mode is missing its value: one of a, b");
  expect_refused(run_body({"prog", "--file="}, reads), "--file is missing its value: a file name");
  expect_refused(run_body({"prog", "--n", "3", "--n", "4"}, reads), "--n is given twice");
  EXPECT_EQ(run_body({"prog", "--n", "3", "--mode", "b", "--file", "x"}, reads).rc, 0);
}

TEST(CpuCli, AFlagThatMeansNothingWithoutAnotherIsRefused) {
  auto reads = [](ladder::Args& a) {
    const std::string profile = a.choice("--profile", {"fp8", "bf16"}, "");
    a.integer("--keys", 128);
    a.integer("--repeats", 10);
    a.done();
    a.needs("--keys", profile == "fp8", "--profile fp8", profile.empty() ? "" : "--profile " + profile);
    a.exclusive("--profile", "one launch", {"--repeats"});
    return 0;
  };
  expect_refused(run_body({"prog", "--keys", "192"}, reads),
                 "--keys only works with --profile fp8: add it, or leave --keys out");
  expect_refused(run_body({"prog", "--profile", "bf16", "--keys", "192"}, reads),
                 "--keys only works with --profile fp8, not with --profile bf16");
  expect_refused(run_body({"prog", "--profile", "fp8", "--repeats", "3"}, reads),
                 "--repeats does nothing with --profile (one launch): leave one of them out");
  EXPECT_EQ(run_body({"prog", "--profile", "fp8", "--keys", "192"}, reads).rc, 0);
  EXPECT_EQ(run_body({"prog", "--repeats", "3"}, reads).rc, 0);
}

TEST(CpuCli, DumpIsCheckedUpFrontButMadeOnlyWhenWritten) {
  const auto base = std::filesystem::temp_directory_path() / "ladder_dump_check";
  std::filesystem::remove_all(base);
  const std::string dir = (base / "new" / "dir").string();
  std::string dumped;
  auto reads = [&](ladder::Args& a) {
    dumped = ladder::common_flags(a).dump_dir;
    a.done();
    return 0;
  };
  // A directory that does not exist yet: accepted, and not made (nothing was written to it).
  const Ran ran = run_body({"prog", "--dump", dir}, reads);
  EXPECT_EQ(ran.rc, 0) << ran.err;
  EXPECT_EQ(dumped, dir);
  EXPECT_FALSE(std::filesystem::exists(base));
  if (!ladder::device().available) {
    EXPECT_NE(ran.err.find("that directory was not created"), std::string::npos) << ran.err;
  }
  // A file where the directory should be, or above it.
  std::filesystem::create_directories(base);
  std::ofstream((base / "file").string()) << "x";
  expect_refused(run_body({"prog", "--dump", (base / "file").string()}, reads), "that is a file, not a directory");
  expect_refused(run_body({"prog", "--dump", (base / "file" / "sub").string()}, reads), "is not a directory");
  // An executable that writes no arrays refuses --dump before checking it.
  expect_refused(run_body({"prog", "--dump", dir},
                          [](ladder::Args& a) {
                            ladder::common_flags(a, "this one writes no arrays");
                            a.done();
                            return 0;
                          }),
                 "--dump: this one writes no arrays");
  std::filesystem::remove_all(base);
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

// The variant contract (attention_variant.h) tells a complete variant from one that lacks a
// question the kernels ask: host-only stand-ins for a kernel's Params, Cfg and variants.
namespace contract {
struct Params {};
struct Cfg {};
struct WithoutVisible {  // everything a backward variant gives but visible()
  static constexpr bool kScoreMod = false;
  struct Queries {
    int visits;
    int head(int) const { return 0; }
    int i(int) const { return 0; }
  };
  template <class C>
  Queries queries(int, int, const Params&) const {
    return {};
  }
  template <class C>
  bool masked(const Queries&, int, int, int, const Params&) const {
    return false;
  }
};
struct Backward : WithoutVisible {
  bool visible(int, int, int, const Params&) const { return true; }
};
struct ModifiesWithoutGradient : Backward {
  static constexpr bool kScoreMod = true;
  float score(float x, int, int, int) const { return x; }
};
struct Forward {
  struct Keys {
    int T_c;
    int j(int) const { return 0; }
    bool masked(int) const { return false; }
  };
  template <class C>
  Keys keys(int, int, const Params&) const {
    return {};
  }
  bool last_first(const Params&) const { return false; }
};
}  // namespace contract

TEST(CpuVariant, TheContractSaysWhatAVariantLacks) {
  using namespace ladder::variant;
  EXPECT_TRUE((BackwardQueries<contract::Backward, contract::Cfg, contract::Params>::value));
  EXPECT_FALSE((BackwardQueries<contract::WithoutVisible, contract::Cfg, contract::Params>::value));
  EXPECT_TRUE(SaysScoreMod<contract::Backward>::value);
  EXPECT_FALSE(ScoreModifier<contract::ModifiesWithoutGradient>::value);
  EXPECT_TRUE((ForwardKeys<contract::Forward, contract::Cfg, contract::Params>::value));
  EXPECT_FALSE((ForwardKeys<contract::Backward, contract::Cfg, contract::Params>::value));
  EXPECT_TRUE((ladder::variant::Backward<contract::Backward, contract::Cfg, contract::Params>::ok));
}

// LADDER_DEVICE_LIMITS: another GPU's limits on this one, only ever lower.
TEST(CpuDevice, CapsGiveAnotherGpusLimitsAndNeverRaiseThem) {
  ladder::DeviceInfo h200;
  h200.available = true, h200.name = "NVIDIA H200", h200.cc_major = 9, h200.cc_minor = 0;
  h200.smem_per_block_optin = ladder::kH200SmemPerBlock, h200.smem_per_sm = 233472;
  const ladder::DeviceInfo rtx = ladder::capped(h200, "sm86");
  EXPECT_EQ(rtx.smem_per_block_optin, 99u * 1024);
  EXPECT_EQ(rtx.cc_major * 10 + rtx.cc_minor, 86);
  EXPECT_NE(rtx.name.find("LADDER_DEVICE_LIMITS=sm86"), std::string::npos) << rtx.name;
  EXPECT_EQ(ladder::capped(h200, "sm80").smem_per_block_optin, 163u * 1024);
  EXPECT_EQ(ladder::capped(h200, "sm75").smem_per_block_optin, 64u * 1024);
  EXPECT_EQ(ladder::capped(h200, "").smem_per_block_optin, ladder::kH200SmemPerBlock);
  ladder::DeviceInfo t4 = ladder::capped(h200, "sm75");
  EXPECT_EQ(ladder::capped(t4, "sm80").smem_per_block_optin, 64u * 1024);  // never raised
  EXPECT_EQ(ladder::capped(t4, "sm80").cc_major * 10 + ladder::capped(t4, "sm80").cc_minor, 75);
  EXPECT_FALSE(ladder::capped(ladder::DeviceInfo{}, "sm86").available);  // no GPU stays no GPU
  try {
    ladder::capped(h200, "rtx4090");
    FAIL() << "an unknown cap was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sm86"), std::string::npos) << e.what();
  }
}
