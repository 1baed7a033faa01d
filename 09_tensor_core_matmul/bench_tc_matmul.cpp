// The climb in one run: TFLOP/s of every step and of cuBLAS bf16 (the anchor: GemmEx,
// bf16 in, fp32 compute and out, the same layouts) at 4096^3 and 8192^3, where the
// operands (32 MB and 128 MB of bf16 each) do not stay in the 60 MB L2 across repeats
// (flushed anyway), and at 4093 x 4095 x 4097, where K % 8 != 0 sends every step down
// its guarded path. With LADDER_TUNE=1 also the tuning configurations (tune:<name>).
#include <cstdlib>
#include <string>

#include "matmul_bench.h"
#include "tc_matmul.h"

namespace {

// A step this GPU cannot run (the Hopper steps elsewhere) is registered all the same and
// reports why it was skipped. The check runs when the benchmark does, not at registration:
// registration happens during static initialisation, before the CUDA runtime has seen
// the kernels of every translation unit.
void add(const std::string& name, tcmm::Variant v, const mm::Contender<ladder::bf16>& c, mm::Shape s) {
  const std::string full =
      name + "/M=" + std::to_string(s.M) + "/N=" + std::to_string(s.N) + "/K=" + std::to_string(s.K);
  ladder::gpu_benchmark(full, [v, c, s](benchmark::State& state) {
    if (!ladder::gpu_or_skip(state)) return;
    const std::string why = tcmm::unavailable_reason(v);
    if (!why.empty()) {
      state.SkipWithError(why.c_str());
      return;
    }
    mm::bench_gemm(state, c, s);
  });
}

const bool registered = [] {
  const std::vector<mm::Contender<ladder::bf16>> steps = tcmm::contenders();
  for (mm::Shape s : {mm::Shape{4096, 4096, 4096}, mm::Shape{8192, 8192, 8192}, mm::Shape{4093, 4095, 4097}}) {
    for (std::size_t i = 0; i < steps.size(); ++i) add(steps[i].name, tcmm::kAll[i], steps[i], s);
    mm::add_benchmark("anchor:cublas_bf16", mm::cublas_contender<ladder::bf16>(), s);
  }
  const char* tune = std::getenv("LADDER_TUNE");
  if (tune && std::string(tune) != "0") {
    for (const tcmm::Tuned& t : tcmm::tuning_variants()) {
      const mm::Contender<ladder::bf16> c{t.name, t.run};
      // the variant whose requirements this configuration shares
      const tcmm::Variant v = t.sm90a ? tcmm::Variant::WgmmaCluster : tcmm::Variant::MmaPipeline;
      for (int n : {4096, 8192}) add("tune:" + t.name, v, c, mm::Shape{n, n, n});
    }
  }
  return true;
}();

}  // namespace
