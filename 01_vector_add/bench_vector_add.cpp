// GB/s of each kernel over a range of sizes, and of cudaMemcpy D2D (the anchor)
// at the same sizes in the same run. 2^28 floats = 1 GiB per array, far past L2.
#include <cuda_runtime_api.h>

#include <string>

#include "bench.h"
#include "cuda_check.h"
#include "vector_add.h"

namespace {

void bench_add(benchmark::State& state, vadd::Kernel k, std::size_t n) {
  if (!ladder::gpu_or_skip(state)) return;
  const float *a = ladder::bench_input(n, 1), *b = ladder::bench_input(n, 2);
  float* c = ladder::bench_output(n);
  ladder::run_gpu(
      state, [&] { vadd::vector_add(k, a, b, c, n); }, ladder::vector_add_work(n));
}

void bench_copy(benchmark::State& state, std::size_t n) {
  if (!ladder::gpu_or_skip(state)) return;
  const float* a = ladder::bench_input(n, 1);
  float* c = ladder::bench_output(n);
  ladder::run_gpu(
      state, [&] { CUDA_CHECK(cudaMemcpyAsync(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice)); },
      ladder::copy_work(n));
}

const bool registered = [] {
  for (int log2n = 20; log2n <= 28; log2n += 2) {
    const std::size_t n = std::size_t{1} << log2n;
    const std::string size = "/n=" + std::to_string(n);
    for (vadd::Kernel k : vadd::kAll)
      ladder::gpu_benchmark(std::string(vadd::name(k)) + size, [k, n](benchmark::State& s) { bench_add(s, k, n); });
    ladder::gpu_benchmark("anchor:cudaMemcpy_d2d" + size, [n](benchmark::State& s) { bench_copy(s, n); });
  }
  return true;
}();

}  // namespace
