// Chapter 03 executable. First, on every machine, the CPU part: the shared-memory bank
// each lane of a warp hits in this chapter's kernels, with and without their padding
// (bank_model.h). Then, on a GPU, the whole matmul progression in one run: every kernel
// of chapters 02 and 03 (and the cuBLAS anchor) checked against fp64 references, then
// timed against cuBLAS SGEMM measured in this run.
#include <iostream>
#include <string>
#include <vector>

#include "02_matmul_naive/matmul_naive.h"
#include "bank_model.h"
#include "cli.h"
#include "device.h"
#include "matmul_harness.h"
#include "matmul_tiled.h"
#include "random.h"

int main(int argc, char** argv) {
  const std::string usage = std::string(mm::kShapeUsage) +
                            "  --print-model text|csv  print the bank model and exit (no GPU needed; csv feeds\n"
                            "                      scripts/figures/bank_map.py)\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const mm::Shape shape = mm::shape_flags(args, {4096, 4096, 4096});
    const int repeats = static_cast<int>(args.integer("--repeats", 10));
    const std::string print_model = args.choice("--print-model", {"text", "csv"}, "");
    args.gpu_only({"--M", "--N", "--K"});  // the bank model is the same at every shape
    args.done();
    args.exclusive("--print-model", "it prints the bank model and exits",
                   {"--M", "--N", "--K", "--repeats", "--summary", "--dump"});
    if (!print_model.empty()) {  // the CPU model only, on any machine
      if (print_model == "csv") banks::print_bank_csv(std::cout);
      if (print_model == "text") banks::print_bank_model(std::cout);
      return 0;
    }

    ladder::Report report("03_matmul_tiled", flags.summary);
    banks::print_bank_model(report.out());
    if (!ladder::device().available) {
      std::string text = "bank model, wavefronts per warp request unpadded -> padded:";
      for (const banks::Scenario& s : banks::scenarios())
        if (s.pad == 0 && s.name.rfind("smem_tiled", 0) != 0) {
          for (const banks::Scenario& p : banks::scenarios())
            if (p.name == s.name && p.pad > 0)
              text += " " + s.name + ": " + std::to_string(s.cost().wavefronts) + " -> " +
                      std::to_string(p.cost().wavefronts) + ";";
        }
      text.pop_back();
      return report.gpu_skipped(text + " (ideal: 1, and 4 for a float4 request)");
    }

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
    const mm::Race race = mm::time_all(kernels, cublas, problem, {repeats});
    return report.summary(mm::print_race<float>(report.out(), race, shape));
  });
}
