// The whole progression in one run: TFLOP/s of the chapter 02 kernels, the tiled
// kernels of this chapter and cuBLAS SGEMM (fp32, no TF32; the anchor) at 1024^3
// and 4096^3; plus register_tiled and cuBLAS at 4093^3, where register_tiled
// takes its guarded path.
#include <string>

#include "02_matmul_naive/matmul_bench.h"
#include "matmul_tiled.h"

namespace {

mm::Contender of(tiled::Kernel k) {
  return {tiled::name(k),
          [k](int M, int N, int K, const float* A, const float* B, float* C) { tiled::matmul(k, M, N, K, A, B, C); }};
}

const bool registered = [] {
  for (int n : {1024, 4096}) {
    for (const mm::Contender& c : mm::naive_contenders()) mm::add_benchmark(c.name, c, n);
    for (tiled::Kernel k : tiled::kAll) mm::add_benchmark(tiled::name(k), of(k), n);
    mm::add_benchmark("anchor:cublas_sgemm", mm::cublas_contender(), n);
  }
  mm::add_benchmark(tiled::name(tiled::Kernel::RegisterTiled), of(tiled::Kernel::RegisterTiled), 4093);
  mm::add_benchmark("anchor:cublas_sgemm", mm::cublas_contender(), 4093);
  return true;
}();

}  // namespace
