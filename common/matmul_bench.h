// Benchmark registration shared by the matmul chapters (02, 03, 09): every benchmark
// binary includes it. Names "<variant>/M=m/N=n/K=k"; the anchor is named
// "anchor:cublas_sgemm" (fp32) or "anchor:cublas_bf16".
#pragma once

#include <string>

#include "bench.h"
#include "matmul_harness.h"

namespace mm {

template <class In>
void bench_gemm(benchmark::State& state, const Contender<In>& c, Shape s) {
  if (!ladder::gpu_or_skip(state)) return;
  const In* A = ladder::bench_input<In>(std::size_t(s.M) * s.K, 1);
  const In* B = ladder::bench_input<In>(std::size_t(s.K) * s.N, 2);
  float* C = ladder::bench_output(std::size_t(s.M) * s.N);
  ladder::run_gpu(
      state, [&] { c.run(s.M, s.N, s.K, A, B, C); }, ladder::gemm_work(s.M, s.N, s.K, sizeof(In), sizeof(float)));
}

template <class In>
void add_benchmark(const std::string& variant, const Contender<In>& c, Shape s) {
  const std::string name =
      variant + "/M=" + std::to_string(s.M) + "/N=" + std::to_string(s.N) + "/K=" + std::to_string(s.K);
  ladder::gpu_benchmark(name, [c, s](benchmark::State& st) { bench_gemm(st, c, s); });
}
// A cube: M = N = K = n.
template <class In>
void add_benchmark(const std::string& variant, const Contender<In>& c, int n) {
  add_benchmark(variant, c, Shape{n, n, n});
}

}  // namespace mm
