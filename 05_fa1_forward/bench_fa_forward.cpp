// FA1 against the standard attention, in one run (chapter 06's benchmark adds
// FA2 and the full sweep). B*H fills the GPU the way the FA papers do:
// B = 16384 / N, H = 16, so every shape holds the same number of tokens.
#include <cuda_runtime_api.h>

#include <string>

#include "bench.h"
#include "cuda_check.h"
#include "fa_forward.h"
#include "standard_attention.h"

namespace {

using ladder::AttentionShape;

enum class Impl { FA1, Standard };

void bench(benchmark::State& state, Impl impl, AttentionShape s) {
  if (!ladder::gpu_or_skip(state)) return;
  const float *Q = ladder::bench_input(s.elems(), 1), *K = ladder::bench_input(s.elems(), 2),
              *V = ladder::bench_input(s.elems(), 3);
  float *O = ladder::bench_output(s.elems()), *l = ladder::bench_output(s.rows(), 1),
        *m = ladder::bench_output(s.rows(), 2);
  const ladder::Work work = ladder::attention_fwd_work(s);
  switch (impl) {
    case Impl::FA1:
      return ladder::run_gpu(
          state, [&] { fa1::forward(s, Q, K, V, O, l, m); }, work);
    case Impl::Standard: {
      if (!ladder::StandardAttention::fits(s)) {
        state.SkipWithError(("S/P needs " + std::to_string(ladder::StandardAttention::score_bytes(s) >> 20) +
                             " MiB: more than the free GPU memory")
                                .c_str());
        return;
      }
      ladder::StandardAttention standard(s);
      return ladder::run_gpu(
          state, [&] { standard.forward(Q, K, V, O); }, work);
    }
  }
}

const bool registered = [] {
  for (int d : {64, 128})
    for (int N = 1024; N <= 4096; N *= 4)
      for (bool causal : {false, true}) {
        const AttentionShape s{16384 / N, 16, N, d, causal};
        const std::string shape =
            "/d=" + std::to_string(d) + "/N=" + std::to_string(N) + "/causal=" + std::to_string(causal);
        ladder::gpu_benchmark("fa1" + shape, [s](benchmark::State& st) { bench(st, Impl::FA1, s); });
        ladder::gpu_benchmark("standard" + shape, [s](benchmark::State& st) { bench(st, Impl::Standard, s); });
      }
  return true;
}();

}  // namespace
