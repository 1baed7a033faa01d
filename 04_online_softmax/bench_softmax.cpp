// GB/s of every kernel that applies, per shape, next to cudaMemcpy D2D of the
// same matrix (the anchor) in the same run. Every matrix is 256-512 MiB, far
// past the 60 MB L2, so each pass of a multi-pass kernel really goes to DRAM.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bench.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "random.h"
#include "softmax.h"

namespace {

struct Shape {
  int R, C;
};
// Square; the headline (32768 x 4096, the 0.8x-copy target); long rows that
// still fit in shared memory; short rows (warp per row); rows that do not fit.
constexpr Shape kShapes[] = {{8192, 8192}, {32768, 4096}, {4096, 32768}, {262144, 128}, {2048, 65536}};

// The executable's logits (uniform in [-10, 10), main.cpp), so that a table row and the summary
// line time the same kernel on the same kind of input. One matrix per shape, drawn once.
const float* logits(const Shape& s) {
  static std::map<std::pair<int, int>, std::unique_ptr<ladder::DeviceBuffer<float>>> cache;
  auto& slot = cache[{s.R, s.C}];
  if (!slot)
    slot.reset(new ladder::DeviceBuffer<float>(ladder::random_uniform(std::size_t(s.R) * s.C, 1, -10.0f, 10.0f)));
  return slot->data();
}

void bench_softmax(benchmark::State& state, osm::Kernel k, Shape s) {
  if (!ladder::gpu_or_skip(state)) return;
  const std::size_t n = std::size_t(s.R) * s.C;
  const float* X = logits(s);
  float* Y = ladder::bench_output(n);
  osm::RowStats stats(s.R);
  ladder::run_gpu(
      state, [&] { osm::softmax(k, X, Y, s.R, s.C, stats); }, ladder::softmax_work(s.R, s.C));
}

void bench_copy(benchmark::State& state, Shape s) {
  if (!ladder::gpu_or_skip(state)) return;
  const std::size_t n = std::size_t(s.R) * s.C;
  const float* X = ladder::bench_input(n, 1);
  float* Y = ladder::bench_output(n);
  ladder::run_gpu(
      state, [&] { CUDA_CHECK(cudaMemcpyAsync(Y, X, n * sizeof(float), cudaMemcpyDeviceToDevice)); },
      ladder::copy_work(n));
}

// osm::applies asks the device for its shared-memory limit only (no kernel is
// touched), so it is safe here, during static initialisation.
const bool registered = [] {
  for (Shape s : kShapes) {
    const std::string keys = "/R=" + std::to_string(s.R) + "/C=" + std::to_string(s.C);
    for (osm::Kernel k : osm::kAll)
      if (osm::applies(k, s.C))
        ladder::gpu_benchmark(osm::name(k) + keys, [k, s](benchmark::State& st) { bench_softmax(st, k, s); });
    ladder::gpu_benchmark("anchor:cudaMemcpy_d2d" + keys, [s](benchmark::State& st) { bench_copy(st, s); });
  }
  return true;
}();

}  // namespace
