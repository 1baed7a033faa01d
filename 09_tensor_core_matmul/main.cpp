// Chapter 09 executable: the tensor-core matmul climb in one run. Every step (and the
// cuBLAS anchor) is checked against the fp64 reference on bf16-rounded inputs, then
// timed against cuBLAS bf16 (GemmEx, fp32 accumulate and out) measured in this run.
// Without a GPU it prints the CPU side: the fragment tables and the swizzle map.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "cublas_check.h"
#include "cuda_check.h"
#include "device.h"
#include "layout_print.h"
#include "matmul_harness.h"
#include "random.h"
#include "tc_matmul.h"
#include "work.h"

namespace {

constexpr const char* kUsage =
    "  --M M --N N --K K     C[M,N] = A[M,K] Bt[N,K]^T, bf16 in, fp32 out, each 1..65536 (default 4096)\n"
    "  --repeats R           timed repeats per kernel (default 10)\n"
    "  --only a,b,...        check and time only these steps (names as in the table)\n"
    "  --layouts             print the fragment tables and the swizzle map (no GPU needed) and exit\n"
    "  --layouts-csv         the same as CSV (plot_layouts.py draws fragments.png from it)\n"
    "  --profile a,b,...     launch each step (or cublas_bf16) once at M, N, K and exit (for ncu)\n";

const char* step_number(tcmm::Variant v) {
  static const char* numbers[] = {"1", "2", "3", "4", "5", "6a", "6b", "6c"};
  return numbers[static_cast<int>(v)];
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

tcmm::Variant variant_named(const std::string& s) {
  for (tcmm::Variant v : tcmm::kAll)
    if (s == tcmm::name(v)) return v;
  std::string all;
  for (tcmm::Variant v : tcmm::kAll) all += std::string(all.empty() ? "" : ", ") + tcmm::name(v);
  throw std::invalid_argument("unknown step '" + s + "'; the steps are " + all);
}

// --only / --profile a,b,...: every name a step (or, for --profile, cublas_bf16), checked
// now, on every machine, not when the GPU part reaches it.
std::vector<std::string> step_list(ladder::Args& args, const std::string& flag, bool with_cublas) {
  const std::vector<std::string> names = split(args.text(flag, ""));
  for (const std::string& n : names) {
    if (with_cublas && n == "cublas_bf16") continue;
    try {
      variant_named(n);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(flag + ": " + e.what() + (with_cublas ? ", cublas_bf16" : ""));
    }
  }
  return names;
}

// The step table: each step's one change and its TFLOP/s against the anchor.
void print_steps(std::ostream& out, const mm::Race& race) {
  out << "\nthe climb, one idea per step:\n"
      << "  step  variant             TFLOP/s  x cuBLAS  the one change\n";
  char line[256];
  for (const mm::Result& r : race.kernels) {
    const tcmm::Variant v = variant_named(r.name);
    std::snprintf(line, sizeof line, "  %-4s  %-18s %8.1f %9.3f  %s\n", step_number(v), r.name.c_str(), r.tflops,
                  r.tflops / race.anchor.tflops, tcmm::idea(v));
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-4s  %-18s %8.1f %9.3f  %s\n", "", race.anchor.name.c_str(), race.anchor.tflops,
                1.0, "the anchor");
  out << line;
}

}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const mm::Shape shape = mm::shape_flags(args, {4096, 4096, 4096});
    const int repeats = static_cast<int>(args.integer("--repeats", 10));
    const std::vector<std::string> only = step_list(args, "--only", false);
    const bool layouts = args.flag("--layouts"), layouts_csv = args.flag("--layouts-csv");
    const std::vector<std::string> profile = step_list(args, "--profile", true);
    args.gpu_only({"--only", "--M", "--N", "--K"});
    args.done();
    const std::vector<std::string> gpu_flags{"--M",    "--N",       "--K",       "--repeats",
                                             "--only", "--profile", "--summary", "--dump"};
    args.exclusive("--layouts", "it prints the tables and exits", gpu_flags);
    args.exclusive("--layouts-csv", "it prints the tables as CSV and exits", gpu_flags);
    args.exclusive("--layouts-csv", "the same tables as CSV", {"--layouts"});
    args.exclusive("--profile", "one launch of each step it names, then exit", {"--only", "--repeats", "--dump"});

    if (layouts || layouts_csv) {
      layouts_csv ? tcmm::print_layouts_csv(std::cout) : tcmm::print_layouts(std::cout);
      return 0;
    }

    ladder::Report report("09_tensor_core_matmul", flags.summary);
    if (!ladder::device().available) {
      report.out() << "No GPU: the CPU side of the chapter instead (also: --layouts).\n\n";
      tcmm::print_fragments(report.out());
      report.out() << "\n";
      tcmm::print_swizzle(report.out());
      return report.gpu_skipped("fragment tables and swizzle map (--layouts)");
    }

    const std::uint64_t seed = ladder::fresh_seed();
    if (!profile.empty()) {  // one launch each, nothing else on the GPU: what ncu measures
      mm::Problem<ladder::bf16> problem(shape, seed);
      for (const std::string& step : profile) {
        if (step == "cublas_bf16") {
          ladder::cublas_gemm_bf16(shape.M, shape.N, shape.K, problem.dA.data(), problem.dB.data(), problem.dC.data());
        } else {
          const tcmm::Variant v = variant_named(step);
          const std::string why = tcmm::unavailable_reason(v);
          if (!why.empty()) {
            std::cout << "skipped " << step << ": " << why << "\n";
            continue;
          }
          tcmm::matmul(v, shape.M, shape.N, shape.K, problem.dA.data(), problem.dB.data(), problem.dC.data());
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        std::cout << "launched " << step << " once at " << shape.str() << "\n";
      }
      return 0;
    }

    std::vector<mm::Contender<ladder::bf16>> kernels;
    for (const mm::Contender<ladder::bf16>& c : tcmm::contenders()) {
      const tcmm::Variant v = variant_named(c.name);
      if (!only.empty() && std::find(only.begin(), only.end(), c.name) == only.end()) continue;
      const std::string why = tcmm::unavailable_reason(v);
      if (!why.empty()) {
        report.out() << "skipped " << c.name << ": " << why << "\n";
        continue;
      }
      kernels.push_back(c);
    }
    if (kernels.empty()) return report.gpu_skipped("fragment tables and swizzle map (--layouts)");
    report.out() << "steps with code for this GPU, checked and timed here:";
    for (const auto& k : kernels) report.out() << " " << k.name;
    report.out() << "\n";
    const mm::Contender<ladder::bf16> cublas = mm::cublas_contender<ladder::bf16>();
    std::vector<mm::Contender<ladder::bf16>> checked = kernels;
    checked.push_back(cublas);

    report.out() << "C = A B, bf16 A [M, K] and Bt [N, K] (both K-major), fp32 C; " << ladder::describe_device()
                 << "; seed " << seed << "\n";
    mm::check_full(report, checked, mm::kCheckShape, seed, ladder::Dumper(flags.dump_dir));
    mm::Problem<ladder::bf16> problem(shape, seed + 2);
    mm::check_rows(report, checked, problem, 8, seed + 4);

    const bool fast = tcmm::fast_path(shape.M, shape.N, shape.K, problem.dA.data(), problem.dB.data());
    report.out() << "\nat " << shape.str() << " every step runs its "
                 << (fast ? "fast path (16-byte cp.async / TMA copies; tile overhangs zero-filled by the copies)"
                          : "guarded path (K not a multiple of 8: bounds-checked element loads)")
                 << "\n";
    const mm::Race race = mm::time_all(kernels, cublas, problem, {repeats});
    const std::string summary = mm::print_race<ladder::bf16>(report.out(), race, shape);
    print_steps(report.out(), race);
    return report.summary(summary);
  });
}
