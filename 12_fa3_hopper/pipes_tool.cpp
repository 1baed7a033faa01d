// Prints the pipes microbenchmark (pipes.h) as a table: every kind of work alone, then side by side.
//   12_fa3_hopper_pipes [--cycles C]      C: about how long each warpgroup's loop runs (default 400000)
// A ratio "together / alone" of 1.0 means the warpgroup ran as fast beside the other as alone (the
// two pipes overlap); 2.0 for two loops of equal length means they took turns.
#include <cstdio>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>

#include "cli.h"
#include "device.h"
#include "pipes.h"

namespace {

using fa3::pipes::Work;

// Median cycles per iteration of each kind alone (a warm-up launch first).
double cycles_per_iter(Work w) {
  constexpr int kIters = 64;
  fa3::pipes::run(w, kIters, Work::Idle, 1);
  return fa3::pipes::run(w, kIters, Work::Idle, 1).cycles[0] / kIters;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    ladder::Args args(argc, argv);
    const double target = static_cast<double>(args.integer("--cycles", 400000, 10000, 100000000));
    args.done();
    if (const std::string why = fa3::pipes::unavailable_reason(); !why.empty()) {
      std::cerr << "12_fa3_hopper_pipes: " << why << "\n";
      return 1;
    }
    const auto& dev = ladder::device();
    std::map<Work, double> alone;
    std::map<Work, int> iters;
    for (Work w : {Work::TensorSS, Work::TensorRS, Work::Exp, Work::Softmax, Work::Convert, Work::ExpHalf2,
                   Work::ToHalf2, Work::Max, Work::MaxInt, Work::Overlap}) {
      alone[w] = cycles_per_iter(w);
      iters[w] = std::max(1, static_cast<int>(target / alone[w]));
    }
    iters[Work::Idle] = 1, alone[Work::Idle] = 0;
    for (Work w : {Work::OverlapGemmTurn, Work::OverlapTurns})  // (only in pairs: measured against overlap alone)
      alone[w] = alone[Work::Overlap], iters[w] = iters[Work::Overlap];
    std::printf("# %s, %d SMs: cycles per iteration alone\n\n", dev.name.c_str(), dev.sm_count);
    std::printf(
        "| work | cycles per iteration | tensor FLOP per cycle per SM | ex2 per cycle per SM "
        "|\n|---|---:|---:|---:|\n");
    for (const auto& [w, c] : alone) {
      if (w == Work::Idle || w == Work::OverlapGemmTurn || w == Work::OverlapTurns) continue;
      std::printf("| %s | %.0f | %.0f | %.2f |\n", fa3::pipes::name(w), c, fa3::pipes::flops_per_iter(w) / c,
                  128.0 * fa3::pipes::exps_per_iter(w) / c);
    }
    std::printf("\n# side by side: cycles of each warpgroup's loop, together / alone\n\n");
    std::printf(
        "| warpgroup 0 | warpgroup 1 | 0: together / alone | 1: together / alone | tensor FLOP per cycle per SM | "
        "ex2 per cycle per SM | SM clock (MHz) | FP8 TFLOP/s at that clock "
        "|\n|---|---|---:|---:|---:|---:|---:|---:|\n");
    const std::pair<Work, Work> pairs[] = {
        {Work::TensorSS, Work::Exp},
        {Work::TensorSS, Work::Softmax},
        {Work::TensorRS, Work::Exp},
        {Work::Exp, Work::Convert},
        {Work::Exp, Work::Exp},
        {Work::TensorSS, Work::TensorSS},
        {Work::Exp, Work::ToHalf2},
        {Work::ExpHalf2, Work::Exp},
        {Work::Exp, Work::Max},
        {Work::Exp, Work::MaxInt},
        {Work::Overlap, Work::Idle},
        {Work::Overlap, Work::Overlap},
        {Work::OverlapGemmTurn, Work::OverlapGemmTurn},
        {Work::OverlapTurns, Work::OverlapTurns},
    };
    for (const auto& [a, b] : pairs) {
      fa3::pipes::run(a, iters[a], b, iters[b]);  // warm-up
      const fa3::pipes::Timing t = fa3::pipes::run(a, iters[a], b, iters[b]);
      const double span = std::max(t.cycles[0], b == Work::Idle ? 0.0 : t.cycles[1]);
      const double flops = fa3::pipes::flops_per_iter(a) * iters[a] +
                           fa3::pipes::flops_per_iter(b) * iters[b] * (b == Work::Idle ? 0 : 1);
      const double exps = 128.0 * (fa3::pipes::exps_per_iter(a) * iters[a] +
                                   (b == Work::Idle ? 0 : fa3::pipes::exps_per_iter(b) * iters[b]));
      const double mhz = span / t.ns * 1e3;
      const double tflops = flops / t.ns * dev.sm_count * 1e-3;
      std::printf("| %s | %s | %.2f | ", fa3::pipes::name(a), fa3::pipes::name(b), t.cycles[0] / (alone[a] * iters[a]));
      if (b == Work::Idle)
        std::printf("- | ");
      else
        std::printf("%.2f | ", t.cycles[1] / (alone[b] * iters[b]));
      std::printf("%.0f | %.2f | %.0f | %.1f |\n", flops / span, exps / span, mhz, tflops);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "12_fa3_hopper_pipes: " << e.what() << "\n";
    return 1;
  }
}
