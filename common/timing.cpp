#include "timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

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

double elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.e, stop.e));
  return ms;
}

// A warm-up batch is sized from the previous batch's time per run; the cap keeps the host
// from queueing more launches than the driver buffers when a run takes microseconds.
constexpr long kMaxBatch = 4096;
}  // namespace

double warmup_ms() {
  static const double w = [] {
    const char* env = std::getenv("LADDER_WARMUP_MS");
    if (!env || !*env) return kDefaultWarmupMs;
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (*end != '\0' || !std::isfinite(v) || v < 0 || v > 600000)
      throw std::invalid_argument(
          std::string("LADDER_WARMUP_MS must be a number of milliseconds in [0, 600000], got '") + env + "'");
    return v;
  }();
  return w;
}

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
  return elapsed_ms(start, stop);
}

WarmUp warm_up(const std::function<void()>& work, double min_ms, int min_runs) {
  WarmUp w;
  Event start, stop;
  double per_run_ms = 0;
  while (w.runs < min_runs || w.ms < min_ms) {
    // The first batch is one run: it carries the one-time costs, so its time says little
    // about the next runs; every later batch aims at what is left of min_ms.
    long batch = 1;
    if (w.runs > 0) {
      if (per_run_ms > 0) batch = std::clamp(static_cast<long>(std::ceil((min_ms - w.ms) / per_run_ms)), 1L, kMaxBatch);
      batch = std::max<long>(batch, min_runs - w.runs);
    }
    CUDA_CHECK(cudaEventRecord(start.e));
    for (long i = 0; i < batch; ++i) work();
    CUDA_CHECK(cudaEventRecord(stop.e));
    CUDA_CHECK(cudaEventSynchronize(stop.e));
    const double ms = elapsed_ms(start, stop);
    w.ms += ms;
    w.runs += static_cast<int>(batch);
    per_run_ms = ms / batch;
  }
  return w;
}

std::vector<double> time_repeats(const std::function<void()>& work, int repeats, bool flush) {
  if (repeats < 1) throw std::invalid_argument("time_gpu: repeats must be >= 1, got " + std::to_string(repeats));
  if (flush) flush_l2();  // allocates the flush buffer (once) before any event is queued
  std::unique_ptr<Event[]> start(new Event[repeats]), stop(new Event[repeats]);
  for (int i = 0; i < repeats; ++i) {
    if (flush) flush_l2();
    CUDA_CHECK(cudaEventRecord(start[i].e));
    work();
    CUDA_CHECK(cudaEventRecord(stop[i].e));
  }
  CUDA_CHECK(cudaEventSynchronize(stop[repeats - 1].e));
  std::vector<double> times(repeats);
  for (int i = 0; i < repeats; ++i) times[i] = elapsed_ms(start[i], stop[i]);
  return times;
}

Timing time_gpu(const std::function<void()>& work, TimingOptions opt) {
  const WarmUp w = opt.warmup ? warm_up(work, warmup_ms()) : WarmUp{};
  Timing t = summarise(time_repeats(work, opt.repeats, opt.flush_l2));
  t.warmup_ms = w.ms;
  t.warmup_runs = w.runs;
  return t;
}

std::string Timing::str() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.4f ms (p10 %.4f, p90 %.4f, n=%d)", median_ms, p10_ms, p90_ms, repeats);
  return buf;
}

std::string timing_method() {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "ladder::time_gpu: warm-up >= %g ms and >= %d runs back to back; %d repeats (default), each after an "
                "L2 flush (2x L2 written); CUDA events around the work; median (p10, p90)",
                warmup_ms(), kMinWarmupRuns, kDefaultRepeats);
  return buf;
}

}  // namespace ladder
