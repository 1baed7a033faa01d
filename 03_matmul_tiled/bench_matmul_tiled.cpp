// The whole progression in one run: TFLOP/s of the chapter 02 kernels, the tiled
// kernels of this chapter and cuBLAS SGEMM (fp32, no TF32; the anchor) at 1024^3
// and 4096^3; plus register_tiled and cuBLAS at 4093^3, where register_tiled
// takes its guarded path.
#include "02_matmul_naive/matmul_naive.h"
#include "matmul_bench.h"
#include "matmul_tiled.h"

namespace {

const bool registered = [] {
  for (int n : {1024, 4096}) {
    for (const mm::Contender<float>& c : naive::contenders()) mm::add_benchmark(c.name, c, n);
    for (const mm::Contender<float>& c : tiled::contenders()) mm::add_benchmark(c.name, c, n);
    mm::add_benchmark("anchor:cublas_sgemm", mm::cublas_contender<float>(), n);
  }
  const mm::Contender<float> register_tiled = tiled::contenders().back();
  mm::add_benchmark(register_tiled.name, register_tiled, 4093);
  mm::add_benchmark("anchor:cublas_sgemm", mm::cublas_contender<float>(), 4093);
  return true;
}();

}  // namespace
