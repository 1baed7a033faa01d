// Chapter 01 executable: check every kernel against the fp64 reference, then time
// them against a device-to-device copy of the same size, measured in this run.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "cli.h"
#include "device.h"
#include "device_buffer.h"
#include "npy.h"
#include "random.h"
#include "timing.h"
#include "vector_add.h"
#include "work.h"

namespace {
constexpr const char* kUsage =
    "  --n N         elements (default 2^28 = 268435456: 1 GiB per array, well past the 60 MB L2)\n"
    "  --repeats R   timed repeats per kernel (default 20)\n";
}

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const auto n = static_cast<std::size_t>(args.integer("--n", 1LL << 28));
    const int repeats = static_cast<int>(args.integer("--repeats", 20));
    args.done();

    ladder::Report report("01_vector_add", flags.summary);
    if (!ladder::device().available) return report.gpu_skipped("none in this chapter");

    const std::uint64_t seed = ladder::fresh_seed();
    report.out() << "n = " << n << " floats (" << 4.0 * n / 1048576.0 << " MiB per array), seed " << seed << "\n";
    const auto a = ladder::random_uniform(n, seed), b = ladder::random_uniform(n, seed + 1);
    std::vector<double> ref(n);
    for (std::size_t i = 0; i < n; ++i) ref[i] = double(a[i]) + double(b[i]);

    ladder::DeviceBuffer<float> d_a(a), d_b(b), d_c(n);
    const ladder::Dumper dump(flags.dump_dir);
    dump("a", a, {n});
    dump("b", b, {n});

    const ladder::Work work = ladder::vector_add_work(n);
    const ladder::TimingOptions opt{3, repeats, true};
    const double copy_ms =
        ladder::time_gpu(
            [&] { CUDA_CHECK(cudaMemcpyAsync(d_c.data(), d_a.data(), n * sizeof(float), cudaMemcpyDeviceToDevice)); },
            opt)
            .median_ms;
    const double copy_gbps = ladder::copy_work(n).gbps(copy_ms);

    report.out() << "\n  kernel             median ms      GB/s   x copy\n";
    std::string best;
    double best_gbps = 0;
    for (vadd::Kernel k : vadd::kAll) {
      d_c.poison();
      vadd::vector_add(k, d_a.data(), d_b.data(), d_c.data(), n);
      const auto c = d_c.download();
      report.check(vadd::name(k), ladder::compare(c, ref), ladder::kFp32);
      dump(std::string("c_") + vadd::name(k), c, {n});

      const auto t = ladder::time_gpu([&] { vadd::vector_add(k, d_a.data(), d_b.data(), d_c.data(), n); }, opt);
      const double gbps = work.gbps(t.median_ms);
      char line[160];
      std::snprintf(line, sizeof line, "  %-16s %10.4f %9.0f %8.2f   %s\n", vadd::name(k), t.median_ms, gbps,
                    gbps / copy_gbps, t.str().c_str());
      report.out() << line;
      if (gbps > best_gbps) best_gbps = gbps, best = vadd::name(k);
    }
    char line[200];
    std::snprintf(line, sizeof line, "  %-16s %10.4f %9.0f %8.2f   (cudaMemcpy D2D: 1 read + 1 write)\n", "copy",
                  copy_ms, copy_gbps, 1.0);
    report.out() << line;

    std::snprintf(line, sizeof line, "best %s %.0f GB/s = %.2fx D2D copy (%.0f GB/s), n=%zu", best.c_str(), best_gbps,
                  best_gbps / copy_gbps, copy_gbps, n);
    return report.summary(line);
  });
}
