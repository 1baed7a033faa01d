// Google Benchmark glue shared by every chapter's benchmark.
//   Each benchmark is ONE call of ladder::time_gpu (timing.h: warm-up of W ms, R repeats
//   after L2 flushes, CUDA events, median), the same call a chapter's summary line makes;
//   Google Benchmark runs one iteration whose manual time is that median. So a table row
//   and a summary line of the same kernel, shape and inputs are one method.
//   Counters:
//     ms              the median milliseconds
//     p10_ms, p90_ms  the spread of the repeats; repeats: R
//     warmup_ms       device time of the warm-up before the repeats
//     GB/s    Work::bytes / median   (omitted when the work moves no counted bytes)
//     TFLOP/s Work::flops / median   (omitted when it does no counted FLOPs)
//   Register with ladder::gpu_benchmark(...) so manual time, units and the one iteration are set.
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

// Times `work` with ladder::time_gpu (default options) and sets the state and counters.
void run_gpu(benchmark::State& state, const std::function<void()>& work, const Work& w);

// Device data that outlives one benchmark call. Every variant at a shape reads the same
// inputs; generating and uploading gigabytes for each would dominate the run. Cached until
// exit.
//   bench_input<T>(n, seed): n random values in [-1, 1) (the same seed gives the same data),
//                            T = float (default) or ladder::bf16 (the same values, rounded)
//   bench_output<T>(n, slot): n elements of scratch (poisoned once), one buffer per (T, n, slot);
//                             T = float, ladder::bf16 or std::uint8_t (e4m3 bytes)
template <class T = float>
const T* bench_input(std::size_t n, std::uint64_t seed);
template <class T = float>
T* bench_output(std::size_t n, int slot = 0);

// benchmark::RegisterBenchmark with UseManualTime, millisecond units and Iterations(1): the
// repeats are time_gpu's, so Google Benchmark's own iteration count (--benchmark_min_time)
// does not apply.
benchmark::internal::Benchmark* gpu_benchmark(const std::string& name, std::function<void(benchmark::State&)> fn);

}  // namespace ladder
