#include "matmul_harness.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <stdexcept>

#include "compare.h"
#include "cublas_check.h"
#include "matmul_naive.h"
#include "random.h"
#include "reference_matmul.h"
#include "work.h"

namespace mm {

std::string Shape::str() const {
  return "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

Shape shape_flags(ladder::Args& args, Shape fallback) {
  auto dim = [&](const char* flag, int value) {
    const long long v = args.integer(flag, value);
    if (v > kMaxDim)
      throw std::invalid_argument(std::string(flag) + " must be between 1 and " + std::to_string(kMaxDim) + ", got " +
                                  std::to_string(v));
    return static_cast<int>(v);
  };
  const int M = dim("--M", fallback.M), N = dim("--N", fallback.N), K = dim("--K", fallback.K);
  return {M, N, K};
}

Contender cublas_contender() {
  return {"cublas_sgemm", [](int M, int N, int K, const float* A, const float* B, float* C) {
            ladder::cublas_sgemm(M, N, K, A, B, C);
          }};
}

std::vector<Contender> naive_contenders() {
  std::vector<Contender> all;
  for (naive::Kernel k : naive::kAll)
    all.push_back({naive::name(k), [k](int M, int N, int K, const float* A, const float* B, float* C) {
                     naive::matmul(k, M, N, K, A, B, C);
                   }});
  return all;
}

Problem::Problem(Shape shape, std::uint64_t seed)
    : s(shape),
      A(ladder::random_uniform(std::size_t(s.M) * s.K, seed)),
      B(ladder::random_uniform(std::size_t(s.K) * s.N, seed + 1)),
      dA(A),
      dB(B),
      dC(std::size_t(s.M) * s.N) {}

void check_full(ladder::Report& report, const std::vector<Contender>& contenders, Shape s, std::uint64_t seed,
                const ladder::Dumper& dump) {
  Problem p(s, seed);
  const std::vector<double> ref = ladder::matmul_reference(p.A, p.B, s.M, s.N, s.K);
  report.out() << "every element of C at " << s.str() << " against the fp64 Eigen reference:\n";
  const std::size_t M = s.M, N = s.N, K = s.K;
  dump("A", p.A, {M, K});
  dump("B", p.B, {K, N});
  dump("C_reference", ref, {M, N});
  for (const Contender& c : contenders) {
    p.dC.poison();
    c.run(s.M, s.N, s.K, p.dA.data(), p.dB.data(), p.dC.data());
    const std::vector<float> C = p.dC.download();
    report.check(c.name, ladder::compare(C, ref), ladder::kFp32);
    dump("C_" + c.name, C, {M, N});
  }
}

std::vector<int> sample_rows(int M, int count, std::uint64_t seed) {
  std::set<int> rows{0, M - 1};
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> pick(0, M - 1);
  while (int(rows.size()) < std::min(count, M)) rows.insert(pick(gen));
  return {rows.begin(), rows.end()};
}

std::vector<double> reference_rows(const std::vector<float>& A, const std::vector<float>& B, int N, int K,
                                   const std::vector<int>& rows) {
  std::vector<double> C(rows.size() * std::size_t(N), 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double* c = &C[i * N];
    const float* a = &A[std::size_t(rows[i]) * K];
    // k outer, j inner: B is read along its rows, in the order it is stored.
    for (int k = 0; k < K; ++k) {
      const double a_k = a[k];
      const float* b = &B[std::size_t(k) * N];
      for (int j = 0; j < N; ++j) c[j] += a_k * double(b[j]);
    }
  }
  return C;
}

void check_rows(ladder::Report& report, const std::vector<Contender>& contenders, Problem& p, int count,
                std::uint64_t seed) {
  const Shape s = p.s;
  const std::vector<int> rows = sample_rows(s.M, count, seed);
  const std::vector<double> ref = reference_rows(p.A, p.B, s.N, s.K, rows);
  report.out() << rows.size() << " rows of C at " << s.str() << " (";
  for (std::size_t i = 0; i < rows.size(); ++i) report.out() << (i ? " " : "") << rows[i];
  report.out() << ") against fp64 dot products:\n";
  for (const Contender& c : contenders) {
    p.dC.poison();
    c.run(s.M, s.N, s.K, p.dA.data(), p.dB.data(), p.dC.data());
    const std::vector<float> C = p.dC.download();
    std::vector<float> picked;
    picked.reserve(ref.size());
    for (int r : rows)
      picked.insert(picked.end(), C.begin() + std::size_t(r) * s.N, C.begin() + std::size_t(r + 1) * s.N);
    report.check(c.name, ladder::compare(picked, ref), ladder::kFp32);
  }
}

Race time_all(const std::vector<Contender>& kernels, const Contender& anchor, Problem& p,
              const ladder::TimingOptions& opt) {
  const Shape s = p.s;
  const ladder::Work work = ladder::gemm_work(s.M, s.N, s.K);
  auto time = [&](const Contender& c) {
    const ladder::Timing t =
        ladder::time_gpu([&] { c.run(s.M, s.N, s.K, p.dA.data(), p.dB.data(), p.dC.data()); }, opt);
    return Result{c.name, t, work.tflops(t.median_ms)};
  };
  Race race{{}, time(anchor)};
  for (const Contender& c : kernels) race.kernels.push_back(time(c));
  return race;
}

std::string print_race(std::ostream& out, const Race& race, Shape s) {
  out << "\ntimes at " << s.str() << " (median of " << race.anchor.t.repeats << ", L2 flushed before each):\n"
      << "  kernel              median ms   TFLOP/s  x cuBLAS   p10 .. p90 ms\n";
  char line[200];
  auto row = [&](const Result& r, const char* note) {
    std::snprintf(line, sizeof line, "  %-18s %10.3f %9.2f %9.3f   %.3f .. %.3f%s\n", r.name.c_str(), r.t.median_ms,
                  r.tflops, r.tflops / race.anchor.tflops, r.t.p10_ms, r.t.p90_ms, note);
    out << line;
  };
  for (const Result& r : race.kernels) row(r, "");
  row(race.anchor, "  (anchor: fp32, no TF32)");

  const auto best = std::max_element(race.kernels.begin(), race.kernels.end(),
                                     [](const Result& a, const Result& b) { return a.tflops < b.tflops; });
  if (best == race.kernels.end()) throw std::logic_error("print_race: no kernels were timed");
  std::snprintf(line, sizeof line, "best %s %.2f TFLOP/s = %.3fx cuBLAS (%.2f TFLOP/s), %s", best->name.c_str(),
                best->tflops, best->tflops / race.anchor.tflops, race.anchor.tflops, s.str().c_str());
  return line;
}

}  // namespace mm
