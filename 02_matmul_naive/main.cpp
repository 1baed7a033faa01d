// Chapter 02 executable. First, on every machine, the CPU part: the addresses one warp
// of each kernel touches and the 32-byte sectors they cost (coalescing_model.h). Then,
// on a GPU: both naive kernels (and the cuBLAS anchor) checked against fp64 references
// and timed against cuBLAS SGEMM measured in this run.
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "coalescing_model.h"
#include "device.h"
#include "matmul_harness.h"
#include "matmul_naive.h"
#include "random.h"

int main(int argc, char** argv) {
  const std::string usage = std::string(mm::kShapeUsage) +
                            "  --print-model text|csv  print the warp model for the shape and exit (no GPU needed;\n"
                            "                      csv feeds scripts/figures/coalescing.py)\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const mm::Shape shape = mm::shape_flags(args, {4096, 4096, 4096});
    const int repeats = static_cast<int>(args.integer("--repeats", 10));
    const std::string print_model = args.choice("--print-model", {"text", "csv"}, "");
    args.done();
    args.exclusive("--print-model", "it prints the warp model and exits", {"--repeats", "--summary", "--dump"});
    if (!print_model.empty()) {  // the CPU model only, on any machine
      if (print_model == "csv") naive::print_coalescing_csv(std::cout, shape.M, shape.N, shape.K);
      if (print_model == "text") naive::print_coalescing_model(std::cout, shape.M, shape.N, shape.K);
      return 0;
    }

    ladder::Report report("02_matmul_naive", flags.summary);
    naive::print_coalescing_model(report.out(), shape.M, shape.N, shape.K);
    if (!ladder::device().available) {
      using naive::Kernel, naive::Operand;
      const auto strided = naive::warp_request(Kernel::RowPerX, Operand::A, shape.M, shape.N, shape.K, 0, 0, 0, 0);
      const auto along = naive::warp_request(Kernel::ColPerX, Operand::B, shape.M, shape.N, shape.K, 0, 0, 0, 0);
      return report.gpu_skipped("warp model at " + shape.str() + ": naive_row_per_x reads A in " +
                                std::to_string(strided.sectors) + " sectors per request, naive_col_per_x reads B in " +
                                std::to_string(along.sectors) + " (the same 128 useful bytes)");
    }

    const std::vector<mm::Contender<float>> kernels = naive::contenders();
    const mm::Contender<float> cublas = mm::cublas_contender<float>();
    std::vector<mm::Contender<float>> checked = kernels;
    checked.push_back(cublas);

    const std::uint64_t seed = ladder::fresh_seed();
    report.out() << "C = A B, fp32, row-major; seed " << seed << "\n";
    mm::check_full(report, checked, mm::kCheckShape, seed, ladder::Dumper(flags.dump_dir));
    mm::Problem<float> problem(shape, seed + 2);
    mm::check_rows(report, checked, problem, 8, seed + 4);

    const mm::Race race = mm::time_all(kernels, cublas, problem, {repeats});
    return report.summary(mm::print_race<float>(report.out(), race, shape));
  });
}
