// Chapter 04 executable. First, on every run, the CPU parts: the (m, l) trace
// and the fp16 overflow. Then, on a GPU, every kernel that applies to a shape
// is checked against the fp64 reference and timed against a device-to-device
// copy of the same matrix, measured in this run.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.h"
#include "cpu_demo.h"
#include "device.h"
#include "device_buffer.h"
#include "npy.h"
#include "random.h"
#include "reference_softmax.h"
#include "softmax.h"
#include "timing.h"
#include "work.h"

namespace {

constexpr const char* kUsage =
    "  --R R --C C   one R x C matrix (default: 8192x8192, 32768x4096, 4096x32768, 262144x128\n"
    "                and 2048x65536, the benchmark's shapes: 128-512 MiB each, far past the L2)\n"
    "  --repeats N   timed repeats per kernel (default 20)\n"
    "  --trace       the CPU parts only: the (m, l) trace and the fp16 overflow\n"
    "  --x a,b,...   trace this row as well (element by element and in blocks): finite numbers,\n"
    "                or -inf for a masked element\n"
    "  --block B     the block size for tracing --x (default 2)\n";

struct Shape {
  int R, C;
  std::string str() const { return std::to_string(R) + "x" + std::to_string(C); }
};
const std::vector<Shape> kDefaultShapes = {{8192, 8192}, {32768, 4096}, {4096, 32768}, {262144, 128}, {2048, 65536}};
// The shape of the "best kernel vs copy" target.
constexpr Shape kHeadline{32768, 4096};

// --x: finite numbers, or -inf (a masked element: e^-inf = 0). NaN and +inf have no softmax to
// trace (the element-wise and the blocked recurrences would each print their own wrong answer),
// and a row of -inf alone has none either (0 / 0).
std::vector<double> parse_row(const std::string& text) {
  const std::string allowed = "finite numbers or -inf, comma-separated (e.g. 1,3,-inf,5)";
  std::vector<double> x;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    std::size_t used = 0;
    bool out_of_range = false;
    try {
      x.push_back(std::stod(item, &used));
    } catch (const std::out_of_range&) {
      out_of_range = true;
    } catch (const std::exception&) {
      used = 0;
    }
    if (out_of_range)
      throw std::invalid_argument("--x: '" + item + "' is past what a double holds; --x takes " + allowed);
    if (item.empty() || used != item.size())
      throw std::invalid_argument("--x expects " + allowed + ", got '" + item + "'");
    if (std::isnan(x.back()) || x.back() == INFINITY)
      throw std::invalid_argument("--x: '" + item + "' has no softmax to trace; --x takes " + allowed);
  }
  if (!text.empty() && text.back() == ',') throw std::invalid_argument("--x ends in a comma; --x takes " + allowed);
  if (std::all_of(x.begin(), x.end(), [](double v) { return v == -INFINITY; }))
    throw std::invalid_argument("--x: every element is -inf, so softmax is 0 / 0; give at least one finite number");
  return x;
}

void check_trace(ladder::Report& report, const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
  report.check("traced softmax vs fp64 reference",
               ladder::compare(yf, ladder::softmax_reference(xf, 1, static_cast<int>(xf.size()))), ladder::kFp32);
}

struct Measured {
  Shape shape;
  osm::Kernel kernel;
  double gbps, copy_gbps;
};

// Checks and times every kernel that applies to one shape.
std::vector<Measured> run_shape(ladder::Report& report, const ladder::Dumper& dump, Shape s, int repeats) {
  const auto [R, C] = s;
  const std::size_t n = std::size_t(R) * C;
  const std::uint64_t seed = ladder::fresh_seed();
  report.out() << "\nR x C = " << s.str() << " (" << 4.0 * n / 1048576.0 << " MiB), logits uniform in [-10, 10), seed "
               << seed << "\n";
  const std::vector<float> X = ladder::random_uniform(n, seed, -10.0f, 10.0f);
  const std::vector<double> ref = ladder::softmax_reference(X, R, C);
  ladder::DeviceBuffer<float> d_X(X), d_Y(n);
  osm::RowStats stats(R);
  dump("X_" + s.str(), X, {std::size_t(R), std::size_t(C)});

  // Every kernel is checked first, then all are timed back to back, copy last, in the
  // benchmark's order: a timing never follows seconds of CPU-side checking, during which the
  // idle GPU would cool and its clock rise above what sustained load keeps it at (this chapter's
  // block_onchip reads ~10% faster right after an idle pause).
  std::vector<osm::Kernel> kernels;
  char line[200];
  for (osm::Kernel k : osm::kAll) {
    if (!osm::applies(k, C)) {
      std::snprintf(line, sizeof line, "  %-14s   not applicable: the row does not fit (C > %d)\n", osm::name(k),
                    osm::max_cols(k));
      report.out() << line;
      continue;
    }
    d_Y.poison();
    stats.m.poison();
    stats.l.poison();
    osm::softmax(k, d_X.data(), d_Y.data(), R, C, stats);
    const std::vector<float> Y = d_Y.download();
    report.check(std::string(osm::name(k)) + " " + s.str(), ladder::compare(Y, ref), ladder::kFp32);
    dump(std::string("Y_") + osm::name(k) + "_" + s.str(), Y, {std::size_t(R), std::size_t(C)});
    kernels.push_back(k);
  }

  const ladder::TimingOptions opt{repeats};
  const ladder::Work work = ladder::softmax_work(R, C);
  std::vector<ladder::Timing> times;
  for (osm::Kernel k : kernels)
    times.push_back(ladder::time_gpu([&] { osm::softmax(k, d_X.data(), d_Y.data(), R, C, stats); }, opt));
  const double copy_ms =
      ladder::time_gpu(
          [&] { CUDA_CHECK(cudaMemcpyAsync(d_Y.data(), d_X.data(), n * sizeof(float), cudaMemcpyDeviceToDevice)); },
          opt)
          .median_ms;
  const double copy_gbps = ladder::copy_work(n).gbps(copy_ms);

  std::vector<Measured> results;
  report.out() << "  kernel           median ms      GB/s   x copy\n";
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const double gbps = work.gbps(times[i].median_ms);
    std::snprintf(line, sizeof line, "  %-14s %11.4f %9.0f %8.2f   %s\n", osm::name(kernels[i]), times[i].median_ms,
                  gbps, gbps / copy_gbps, times[i].str().c_str());
    report.out() << line;
    results.push_back({s, kernels[i], gbps, copy_gbps});
  }
  std::snprintf(line, sizeof line, "  %-14s %11.4f %9.0f %8.2f   (cudaMemcpy D2D: 1 read + 1 write)\n", "copy", copy_ms,
                copy_gbps, 1.0);
  report.out() << line;
  return results;
}

double gbps_of(const std::vector<Measured>& all, const std::string& shape, osm::Kernel k) {
  for (const Measured& m : all)
    if (m.shape.str() == shape && m.kernel == k) return m.gbps;
  return 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const int R = static_cast<int>(args.integer("--R", 0, 1));
    const int C = static_cast<int>(args.integer("--C", 0, 1));
    const int repeats = static_cast<int>(args.integer("--repeats", 20));
    const bool trace_only = args.flag("--trace");
    const std::string x_text = args.text("--x", "", "numbers, e.g. 1,3,-inf,5");
    const std::vector<double> own_row = x_text.empty() ? std::vector<double>{} : parse_row(x_text);
    const int B = static_cast<int>(args.integer("--block", 2));
    args.gpu_only({"--R", "--C"});
    args.done();
    args.needs("--block", !x_text.empty(), "--x (it is the block size of --x's trace)");
    args.exclusive("--trace", "the CPU parts only", {"--R", "--C", "--repeats", "--dump"});
    if ((R > 0) != (C > 0)) throw std::invalid_argument("--R and --C go together: give both or neither");
    if (R > 0) {  // the input, the output and the fp64 reference of the matrix
      ladder::check_device_memory("--R " + std::to_string(R) + " --C " + std::to_string(C), 8.0 * R * C);
      ladder::check_cpu_work("the fp64 reference of " + std::to_string(R) + " x " + std::to_string(C), double(R) * C,
                             4e9);
    }

    ladder::Report report("04_online_softmax", flags.summary);
    check_trace(report, {1, 3, 2}, osm::print_trace(report.out(), {1, 3, 2}, 2));
    const std::vector<double> eight = {0.5, 2, 1, 4, 3, 6, 2.5, 5};
    check_trace(report, eight, osm::print_trace(report.out(), eight, 3));
    if (!own_row.empty()) osm::print_trace(report.out(), own_row, B);
    osm::overflow_demo(report, {12.0f, 11.0f, 10.0f, 2.0f});

    const char* cpu_parts = "(m, l) trace and fp16 overflow demo";
    if (trace_only) return report.summary(std::string(cpu_parts) + " (--trace: GPU kernels not run)");
    if (!ladder::device().available) return report.gpu_skipped(cpu_parts);

    report.out() << "\nGB/s counts one read and one write of the matrix, whatever a kernel really moves.\n";
    const std::vector<Shape> shapes = R > 0 ? std::vector<Shape>{{R, C}} : kDefaultShapes;
    const ladder::Dumper dump(flags.dump_dir);
    std::vector<Measured> all;
    for (const Shape& s : shapes) {
      const std::vector<Measured> r = run_shape(report, dump, s, repeats);
      all.insert(all.end(), r.begin(), r.end());
    }

    // Best kernel against copy at the headline shape; online against safe where
    // the row does not fit on chip (else at the headline shape too).
    Shape headline = shapes.front(), too_long = shapes.front();
    bool found_too_long = false;
    for (const Shape& s : shapes) {
      if (s.R == kHeadline.R && s.C == kHeadline.C) headline = s;
      if (!found_too_long && !osm::applies(osm::Kernel::BlockOnChip, s.C)) too_long = s, found_too_long = true;
    }
    if (!found_too_long) too_long = headline;
    const Measured* best = nullptr;
    for (const Measured& m : all)
      if (m.shape.str() == headline.str() && (!best || m.gbps > best->gbps)) best = &m;
    const double ratio =
        gbps_of(all, too_long.str(), osm::Kernel::Online2Pass) / gbps_of(all, too_long.str(), osm::Kernel::Safe3Pass);
    char line[300];
    std::snprintf(line, sizeof line,
                  "best %s %.0f GB/s = %.2fx D2D copy (%.0f GB/s) at %s; online_2pass = %.2fx safe_3pass at %s%s",
                  osm::name(best->kernel), best->gbps, best->gbps / best->copy_gbps, best->copy_gbps,
                  headline.str().c_str(), ratio, too_long.str().c_str(),
                  found_too_long ? " (row does not fit on chip)" : "");
    return report.summary(line);
  });
}
