#include "thread_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace vadd {

std::vector<Run> runs_of_thread(Kernel k, std::size_t n, std::size_t t, std::size_t threads) {
  std::vector<Run> runs;
  switch (k) {
    case Kernel::OnePerElement:  // i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) ...
      if (threads < n) throw std::invalid_argument("one_per_element needs a thread per element");
      if (t < n) runs.push_back({t, 1});
      break;
    case Kernel::GridStride:  // for (i = first; i < n; i += stride)
      for (std::size_t i = t; i < n; i += threads) runs.push_back({i, 1});
      break;
    case Kernel::Float4: {  // float4 i covers elements 4i .. 4i + 3; then the n % 4 tail, one per thread
      const std::size_t n4 = n / 4;
      for (std::size_t i = t; i < n4; i += threads) runs.push_back({4 * i, 4});
      for (std::size_t i = 4 * n4 + t; i < n; i += threads) runs.push_back({i, 1});
      break;
    }
  }
  return runs;
}

std::vector<int> writes_per_element(Kernel k, std::size_t n, std::size_t threads) {
  std::vector<int> writes(n, 0);
  for (std::size_t t = 0; t < threads; ++t)
    for (const Run& r : runs_of_thread(k, n, t, threads))
      for (int e = 0; e < r.width; ++e) {
        if (r.first + e >= n) throw std::logic_error("a thread wrote past n");
        ++writes[r.first + e];
      }
  return writes;
}

WarpLoads warp_loads(Kernel k, std::size_t n) {
  // The 32 lanes of a warp take 32 consecutive indices, so a warp-wide load covers 32
  // consecutive floats (or float4s): ceil(count / 32) of them in all.
  auto warps = [](std::size_t count) { return (count + 31) / 32; };
  if (k != Kernel::Float4) return {0, warps(n)};
  return {warps(n / 4), warps(n % 4)};
}

namespace {
std::string describe(const std::vector<Run>& runs) {
  if (runs.empty()) return "-";
  std::string s;
  for (const Run& r : runs) {
    if (!s.empty()) s += ' ';
    s += r.width == 1 ? std::to_string(r.first)
                      : "[" + std::to_string(r.first) + ".." + std::to_string(r.first + r.width - 1) + "]";
  }
  return s;
}
}  // namespace

void print_thread_model(std::ostream& out, std::size_t n, std::size_t threads, unsigned block, std::size_t n_big) {
  const std::size_t own = blocks_for(n, block) * block;  // one_per_element's grid
  char line[400];
  std::snprintf(line, sizeof line,
                "\nThe first-person view, run on the CPU: n = %zu elements, blocks of %u threads.\n"
                "  one_per_element launches blocks_for(n) = %zu blocks (%zu threads); grid_stride and float4 a fixed\n"
                "  grid of %zu threads. Each row: the elements that thread adds (\"[a..b]\": one float4).\n",
                n, block, own / block, own, threads);
  out << line;
  std::snprintf(line, sizeof line, "  %6s   %-18s %-18s %s\n", "thread", "one_per_element", "grid_stride", "float4");
  out << line;
  for (std::size_t t = 0; t < std::max(own, threads); ++t) {
    const std::string one =
        t < own ? (t < n ? describe(runs_of_thread(Kernel::OnePerElement, n, t, own)) : "- (i >= n: returns)") : "";
    const std::string gs = t < threads ? describe(runs_of_thread(Kernel::GridStride, n, t, threads)) : "";
    const std::string f4 = t < threads ? describe(runs_of_thread(Kernel::Float4, n, t, threads)) : "";
    std::snprintf(line, sizeof line, "  %6zu   %-18s %-18s %s", t, one.c_str(), gs.c_str(), f4.c_str());
    std::string row = line;
    row.erase(row.find_last_not_of(' ') + 1);
    out << row << "\n";
  }
  bool once = true;
  for (Kernel k : kAll)
    for (int w : writes_per_element(k, n, k == Kernel::OnePerElement ? own : threads)) once = once && w == 1;
  out << "  every element written exactly once, by every kernel: " << (once ? "yes" : "NO") << "\n";

  std::snprintf(line, sizeof line, "\nWarp-wide loads to read one input array of n = %zu floats:\n", n_big);
  out << line;
  for (Kernel k : kAll) {
    const WarpLoads w = warp_loads(k, n_big);
    if (k == Kernel::Float4)
      std::snprintf(line, sizeof line,
                    "  %-16s %10zu loads of 512 B (32 lanes x 16 B), + %zu of 128 B for the %zu-element tail\n",
                    name(k), w.vector_loads, w.scalar_loads, n_big % 4);
    else
      std::snprintf(line, sizeof line, "  %-16s %10zu loads of 128 B (32 lanes x 4 B)\n", name(k), w.scalar_loads);
    out << line;
  }
}

void print_thread_csv(std::ostream& out, std::size_t n, std::size_t threads, unsigned block) {
  out << "kernel,thread,first,width\n";
  for (Kernel k : kAll) {
    const std::size_t grid = k == Kernel::OnePerElement ? blocks_for(n, block) * block : threads;
    for (std::size_t t = 0; t < grid; ++t)
      for (const Run& r : runs_of_thread(k, n, t, grid))
        out << name(k) << ',' << t << ',' << r.first << ',' << r.width << '\n';
  }
}

HostTiming host_first_vs_median(std::size_t n, int repeats) {
  if (n == 0 || repeats < 1) throw std::invalid_argument("host_first_vs_median: n and repeats must be >= 1");
  std::vector<float> a(n, 1.0f), b(n, 2.0f);
  // new float[n] leaves c untouched: its pages do not exist yet (a std::vector would
  // zero them, and so pay the first touch before the timer starts).
  const std::unique_ptr<float[]> c(new float[n]);
  auto run = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  HostTiming t{};
  t.first_ms = run();
  std::vector<double> rest;
  for (int r = 0; r < repeats; ++r) rest.push_back(run());
  std::sort(rest.begin(), rest.end());
  t.median_ms = rest[rest.size() / 2];
  t.min_ms = rest.front();
  volatile float sink = c[n / 2];  // keep the loops
  (void)sink;
  return t;
}

}  // namespace vadd
