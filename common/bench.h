// Google Benchmark glue shared by every chapter's benchmark.
//   Each iteration: L2 flushed, then the work timed by CUDA events (manual time).
//   Counters (from the median iteration, so one slow outlier does not move them):
//     ms      median milliseconds
//     GB/s    Work::bytes / median   (omitted when the work moves no counted bytes)
//     TFLOP/s Work::flops / median   (omitted when it does no counted FLOPs)
//   Register with ladder::gpu_benchmark(...) so manual time and units are set.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "work.h"

namespace ladder {

// False (and the benchmark marked skipped, with the reason) when there is no GPU.
bool gpu_or_skip(benchmark::State& state);

void run_gpu(benchmark::State& state, const std::function<void()>& work, const Work& w);

// Device data that outlives one benchmark call. Google Benchmark calls a benchmark
// function several times while it settles the iteration count; generating and
// uploading gigabytes each time would dominate the run. Cached until exit.
//   bench_input<T>(n, seed): n random values in [-1, 1) (the same seed gives the same data),
//                            T = float (default) or ladder::bf16 (the same values, rounded)
//   bench_output<T>(n, slot): n elements of scratch (poisoned once), one buffer per (T, n, slot)
template <class T = float>
const T* bench_input(std::size_t n, std::uint64_t seed);
template <class T = float>
T* bench_output(std::size_t n, int slot = 0);

// benchmark::RegisterBenchmark with UseManualTime and millisecond units.
benchmark::internal::Benchmark* gpu_benchmark(const std::string& name, std::function<void(benchmark::State&)> fn);

}  // namespace ladder
