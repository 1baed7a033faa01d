// Timing GPU work from the host. One method for every published figure: the chapters'
// summary lines (time_gpu), their Google Benchmarks (bench.h's run_gpu calls time_gpu once
// per benchmark) and the PyTorch anchors (scripts/anchors/torch_anchors.py, the same steps
// in Python):
//   1. Warm-up: the work back to back, without flushes, until at least W ms of device time
//      and at least two runs have passed. The first run pays the one-time costs (module
//      load, cuBLAS's choice of algorithm, first touch of memory); the rest bring the clock
//      to where sustained load keeps it. An idle GPU boosts its SM clock; under heavy work
//      its power limit pulls the clock down (see kDefaultWarmupMs), so work timed right
//      after an idle gap (a correctness check, a host-side setup) runs faster than the same
//      work under load. Memory-bound work draws less power and keeps its clock.
//      W = kDefaultWarmupMs, or LADDER_WARMUP_MS=<ms>
//      in the environment for studies (scripts/timing_study.sh measures what W changes,
//      with the clock and the power sampled beside it).
//   2. R timed repeats (kDefaultRepeats; an executable's --repeats), each after an L2 flush
//      (a write to a buffer twice the L2, so no repeat finds its inputs in cache), with CUDA
//      events around the work only. All repeats are queued before the host waits, so the
//      GPU runs flush, work, flush, work, ... without idle gaps.
//   3. The median, with p10, p90 and n (Timing::str()).
// A summary line and a benchmark row of the same kernel, shape and inputs are then the same
// measurement and differ by run-to-run noise only. Two things still move a compute-bound
// figure by a few percent, and a comparison should hold them equal: the order (after the
// fast step the clock keeps sinking slowly as the die warms, over seconds, so time a kernel
// and its anchor in the same order everywhere) and the input values (they set the power
// drawn: same distribution, and for FP8 the same scaling). Figures that are measured otherwise, on
// purpose: chapter 01's "1st launch" column and its --warmup 0 / --no-flush runs (what the
// steps above are for); Nsight Compute's durations (one launch, serialised, --clock-control
// none); chapter 13's ring times (events on every GPU of the ring, the slowest rank), which
// time their own repeats (warm_up() is there for them).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

namespace ladder {

// W: the power limit acts in two steps under heavy work: within about a tenth of a second
// (the instantaneous limit), then as the power averaged over about a second reaches the
// board's cap. One second covers both; what drifts after it (the die warming) is slower,
// and waiting it out for every figure would take minutes.
inline constexpr double kDefaultWarmupMs = 1000;
inline constexpr int kDefaultRepeats = 30;
inline constexpr int kMinWarmupRuns = 2;

// W for this process: LADDER_WARMUP_MS when set (a number >= 0, else std::invalid_argument),
// otherwise kDefaultWarmupMs.
double warmup_ms();

struct TimingOptions {
  int repeats = kDefaultRepeats;  // R
  bool flush_l2 = true;           // false only to show what the flush is for (chapter 01)
  bool warmup = true;             // false only to show what the warm-up is for (chapter 01)
};

struct Timing {
  double median_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0;
  int repeats = 0;
  double warmup_ms = 0;  // device time the warm-up ran for
  int warmup_runs = 0;
  std::string str() const;  // "1.2340 ms (p10 1.2300, p90 1.2400, n=30)"
};

// The work must be asynchronous on the default stream (kernels, cudaMemcpyAsync).
Timing time_gpu(const std::function<void()>& work, TimingOptions opt = {});

// Step 1 alone: runs `work` back to back until at least min_ms of device time and at least
// min_runs runs have passed (neither: no run). Returns what it ran.
struct WarmUp {
  double ms = 0;
  int runs = 0;
};
WarmUp warm_up(const std::function<void()>& work, double min_ms, int min_runs = kMinWarmupRuns);

// Step 2 alone: the event-timed milliseconds of `repeats` runs.
std::vector<double> time_repeats(const std::function<void()>& work, int repeats, bool flush_l2 = true);

// Writes a buffer twice the size of the L2 (allocated once).
void flush_l2();

// Event-timed milliseconds of a single run of `work` (after nothing else).
double time_once_ms(const std::function<void()>& work);

Timing summarise(std::vector<double> times_ms);

// The method in one line, for logs and the benchmark JSON's context.
std::string timing_method();

}  // namespace ladder
