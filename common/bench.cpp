#include "bench.h"

#include <cuda_runtime_api.h>

#include <map>
#include <utility>
#include <vector>

#include "bf16.h"
#include "cuda_check.h"
#include "device.h"
#include "device_buffer.h"
#include "random.h"
#include "timing.h"

namespace ladder {

bool gpu_or_skip(benchmark::State& state) {
  if (device().available) return true;
  state.SkipWithError("no CUDA device: GPU benchmark skipped");
  return false;
}

void run_gpu(benchmark::State& state, const std::function<void()>& work, const Work& w) {
  const Timing t = time_gpu(work);
  for (auto _ : state) state.SetIterationTime(t.median_ms * 1e-3);
  state.counters["ms"] = t.median_ms;
  state.counters["p10_ms"] = t.p10_ms;
  state.counters["p90_ms"] = t.p90_ms;
  state.counters["repeats"] = t.repeats;
  state.counters["warmup_ms"] = t.warmup_ms;
  if (w.bytes > 0) state.counters["GB/s"] = w.gbps(t.median_ms);
  if (w.flops > 0) state.counters["TFLOP/s"] = w.tflops(t.median_ms);
}

namespace {
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed);
template <>
std::vector<float> random_values<float>(std::size_t n, std::uint64_t seed) {
  return random_uniform(n, seed);
}
template <>
std::vector<bf16> random_values<bf16>(std::size_t n, std::uint64_t seed) {
  return to_bf16(random_uniform(n, seed));
}
}  // namespace

template <class T>
const T* bench_input(std::size_t n, std::uint64_t seed) {
  static std::map<std::pair<std::size_t, std::uint64_t>, DeviceBuffer<T>> cache;
  auto it = cache.find({n, seed});
  if (it == cache.end()) it = cache.emplace(std::make_pair(n, seed), DeviceBuffer<T>(random_values<T>(n, seed))).first;
  return it->second.data();
}

template <class T>
T* bench_output(std::size_t n, int slot) {
  static std::map<std::pair<std::size_t, int>, DeviceBuffer<T>> cache;
  auto it = cache.find({n, slot});
  if (it == cache.end()) {
    it = cache.emplace(std::make_pair(n, slot), DeviceBuffer<T>(n)).first;
    it->second.poison();
  }
  return it->second.data();
}

template const float* bench_input<float>(std::size_t, std::uint64_t);
template const bf16* bench_input<bf16>(std::size_t, std::uint64_t);
template float* bench_output<float>(std::size_t, int);
template bf16* bench_output<bf16>(std::size_t, int);
template std::uint8_t* bench_output<std::uint8_t>(std::size_t, int);  // FP8 (e4m3) outputs

benchmark::internal::Benchmark* gpu_benchmark(const std::string& name, std::function<void(benchmark::State&)> fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::move(fn))
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1);
}

}  // namespace ladder
