#include "timing.h"

#include <algorithm>
#include <cstdio>

#include "cuda_check.h"
#include "device.h"
#include "device_buffer.h"

namespace ladder {

namespace {
struct Event {
  cudaEvent_t e = nullptr;
  Event() { CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};
}  // namespace

void flush_l2() {
  static DeviceBuffer<char> scratch(2 * std::max<std::size_t>(device().l2_bytes, 1 << 20));
  CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, scratch.bytes()));
}

Timing summarise(std::vector<double> t) {
  Timing r;
  r.repeats = static_cast<int>(t.size());
  if (t.empty()) return r;
  std::sort(t.begin(), t.end());
  auto at = [&](double q) { return t[static_cast<std::size_t>(q * (t.size() - 1) + 0.5)]; };
  r.min_ms = t.front();
  r.p10_ms = at(0.1);
  r.median_ms = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  r.p90_ms = at(0.9);
  return r;
}

double time_once_ms(const std::function<void()>& work) {
  Event start, stop;
  CUDA_CHECK(cudaEventRecord(start.e));
  work();
  CUDA_CHECK(cudaEventRecord(stop.e));
  CUDA_CHECK(cudaEventSynchronize(stop.e));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.e, stop.e));
  return ms;
}

Timing time_gpu(const std::function<void()>& work, TimingOptions opt) {
  for (int i = 0; i < opt.warmup; ++i) work();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> times;
  times.reserve(opt.repeats);
  for (int i = 0; i < opt.repeats; ++i) {
    if (opt.flush_l2) flush_l2();
    times.push_back(time_once_ms(work));
  }
  return summarise(std::move(times));
}

std::string Timing::str() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.4f ms (p10 %.4f, p90 %.4f, n=%d)", median_ms, p10_ms, p90_ms, repeats);
  return buf;
}

}  // namespace ladder
