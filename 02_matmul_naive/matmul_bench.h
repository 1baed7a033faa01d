// Benchmark registration shared by chapters 02 and 03 (each benchmark binary
// includes it): "<variant>/M=n/N=n/K=n", the anchor named "anchor:cublas_sgemm".
#pragma once

#include <string>

#include "bench.h"
#include "matmul_harness.h"

namespace mm {

inline void bench_gemm(benchmark::State& state, const Contender& c, int n) {
  if (!ladder::gpu_or_skip(state)) return;
  const std::size_t n2 = std::size_t(n) * n;
  const float *A = ladder::bench_input(n2, 1), *B = ladder::bench_input(n2, 2);
  float* C = ladder::bench_output(n2);
  ladder::run_gpu(
      state, [&] { c.run(n, n, n, A, B, C); }, ladder::gemm_work(n, n, n));
}

inline void add_benchmark(const std::string& variant, const Contender& c, int n) {
  const std::string name = variant + "/M=" + std::to_string(n) + "/N=" + std::to_string(n) + "/K=" + std::to_string(n);
  ladder::gpu_benchmark(name, [c, n](benchmark::State& s) { bench_gemm(s, c, n); });
}

}  // namespace mm
