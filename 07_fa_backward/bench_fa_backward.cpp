// TFLOP/s of the backward on both dQ paths, of the chapter-06 forward at the same
// shape (the target: backward time <= 3.5x forward time) and of the standard,
// materialising backward (`standard_backward`, the baseline), all in one run.
// (B, H) = (16384 / N, 16): every shape has the same B*H*N = 262144 query rows,
// enough blocks to fill the GPU.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>

#include "06_fa2_forward/fa_forward.h"
#include "bench.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "fa_backward.h"
#include "random.h"
#include "standard_attention.h"

namespace {

constexpr int kRows = 16384, kHeads = 16;

ladder::AttentionShape shape(int d, int N, bool causal) { return {kRows / N, kHeads, N, d, causal}; }

struct Inputs {
  ladder::DeviceBuffer<float> Q, K, V, dO;
};
// One set per d, shared by every N and mask (the tensors have the same size for all N).
Inputs& inputs(int d) {
  static std::map<int, std::unique_ptr<Inputs>> cache;
  std::unique_ptr<Inputs>& in = cache[d];
  if (!in) {
    const std::size_t n = std::size_t(kRows) * kHeads * d;
    in.reset(new Inputs{ladder::DeviceBuffer<float>(ladder::random_uniform(n, 1)),
                        ladder::DeviceBuffer<float>(ladder::random_uniform(n, 2)),
                        ladder::DeviceBuffer<float>(ladder::random_uniform(n, 3)),
                        ladder::DeviceBuffer<float>(ladder::random_uniform(n, 4))});
  }
  return *in;
}

void bench_backward(benchmark::State& state, fa2::DqPath path, int d, int N, bool causal) {
  if (!ladder::gpu_or_skip(state)) return;
  const ladder::AttentionShape s = shape(d, N, causal);
  Inputs& in = inputs(d);
  ladder::DeviceBuffer<float> O(s.elems()), L(s.rows()), dQ(s.elems()), dK(s.elems()), dV(s.elems()), D(s.rows());
  fa2::forward(s, in.Q.data(), in.K.data(), in.V.data(), O.data(), L.data());
  ladder::run_gpu(
      state,
      [&] {
        fa2::backward(s, in.Q.data(), in.K.data(), in.V.data(), O.data(), L.data(), in.dO.data(), dQ.data(), dK.data(),
                      dV.data(), D.data(), path);
      },
      ladder::attention_bwd_work(s));
}

void bench_forward(benchmark::State& state, int d, int N, bool causal) {
  if (!ladder::gpu_or_skip(state)) return;
  const ladder::AttentionShape s = shape(d, N, causal);
  Inputs& in = inputs(d);
  ladder::DeviceBuffer<float> O(s.elems()), L(s.rows());
  ladder::run_gpu(
      state, [&] { fa2::forward(s, in.Q.data(), in.K.data(), in.V.data(), O.data(), L.data()); },
      ladder::attention_fwd_work(s));
}

// Times backward() only; its forward() (which leaves P behind) runs once before.
void bench_standard(benchmark::State& state, int d, int N, bool causal) {
  if (!ladder::gpu_or_skip(state)) return;
  const ladder::AttentionShape s = shape(d, N, causal);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t need = 2 * ladder::StandardAttention::score_bytes(s) + 4 * s.elems() * sizeof(float);
  if (need > free_bytes / 10 * 9) {
    state.SkipWithError(("the N x N buffers P and dS need " + std::to_string(need >> 20) + " MiB, " +
                         std::to_string(free_bytes >> 20) + " MiB free")
                            .c_str());
    return;
  }
  Inputs& in = inputs(d);
  ladder::DeviceBuffer<float> O(s.elems()), dQ(s.elems()), dK(s.elems()), dV(s.elems());
  ladder::StandardAttention standard(s, /*with_backward=*/true);
  standard.forward(in.Q.data(), in.K.data(), in.V.data(), O.data());
  ladder::run_gpu(
      state,
      [&] { standard.backward(in.Q.data(), in.K.data(), in.V.data(), in.dO.data(), dQ.data(), dK.data(), dV.data()); },
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
