// Google Benchmark glue shared by every chapter's benchmark.
//   Each iteration: L2 flushed, then the work timed by CUDA events (manual time).
//   Counters (from the median iteration, so one slow outlier does not move them):
//     ms      median milliseconds
//     GB/s    Work::bytes / median   (omitted when the work moves no counted bytes)
//     TFLOP/s Work::flops / median   (omitted when it does no counted FLOPs)
//   Register with ladder::gpu_benchmark(...) so manual time and units are set.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

#include "work.h"

namespace ladder {

// False (and the benchmark marked skipped, with the reason) when there is no GPU.
bool gpu_or_skip(benchmark::State& state);

void run_gpu(benchmark::State& state, const std::function<void()>& work, const Work& w);

// benchmark::RegisterBenchmark with UseManualTime and millisecond units.
benchmark::internal::Benchmark* gpu_benchmark(const std::string& name, std::function<void(benchmark::State&)> fn);

}  // namespace ladder
