#include "matmul_harness.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <stdexcept>

#include "cublas_check.h"
#include "random.h"
#include "reference_matmul.h"
#include "work.h"

namespace mm {

std::string Shape::str() const {
  return "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

Shape shape_flags(ladder::Args& args, Shape fallback) {
  auto dim = [&](const char* flag, int value) { return static_cast<int>(args.integer(flag, value, 1, kMaxDim)); };
  const int M = dim("--M", fallback.M), N = dim("--N", fallback.N), K = dim("--K", fallback.K);
  return {M, N, K};
}

template <>
Contender<float> cublas_contender<float>() {
  return {"cublas_sgemm", [](int M, int N, int K, const float* A, const float* B, float* C) {
            ladder::cublas_sgemm(M, N, K, A, B, C);
          }};
}
template <>
Contender<ladder::bf16> cublas_contender<ladder::bf16>() {
  return {"cublas_bf16", [](int M, int N, int K, const ladder::bf16* A, const ladder::bf16* Bt, float* C) {
            ladder::cublas_gemm_bf16(M, N, K, A, Bt, C);
          }};
}

namespace {
// Random values the device type can hold exactly, so the reference sees what the GPU sees.
template <class In>
std::vector<float> representable(std::size_t n, std::uint64_t seed) {
  std::vector<float> v = ladder::random_uniform(n, seed);
  if constexpr (std::is_same_v<In, ladder::bf16>) v = ladder::round_to_bf16(std::move(v));
  return v;
}
template <class In>
std::vector<In> on_device_type(const std::vector<float>& v) {
  if constexpr (std::is_same_v<In, ladder::bf16>) {
    return ladder::to_bf16(v);
  } else {
    return v;
  }
}
std::vector<double> reference(const std::vector<float>& A, const std::vector<float>& B, Shape s, BLayout b) {
  return b == BLayout::KxN ? ladder::matmul_reference(A, B, s.M, s.N, s.K)
                           : ladder::matmul_reference_bt(A, B, s.M, s.N, s.K);
}
}  // namespace

template <class In>
Problem<In>::Problem(Shape shape, std::uint64_t seed)
    : s(shape),
      A(representable<In>(std::size_t(s.M) * s.K, seed)),
      B(representable<In>(std::size_t(s.K) * s.N, seed + 1)),
      dA(on_device_type<In>(A)),
      dB(on_device_type<In>(B)),
      dC(std::size_t(s.M) * s.N) {}

template <class In>
void check_full(ladder::Report& report, const std::vector<Contender<In>>& contenders, Shape s, std::uint64_t seed,
                const ladder::Dumper& dump) {
  Problem<In> p(s, seed);
  constexpr BLayout kB = Family<In>::kB;
  const std::vector<double> ref = reference(p.A, p.B, s, kB);
  report.out() << "every element of C at " << s.str() << " against the fp64 Eigen reference:\n";
  const std::size_t M = s.M, N = s.N, K = s.K;
  dump("A", p.A, {M, K});
  if (kB == BLayout::KxN) {
    dump("B", p.B, {K, N});
  } else {
    dump("Bt", p.B, {N, K});
  }
  dump("C_reference", ref, {M, N});
  for (const Contender<In>& c : contenders) {
    p.dC.poison();
    c.run(s.M, s.N, s.K, p.dA.data(), p.dB.data(), p.dC.data());
    const std::vector<float> C = p.dC.download();
    report.check(c.name, ladder::compare(C, ref), Family<In>::bound(s.K));
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
                                   const std::vector<int>& rows, BLayout b) {
  std::vector<double> C(rows.size() * std::size_t(N), 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double* c = &C[i * N];
    const float* a = &A[std::size_t(rows[i]) * K];
    if (b == BLayout::KxN) {
      // k outer, j inner: B is read along its rows, in the order it is stored.
      for (int k = 0; k < K; ++k) {
        const double a_k = a[k];
        const float* b_k = &B[std::size_t(k) * N];
        for (int j = 0; j < N; ++j) c[j] += a_k * double(b_k[j]);
      }
    } else {
      for (int j = 0; j < N; ++j) {
        const float* bt_j = &B[std::size_t(j) * K];
        double sum = 0.0;
        for (int k = 0; k < K; ++k) sum += double(a[k]) * double(bt_j[k]);
        c[j] = sum;
      }
    }
  }
  return C;
}

template <class In>
void check_rows(ladder::Report& report, const std::vector<Contender<In>>& contenders, Problem<In>& p, int count,
                std::uint64_t seed) {
  const Shape s = p.s;
  const std::vector<int> rows = sample_rows(s.M, count, seed);
  const std::vector<double> ref = reference_rows(p.A, p.B, s.N, s.K, rows, Family<In>::kB);
  report.out() << rows.size() << " rows of C at " << s.str() << " (";
  for (std::size_t i = 0; i < rows.size(); ++i) report.out() << (i ? " " : "") << rows[i];
  report.out() << ") against fp64 dot products:\n";
  for (const Contender<In>& c : contenders) {
    p.dC.poison();
    c.run(s.M, s.N, s.K, p.dA.data(), p.dB.data(), p.dC.data());
    const std::vector<float> C = p.dC.download();
    std::vector<float> picked;
    picked.reserve(ref.size());
    for (int r : rows)
      picked.insert(picked.end(), C.begin() + std::size_t(r) * s.N, C.begin() + std::size_t(r + 1) * s.N);
    report.check(c.name, ladder::compare(picked, ref), Family<In>::bound(s.K));
  }
}

template <class In>
Race time_all(const std::vector<Contender<In>>& kernels, const Contender<In>& anchor, Problem<In>& p,
              const ladder::TimingOptions& opt) {
  const Shape s = p.s;
  const ladder::Work work = ladder::gemm_work(s.M, s.N, s.K, sizeof(In), sizeof(float));
  auto time = [&](const Contender<In>& c) {
    const ladder::Timing t =
        ladder::time_gpu([&] { c.run(s.M, s.N, s.K, p.dA.data(), p.dB.data(), p.dC.data()); }, opt);
    return Result{c.name, t, work.tflops(t.median_ms)};
  };
  // The anchor last, in the benchmark's order (matmul_bench.h): a GPU's clock keeps sinking for
  // seconds under sustained load, so what was timed just before shifts a figure by a few percent.
  Race race;
  for (const Contender<In>& c : kernels) race.kernels.push_back(time(c));
  race.anchor = time(anchor);
  return race;
}

template <class In>
std::string print_race(std::ostream& out, const Race& race, Shape s) {
  out << "\ntimes at " << s.str() << " (median of " << race.anchor.t.repeats
      << ", each kernel after a warm-up of >= " << ladder::warmup_ms() << " ms, L2 flushed before each repeat):\n"
      << "  kernel                median ms   TFLOP/s  x cuBLAS   p10 .. p90 ms\n";
  char line[256];
  auto row = [&](const Result& r, const char* note) {
    std::snprintf(line, sizeof line, "  %-20s %10.3f %9.2f %9.3f   %.3f .. %.3f%s\n", r.name.c_str(), r.t.median_ms,
                  r.tflops, r.tflops / race.anchor.tflops, r.t.p10_ms, r.t.p90_ms, note);
    out << line;
  };
  for (const Result& r : race.kernels) row(r, "");
  row(race.anchor, (std::string("  ") + Family<In>::kAnchorNote).c_str());

  const auto best = std::max_element(race.kernels.begin(), race.kernels.end(),
                                     [](const Result& a, const Result& b) { return a.tflops < b.tflops; });
  if (best == race.kernels.end()) throw std::logic_error("print_race: no kernels were timed");
  std::snprintf(line, sizeof line, "best %s %.2f TFLOP/s = %.3fx %s (%.2f TFLOP/s), %s", best->name.c_str(),
                best->tflops, best->tflops / race.anchor.tflops, Family<In>::kAnchor, race.anchor.tflops,
                s.str().c_str());
  return line;
}

#define LADDER_MM_INSTANTIATE(In)                                                                                     \
  template struct Problem<In>;                                                                                        \
  template void check_full<In>(ladder::Report&, const std::vector<Contender<In>>&, Shape, std::uint64_t,              \
                               const ladder::Dumper&);                                                                \
  template void check_rows<In>(ladder::Report&, const std::vector<Contender<In>>&, Problem<In>&, int, std::uint64_t); \
  template Race time_all<In>(const std::vector<Contender<In>>&, const Contender<In>&, Problem<In>&,                   \
                             const ladder::TimingOptions&);                                                           \
  template std::string print_race<In>(std::ostream&, const Race&, Shape);
LADDER_MM_INSTANTIATE(float)
LADDER_MM_INSTANTIATE(ladder::bf16)
#undef LADDER_MM_INSTANTIATE

}  // namespace mm
