// TFLOP/s of both naive kernels at 1024^3 and 4096^3, and of cuBLAS SGEMM (fp32,
// no TF32; the anchor) at the same sizes in the same run.
#include "matmul_bench.h"
#include "matmul_naive.h"

namespace {

const bool registered = [] {
  for (int n : {1024, 4096}) {
    for (const mm::Contender<float>& c : naive::contenders()) mm::add_benchmark(c.name, c, n);
    mm::add_benchmark("anchor:cublas_sgemm", mm::cublas_contender<float>(), n);
  }
  return true;
}();

}  // namespace
