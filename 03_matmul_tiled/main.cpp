// Chapter 03 executable: the whole matmul progression in one run. Every kernel of
// chapters 02 and 03 (and the cuBLAS anchor) is checked against fp64 references,
// then timed against cuBLAS SGEMM measured in this run.
#include <vector>

#include "02_matmul_naive/matmul_naive.h"
#include "cli.h"
#include "device.h"
#include "matmul_harness.h"
#include "matmul_tiled.h"
#include "random.h"

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, mm::kShapeUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const mm::Shape shape = mm::shape_flags(args, {4096, 4096, 4096});
    const int repeats = static_cast<int>(args.integer("--repeats", 10));
    args.done();

    ladder::Report report("03_matmul_tiled", flags.summary);
    if (!ladder::device().available) return report.gpu_skipped("none in this chapter");

    std::vector<mm::Contender<float>> kernels = naive::contenders();
    for (const mm::Contender<float>& c : tiled::contenders()) kernels.push_back(c);
    const mm::Contender<float> cublas = mm::cublas_contender<float>();
    std::vector<mm::Contender<float>> checked = kernels;
    checked.push_back(cublas);

    const std::uint64_t seed = ladder::fresh_seed();
    report.out() << "C = A B, fp32, row-major; seed " << seed << "\n";
    mm::check_full(report, checked, mm::kCheckShape, seed, ladder::Dumper(flags.dump_dir));
    mm::Problem<float> problem(shape, seed + 2);
    mm::check_rows(report, checked, problem, 8, seed + 4);

    const bool fast = tiled::register_tiled_fast_path(shape.M, shape.N, shape.K, problem.dA.data(), problem.dB.data(),
                                                      problem.dC.data());
    report.out() << "\nregister_tiled at " << shape.str() << " runs its "
                 << (fast ? "fast path (whole 128 x 128 x 8 tiles, 16-byte loads and stores)"
                          : "guarded path (M or N not a multiple of 128, or K not of 8: bounds-checked scalar loads)")
                 << "\n";
    const mm::Race race = mm::time_all(kernels, cublas, problem, {2, repeats, true});
    return report.summary(mm::print_race<float>(report.out(), race, shape));
  });
}
