// ladder_timing_study: what the warm-up changes in a timed figure, and why.
// Two kinds of work at the ends of the ladder: a bf16 cuBLAS GEMM (8192^3, compute-bound,
// the power-hungriest thing a chapter times) and a device-to-device copy of 1 GiB
// (memory-bound). For each warm-up setting in turn:
//   an idle gap (the GPU drops back to its idle state, as between the correctness check and
//   the timing of a chapter executable), the warm-up, then the timed repeats of
//   ladder::time_repeats (L2 flushed, events, median).
// Settings: none; "2 runs", what the executables did before the method had a time-based
// warm-up; and ladder::warm_up with W = 20, 100, 300, 1000, 3000 ms.
// With --csv FILE it writes one row per (work, setting) with the wall-clock time of each
// phase, so scripts/timing_study.sh can put the SM clock and the power that nvidia-smi
// sampled beside each row.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bf16.h"
#include "cli.h"
#include "cublas_check.h"
#include "device.h"
#include "device_buffer.h"
#include "device_random.h"
#include "timing.h"
#include "work.h"

namespace {

constexpr const char* kUsage =
    "  --warmups-ms W,W,...  time-based warm-ups to compare (default 20,100,300,1000,3000; 'none' and\n"
    "                        '2 runs' always run first)\n"
    "  --idle-ms T           idle gap before each setting (default 2000)\n"
    "  --repeats R           timed repeats per setting (default 30, as ladder::time_gpu)\n"
    "  --csv FILE            one row per (work, setting), with the wall-clock time of each phase\n"
    "  --help                this text\n";

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

struct Setting {
  std::string name;
  double warmup_ms;
  int min_runs;
};

struct Job {
  std::string name, unit;
  ladder::Work work;
  std::function<void()> run;
};

int study(ladder::Args& args) {
  const std::vector<long long> warmups = args.integers("--warmups-ms", {20, 100, 300, 1000, 3000}, 1, 600000);
  const long long idle_ms = args.integer("--idle-ms", 2000, 0, 600000);
  const int repeats = static_cast<int>(args.integer("--repeats", ladder::kDefaultRepeats, 1, 10000));
  const std::string csv_path = args.text("--csv");
  args.done();
  if (!ladder::device().available)
    throw std::runtime_error("no CUDA device (" + ladder::device().reason + "): the study times the GPU");

  std::vector<Setting> settings{{"none", 0, 0}, {"2 runs", 0, 2}};
  for (long long w : warmups) settings.push_back({std::to_string(w) + " ms", double(w), ladder::kMinWarmupRuns});

  constexpr int n = 8192;
  ladder::DeviceBuffer<ladder::bf16> A(std::size_t(n) * n), Bt(std::size_t(n) * n);
  ladder::DeviceBuffer<float> C(std::size_t(n) * n);
  ladder::fill_uniform_device(A.data(), A.size(), 1);
  ladder::fill_uniform_device(Bt.data(), Bt.size(), 2);
  constexpr std::size_t copy_n = std::size_t{1} << 28;  // 1 GiB of floats, as chapter 01
  ladder::DeviceBuffer<float> src(copy_n), dst(copy_n);
  ladder::fill_uniform_device(src.data(), copy_n, 3);
  const std::vector<Job> jobs{
      {"gemm_bf16_8192", "TFLOP/s", ladder::gemm_work(n, n, n, 2, 4),
       [&] { ladder::cublas_gemm_bf16(n, n, n, A.data(), Bt.data(), C.data()); }},
      {"copy_d2d_1GiB", "GB/s", ladder::copy_work(copy_n),
       [&] { CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), copy_n * sizeof(float), cudaMemcpyDeviceToDevice)); }},
  };
  // One-time costs (cuBLAS's handle and algorithm choice, module loads) paid here, so every
  // setting below measures the clocks only.
  for (const Job& j : jobs) ladder::warm_up(j.run, 0, 2);

  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    if (!csv) throw std::invalid_argument("--csv: cannot write " + csv_path);
    csv << "work,setting,warmup_target_ms,warmup_ms,warmup_runs,idle_start_s,warmup_start_s,timed_start_s,"
           "timed_end_s,median_ms,p10_ms,p90_ms,n,unit,median_value\n";
  }
  std::cout << ladder::describe_device() << "\n"
            << ladder::timing_method() << "\n"
            << "each setting after " << idle_ms << " ms idle; " << repeats << " timed repeats\n\n"
            << "  work              setting     warm-up ms  runs   median ms     p10 ms     p90 ms   median\n";
  char line[256];
  for (const Job& j : jobs)
    for (const Setting& s : settings) {
      CUDA_CHECK(cudaDeviceSynchronize());
      const double idle_start = now_s();
      std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
      const double warmup_start = now_s();
      const ladder::WarmUp w = ladder::warm_up(j.run, s.warmup_ms, s.min_runs);
      const double timed_start = now_s();
      const ladder::Timing t = ladder::summarise(ladder::time_repeats(j.run, repeats));
      const double timed_end = now_s();
      const double value = j.unit == "GB/s" ? j.work.gbps(t.median_ms) : j.work.tflops(t.median_ms);
      std::snprintf(line, sizeof line, "  %-17s %-10s %10.1f %5d %11.4f %10.4f %10.4f %8.1f %s\n", j.name.c_str(),
                    s.name.c_str(), w.ms, w.runs, t.median_ms, t.p10_ms, t.p90_ms, value, j.unit.c_str());
      std::cout << line << std::flush;
      if (csv.is_open()) {
        std::snprintf(line, sizeof line, "%s,%s,%g,%.3f,%d,%.3f,%.3f,%.3f,%.3f,%.5f,%.5f,%.5f,%d,%s,%.2f\n",
                      j.name.c_str(), s.name.c_str(), s.warmup_ms, w.ms, w.runs, idle_start, warmup_start, timed_start,
                      timed_end, t.median_ms, t.p10_ms, t.p90_ms, t.repeats, j.unit.c_str(), value);
        csv << line << std::flush;
      }
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string prog = argc > 0 ? argv[0] : "ladder_timing_study";
  try {
    ladder::Args args(argc, argv);
    if (args.flag("--help")) {
      std::cout << "usage: " << prog << " [options]\n" << kUsage;
      return 0;
    }
    return study(args);
  } catch (const std::invalid_argument& e) {
    std::cerr << prog << ": error: " << e.what() << "\nusage: " << prog << " [options]\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 1;
  }
}
