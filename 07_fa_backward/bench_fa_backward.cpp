// TFLOP/s of the backward on both dQ paths, of the chapter-06 forward at the same
// shape (the target: backward time <= 3.5x forward time) and of the standard,
// materialising backward (`standard_backward`, the baseline), all in one run.
// (B, H) = (16384 / N, 16): every shape has the same B*H*N = 262144 query rows,
// enough blocks to fill the GPU.
#include <cuda_runtime_api.h>

#include <string>

#include "06_fa2_forward/fa_forward.h"
#include "bench.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "fa_backward.h"
#include "standard_attention.h"

namespace {

constexpr int kRows = 16384, kHeads = 16;

ladder::AttentionShape shape(int d, int N, bool causal) { return {kRows / N, kHeads, N, d, causal}; }

// Q, K, V, dO: one set per d, shared by every N and mask (the tensors have the same
// size for all N), cached by ladder::bench_input.
struct Inputs {
  const float *Q, *K, *V, *dO;
};
Inputs inputs(int d) {
  const std::size_t n = std::size_t(kRows) * kHeads * d;
  return {ladder::bench_input(n, 1), ladder::bench_input(n, 2), ladder::bench_input(n, 3), ladder::bench_input(n, 4)};
}

void bench_backward(benchmark::State& state, fa2::DqPath path, int d, int N, bool causal) {
  if (!ladder::gpu_or_skip(state)) return;
  const ladder::AttentionShape s = shape(d, N, causal);
  const Inputs in = inputs(d);
  ladder::DeviceBuffer<float> O(s.elems()), L(s.rows()), dQ(s.elems()), dK(s.elems()), dV(s.elems()), D(s.rows());
  fa2::forward(s, in.Q, in.K, in.V, O.data(), L.data());
  ladder::run_gpu(
      state,
      [&] {
        fa2::backward(s, in.Q, in.K, in.V, O.data(), L.data(), in.dO, dQ.data(), dK.data(), dV.data(), D.data(), path);
      },
      ladder::attention_bwd_work(s));
}

void bench_forward(benchmark::State& state, int d, int N, bool causal) {
  if (!ladder::gpu_or_skip(state)) return;
  const ladder::AttentionShape s = shape(d, N, causal);
  const Inputs in = inputs(d);
  ladder::DeviceBuffer<float> O(s.elems()), L(s.rows());
  ladder::run_gpu(
      state, [&] { fa2::forward(s, in.Q, in.K, in.V, O.data(), L.data()); }, ladder::attention_fwd_work(s));
}

// Times backward() only; its forward() (which leaves P behind) runs once before.
void bench_standard(benchmark::State& state, int d, int N, bool causal) {
  if (!ladder::gpu_or_skip(state)) return;
  const ladder::AttentionShape s = shape(d, N, causal);
  if (!ladder::StandardAttention::fits(s, /*with_backward=*/true)) {
    state.SkipWithError(("the N x N buffers P and dS need 2 x " +
                         std::to_string(ladder::StandardAttention::score_bytes(s) >> 20) + " MiB: more than is free")
                            .c_str());
    return;
  }
  const Inputs in = inputs(d);
  ladder::DeviceBuffer<float> O(s.elems()), dQ(s.elems()), dK(s.elems()), dV(s.elems());
  ladder::StandardAttention standard(s, /*with_backward=*/true);
  standard.forward(in.Q, in.K, in.V, O.data());
  ladder::run_gpu(
      state, [&] { standard.backward(in.Q, in.K, in.V, in.dO, dQ.data(), dK.data(), dV.data()); },
      ladder::attention_bwd_work(s));
}

const bool registered = [] {
  for (int d : {64, 128})
    for (int N : {1024, 2048, 4096, 8192, 16384})
      for (bool causal : {false, true}) {
        const std::string keys =
            "/d=" + std::to_string(d) + "/N=" + std::to_string(N) + "/causal=" + std::to_string(int(causal));
        ladder::gpu_benchmark("fa2_forward" + keys, [=](benchmark::State& st) { bench_forward(st, d, N, causal); });
        for (fa2::DqPath path : fa2::kAllDqPaths)
          ladder::gpu_benchmark(std::string("fa2_backward_") + fa2::name(path) + keys,
                                [=](benchmark::State& st) { bench_backward(st, path, d, N, causal); });
        ladder::gpu_benchmark("standard_backward" + keys,
                              [=](benchmark::State& st) { bench_standard(st, d, N, causal); });
      }
  return true;
}();

}  // namespace
