// Timing GPU work from the host, the same way in every executable:
//   CUDA events around each repeat (device time, not host time), warm-up first,
//   many repeats, the median reported with the spread, and the L2 flushed before
//   every repeat (a write to a buffer twice the L2), so no repeat starts with its
//   inputs already in cache.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

namespace ladder {

struct TimingOptions {
  int warmup = 3;
  int repeats = 25;
  bool flush_l2 = true;
};

struct Timing {
  double median_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0;
  int repeats = 0;
  std::string str() const;  // "1.234 ms (p10 1.230, p90 1.240, n=25)"
};

// The work must be asynchronous on the default stream (kernels, cudaMemcpyAsync).
Timing time_gpu(const std::function<void()>& work, TimingOptions opt = {});

// Writes a buffer twice the size of the L2 (allocated once).
void flush_l2();

// Event-timed milliseconds of a single run of `work` (after nothing else).
double time_once_ms(const std::function<void()>& work);

Timing summarise(std::vector<double> times_ms);

}  // namespace ladder
