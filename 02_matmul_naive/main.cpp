// Chapter 02 executable: check both naive kernels (and the cuBLAS anchor) against
// fp64 references, then time them against cuBLAS SGEMM measured in this run.
#include <vector>

#include "cli.h"
#include "device.h"
#include "matmul_harness.h"
#include "matmul_naive.h"
#include "random.h"

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, mm::kShapeUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const mm::Shape shape = mm::shape_flags(args, {4096, 4096, 4096});
    const int repeats = static_cast<int>(args.integer("--repeats", 10));
    args.done();

    ladder::Report report("02_matmul_naive", flags.summary);
    if (!ladder::device().available) return report.gpu_skipped("none in this chapter");

    const std::vector<mm::Contender<float>> kernels = naive::contenders();
    const mm::Contender<float> cublas = mm::cublas_contender<float>();
    std::vector<mm::Contender<float>> checked = kernels;
    checked.push_back(cublas);

    const std::uint64_t seed = ladder::fresh_seed();
    report.out() << "C = A B, fp32, row-major; seed " << seed << "\n";
    mm::check_full(report, checked, mm::kCheckShape, seed, ladder::Dumper(flags.dump_dir));
    mm::Problem<float> problem(shape, seed + 2);
    mm::check_rows(report, checked, problem, 8, seed + 4);

    const mm::Race race = mm::time_all(kernels, cublas, problem, {2, repeats, true});
    return report.summary(mm::print_race<float>(report.out(), race, shape));
  });
}
