// FA2 against FA1 (chapter 05) and the standard attention, in one run.
// B*H fills the GPU the way the FA papers do: B = 16384 / N, H = 16, so every
// shape holds the same number of tokens and N alone changes.
#include <cuda_runtime_api.h>

#include <string>

#include "05_fa1_forward/fa_forward.h"
#include "bench.h"
#include "cuda_check.h"
#include "fa_forward.h"
#include "standard_attention.h"

namespace {

using ladder::AttentionShape;

enum class Impl { FA2, FA1, Standard };

void bench(benchmark::State& state, Impl impl, AttentionShape s) {
  if (!ladder::gpu_or_skip(state)) return;
  const float *Q = ladder::bench_input(s.elems(), 1), *K = ladder::bench_input(s.elems(), 2),
              *V = ladder::bench_input(s.elems(), 3);
  float *O = ladder::bench_output(s.elems()), *L = ladder::bench_output(s.rows(), 1),
        *m = ladder::bench_output(s.rows(), 2);
  const ladder::Work work = ladder::attention_fwd_work(s);
  switch (impl) {
    case Impl::FA2:
      return ladder::run_gpu(
          state, [&] { fa2::forward(s, Q, K, V, O, L); }, work);
    case Impl::FA1:
      return ladder::run_gpu(
          state, [&] { fa1::forward(s, Q, K, V, O, L, m); }, work);
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
    for (int N = 512; N <= 16384; N *= 2)
      for (bool causal : {false, true}) {
        const AttentionShape s{16384 / N, 16, N, d, causal};
        const std::string shape =
            "/d=" + std::to_string(d) + "/N=" + std::to_string(N) + "/causal=" + std::to_string(causal);
        ladder::gpu_benchmark("fa2" + shape, [s](benchmark::State& st) { bench(st, Impl::FA2, s); });
        ladder::gpu_benchmark("fa1" + shape, [s](benchmark::State& st) { bench(st, Impl::FA1, s); });
        ladder::gpu_benchmark("standard" + shape, [s](benchmark::State& st) { bench(st, Impl::Standard, s); });
      }
  return true;
}();

}  // namespace
