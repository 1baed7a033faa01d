// Every kernel variant at one shape, B=4 H=16 N=4096 (d is the variant's):
//   spill_sweep/variant=normal/d=128/B_r=8/B_c=32/N=4096
//   spill_sweep/variant=local/d=128/B_r=8/B_c=32/N=4096
//   spill_sweep/variant=capped/maxrreg=40/d=128/B_r=8/B_c=32/N=4096
// The lecture kernel (variant=normal/d=128/B_r=8/B_c=32) is the in-run point every other row is read against.
#include <string>

#include "bench.h"
#include "spill.h"

namespace {

constexpr int kB = 4, kH = 16, kN = 4096;

void bench_variant(benchmark::State& state, const spill::Variant& v) {
  if (!ladder::gpu_or_skip(state)) return;
  const ladder::AttentionShape s{kB, kH, kN, v.d};
  const float *Q = ladder::bench_input(s.elems(), 1), *K = ladder::bench_input(s.elems(), 2),
              *V = ladder::bench_input(s.elems(), 3);
  float *O = ladder::bench_output(s.elems()), *L = ladder::bench_output(s.rows(), 1);
  ladder::run_gpu(
      state, [&] { spill::forward(v, s, Q, K, V, O, L); }, ladder::attention_fwd_work(s));
}

const bool registered = [] {
  for (const spill::Variant& v : spill::variants())
    ladder::gpu_benchmark("spill_sweep/" + v.label() + "/N=" + std::to_string(kN),
                          [v](benchmark::State& s) { bench_variant(s, v); });
  return true;
}();

}  // namespace
