// Chapter 01 executable. First, on every machine, the CPU parts: the kernels' index
// arithmetic run for every thread of a small grid (which elements each thread adds),
// the warp-wide loads each kernel issues, and a host timing that shows why a first
// run lies. Then, on a GPU: every kernel checked against the fp64 reference and timed
// against a device-to-device copy of the same size, measured in this run.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "cli.h"
#include "device.h"
#include "device_buffer.h"
#include "npy.h"
#include "random.h"
#include "thread_model.h"
#include "timing.h"
#include "vector_add.h"
#include "work.h"

namespace {
constexpr const char* kUsage =
    "  --n N         elements (default 2^28 = 268435456: 1 GiB per array, well past the 60 MB L2)\n"
    "  --repeats R   timed repeats per kernel (default 30)\n"
    "  --warmup 0|1  1 (default): the method's warm-up (ladder::time_gpu: >= 1 s of the work back\n"
    "                to back); 0: none (try it with --repeats 1)\n"
    "  --no-flush    do not flush the L2 before each timed repeat (try it with --n 1048576)\n"
    "  --model-n N --model-threads T   the thread table of the CPU part (default 19 and 8)\n"
    "  --print-model text|csv          print that table and exit (no GPU needed; csv feeds\n"
    "                                  scripts/figures/thread_map.py)\n";
}

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const auto n = static_cast<std::size_t>(args.integer("--n", 1LL << 28));
    const int repeats = static_cast<int>(args.integer("--repeats", ladder::kDefaultRepeats));
    const int warmup = static_cast<int>(args.integer("--warmup", 1, 0, 1));
    const bool flush = !args.flag("--no-flush");
    const auto model_n = static_cast<std::size_t>(args.integer("--model-n", 19, 1, 4096));
    const auto model_threads = static_cast<std::size_t>(args.integer("--model-threads", 8, 1, 4096));
    const std::string print_model = args.choice("--print-model", {"text", "csv"}, "");
    args.done();
    args.exclusive("--print-model", "it prints the thread table and exits",
                   {"--repeats", "--warmup", "--no-flush", "--summary", "--dump"});
    if (print_model == "csv") args.exclusive("--print-model", "csv: the table alone, whatever n", {"--n"});
    if (!print_model.empty()) {  // the CPU model only, on any machine
      if (print_model == "csv") vadd::print_thread_csv(std::cout, model_n, model_threads, 4);
      if (print_model == "text") vadd::print_thread_model(std::cout, model_n, model_threads, 4, n);
      return 0;
    }

    ladder::Report report("01_vector_add", flags.summary);
    // CPU: the first-person view of each kernel, and the first-run trap on the host.
    vadd::print_thread_model(report.out(), model_n, model_threads, 4, n);
    bool once = true;
    for (vadd::Kernel k : vadd::kAll)
      for (int w : vadd::writes_per_element(
               k, model_n, k == vadd::Kernel::OnePerElement ? vadd::blocks_for(model_n, 4) * 4 : model_threads))
        once = once && w == 1;
    const std::size_t host_n = std::size_t{1} << 24;
    const vadd::HostTiming host = vadd::host_first_vs_median(host_n, 9);
    char text[400];
    std::snprintf(text, sizeof text,
                  "\nTiming on the CPU has the GPU's first trap: c = a + b, n = %zu, into a freshly allocated c\n"
                  "  first run        %8.2f ms   (the OS maps every 4 KiB page of c on its first touch)\n"
                  "  median of 9 more %8.2f ms   (min %.2f): the run you would want to report\n",
                  host_n, host.first_ms, host.median_ms, host.min_ms);
    report.out() << text;
    if (!ladder::device().available) {
      std::snprintf(text, sizeof text,
                    "thread model: each kernel writes each of n=%zu elements exactly once: %s; float4 needs 1/4 of "
                    "the warp loads; host c = a + b: first run %.1fx the median",
                    model_n, once ? "yes" : "NO", host.first_ms / host.median_ms);
      return report.gpu_skipped(text);
    }

    const std::uint64_t seed = ladder::fresh_seed();
    report.out() << "n = " << n << " floats (" << 4.0 * n / 1048576.0 << " MiB per array), seed " << seed << "\n";
    const auto a = ladder::random_uniform(n, seed), b = ladder::random_uniform(n, seed + 1);
    std::vector<double> ref(n);
    for (std::size_t i = 0; i < n; ++i) ref[i] = double(a[i]) + double(b[i]);

    ladder::DeviceBuffer<float> d_a(a), d_b(b), d_c(n);
    const ladder::Dumper dump(flags.dump_dir);
    dump("a", a, {n});
    dump("b", b, {n});

    // The very first launch of each, timed alone with events before anything else runs
    // it: it pays for loading the kernel's module (lazy loading) and cold caches and TLBs.
    auto copy = [&] {
      CUDA_CHECK(cudaMemcpyAsync(d_c.data(), d_a.data(), n * sizeof(float), cudaMemcpyDeviceToDevice));
    };
    const double copy_first_ms = ladder::time_once_ms(copy);
    double first_ms[std::size(vadd::kAll)];
    for (std::size_t i = 0; i < std::size(vadd::kAll); ++i)
      first_ms[i] =
          ladder::time_once_ms([&] { vadd::vector_add(vadd::kAll[i], d_a.data(), d_b.data(), d_c.data(), n); });

    const ladder::Work work = ladder::vector_add_work(n);
    const ladder::TimingOptions opt{repeats, flush, warmup > 0};
    const double copy_ms = ladder::time_gpu(copy, opt).median_ms;
    const double copy_gbps = ladder::copy_work(n).gbps(copy_ms);

    report.out() << "\n  kernel           1st launch ms  median ms      GB/s   x copy\n";
    std::string best;
    double best_gbps = 0;
    for (std::size_t i = 0; i < std::size(vadd::kAll); ++i) {
      const vadd::Kernel k = vadd::kAll[i];
      d_c.poison();
      vadd::vector_add(k, d_a.data(), d_b.data(), d_c.data(), n);
      const auto c = d_c.download();
      report.check(vadd::name(k), ladder::compare(c, ref), ladder::kFp32);
      dump(std::string("c_") + vadd::name(k), c, {n});

      const auto t = ladder::time_gpu([&] { vadd::vector_add(k, d_a.data(), d_b.data(), d_c.data(), n); }, opt);
      const double gbps = work.gbps(t.median_ms);
      char line[160];
      std::snprintf(line, sizeof line, "  %-16s %13.4f %10.4f %9.0f %8.2f   %s\n", vadd::name(k), first_ms[i],
                    t.median_ms, gbps, gbps / copy_gbps, t.str().c_str());
      report.out() << line;
      if (gbps > best_gbps) best_gbps = gbps, best = vadd::name(k);
    }
    char line[200];
    std::snprintf(line, sizeof line, "  %-16s %13.4f %10.4f %9.0f %8.2f   (cudaMemcpy D2D: 1 read + 1 write)\n", "copy",
                  copy_first_ms, copy_ms, copy_gbps, 1.0);
    report.out() << line;

    std::snprintf(line, sizeof line, "best %s %.0f GB/s = %.2fx D2D copy (%.0f GB/s), n=%zu", best.c_str(), best_gbps,
                  best_gbps / copy_gbps, copy_gbps, n);
    return report.summary(line);
  });
}
