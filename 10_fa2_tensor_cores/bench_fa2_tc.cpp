// FA2 on tensor cores at the PyTorch anchor shapes (scripts/anchors/torch_anchors.py:
// SDPA flash and cuDNN, bf16), forward and backward, dense and causal, GQA 32:8; the FA1
// normalisation beside the FA2 one; the tile-config sweep; and the fp32 kernels of
// chapters 06 and 07 (and chapter 06's kernel with each normalisation) for the side by side.
//   fwd, fwd_fa1norm, bwd (atomic dQ), bwd_det     the default tile configs
//   fwd_cfg<i>_<name>, bwd_cfg<i>_<name>           the other configs (tuning)
//   .../logits=rising                              inputs whose logits rise key tile after key
//                                                  tile (fa2_tc_problem.h): no rescale is skipped
//   fp32_fwd_fa2norm, fp32_fwd_fa1norm             chapter 06's loop with each normalisation
//   fwd_fa1norm_cfg1_<name>                        FA1's normalisation at config 1 (no spills)
//   fp32_ch06_fwd, fp32_ch07_bwd                   chapters 06 and 07 as published
//   anchor:cudnn/fwd, anchor:cudnn/bwd              cuDNN's attention (common/cudnn_attention.h) on
//                                                  the same inputs, at every shape above; skipped,
//                                                  with the reason, where it cannot run
// TFLOP/s with the FA convention (common/work.h): 4 B H N N_kv d forward, halved causal,
// backward 2.5x.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "06_fa2_forward/fa_forward.h"
#include "07_fa_backward/fa_backward.h"
#include "bench.h"
#include "bf16.h"
#include "cudnn_attention.h"
#include "device_buffer.h"
#include "fa2_tc.h"
#include "fa2_tc_problem.h"

namespace {

using ladder::AttentionShape;
using ladder::bf16;

AttentionShape shape(int B, int H, int H_kv, int N, int d, bool causal) {
  return ladder::attention_shape(B, H, H_kv, N, N, d, causal);
}

struct Tensors {
  const bf16 *Q, *K, *V, *dO;
  bf16 *O, *dQ, *dK, *dV;
  float *L, *workspace;
};
Tensors tensors(const AttentionShape& s) {
  return {ladder::bench_input<bf16>(s.elems(), 1),
          ladder::bench_input<bf16>(s.kv_elems(), 2),
          ladder::bench_input<bf16>(s.kv_elems(), 3),
          ladder::bench_input<bf16>(s.elems(), 4),
          ladder::bench_output<bf16>(s.elems(), 0),
          ladder::bench_output<bf16>(s.elems(), 1),
          ladder::bench_output<bf16>(s.kv_elems(), 2),
          ladder::bench_output<bf16>(s.kv_elems(), 3),
          ladder::bench_output<float>(s.rows(), 0),
          ladder::bench_output<float>(fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Atomic), 1)};
}

// Q, K, V whose logits rise along the keys in the order the forward visits them: the worst
// case of skiprescale. Built on the host once per shape.
struct RisingInputs {
  ladder::DeviceBuffer<bf16> Q, K, V;
};
const RisingInputs& rising_inputs(const AttentionShape& s) {
  static std::map<std::string, std::unique_ptr<RisingInputs>> cache;
  std::unique_ptr<RisingInputs>& slot = cache[s.str()];
  if (!slot) {
    fa2tc::Problem p = fa2tc::make_problem(s, 5);
    fa2tc::make_logits_rise(p);
    slot.reset(new RisingInputs{ladder::DeviceBuffer<bf16>(ladder::to_bf16(p.Q)),
                                ladder::DeviceBuffer<bf16>(ladder::to_bf16(p.K)),
                                ladder::DeviceBuffer<bf16>(ladder::to_bf16(p.V))});
  }
  return *slot;
}

void bench_forward(benchmark::State& state, AttentionShape s, fa2tc::ForwardOptions opt, bool rising = false) {
  if (!ladder::gpu_or_skip(state)) return;
  Tensors t = tensors(s);
  if (rising) {
    const RisingInputs& r = rising_inputs(s);
    t.Q = r.Q.data(), t.K = r.K.data(), t.V = r.V.data();
  }
  ladder::run_gpu(
      state, [&] { fa2tc::forward(s, t.Q, t.K, t.V, t.O, t.L, opt); }, ladder::attention_fwd_work(s, 2));
}

void bench_backward(benchmark::State& state, AttentionShape s, fa2tc::BackwardOptions opt) {
  if (!ladder::gpu_or_skip(state)) return;
  const Tensors t = tensors(s);
  fa2tc::forward(s, t.Q, t.K, t.V, t.O, t.L);  // the O and L the backward is given
  ladder::run_gpu(
      state, [&] { fa2tc::backward(s, t.Q, t.K, t.V, t.O, t.L, t.dO, t.dQ, t.dK, t.dV, t.workspace, opt); },
      ladder::attention_bwd_work(s, 2));
}

// One cuDNN attention per shape, kept: its plans are built once, outside the timing.
void bench_cudnn(benchmark::State& state, AttentionShape s, ladder::CudnnAttention::Pass pass) {
  if (!ladder::gpu_or_skip(state)) return;
  static std::map<std::string, std::unique_ptr<ladder::CudnnAttention>> cache;
  std::unique_ptr<ladder::CudnnAttention>& cudnn = cache[s.str()];
  if (!cudnn) cudnn.reset(new ladder::CudnnAttention(s));
  if (const std::string why = cudnn->unsupported_reason(pass); !why.empty()) return state.SkipWithError(why.c_str());
  const Tensors t = tensors(s);
  if (pass == ladder::CudnnAttention::Pass::Forward)
    return ladder::run_gpu(
        state, [&] { cudnn->forward(t.Q, t.K, t.V, t.O, t.L); }, ladder::attention_fwd_work(s, 2));
  cudnn->forward(t.Q, t.K, t.V, t.O, t.L);  // its own O and L, which its backward reads
  ladder::run_gpu(
      state, [&] { cudnn->backward(t.Q, t.K, t.V, t.O, t.L, t.dO, t.dQ, t.dK, t.dV); },
      ladder::attention_bwd_work(s, 2));
}

enum class Fp32 { Fa2Norm, Fa1Norm, Ch06, Ch07 };
void bench_fp32(benchmark::State& state, AttentionShape s, Fp32 which) {
  if (!ladder::gpu_or_skip(state)) return;
  const float *Q = ladder::bench_input<float>(s.elems(), 1), *K = ladder::bench_input<float>(s.elems(), 2),
              *V = ladder::bench_input<float>(s.elems(), 3), *dO = ladder::bench_input<float>(s.elems(), 4);
  float *O = ladder::bench_output<float>(s.elems(), 10), *L = ladder::bench_output<float>(s.rows(), 11);
  switch (which) {
    case Fp32::Fa2Norm:
    case Fp32::Fa1Norm: {
      const auto norm = which == Fp32::Fa2Norm ? fa2tc::Normalisation::FA2 : fa2tc::Normalisation::FA1;
      return ladder::run_gpu(
          state, [&] { fa2tc::forward_fp32(s, Q, K, V, O, L, norm); }, ladder::attention_fwd_work(s, 4));
    }
    case Fp32::Ch06:
      return ladder::run_gpu(
          state, [&] { fa2::forward(s, Q, K, V, O, L); }, ladder::attention_fwd_work(s, 4));
    case Fp32::Ch07: {
      float *dQ = ladder::bench_output<float>(s.elems(), 12), *dK = ladder::bench_output<float>(s.elems(), 13),
            *dV = ladder::bench_output<float>(s.elems(), 14), *D = ladder::bench_output<float>(s.rows(), 15);
      fa2::forward(s, Q, K, V, O, L);
      return ladder::run_gpu(
          state, [&] { fa2::backward(s, Q, K, V, O, L, dO, dQ, dK, dV, D); }, ladder::attention_bwd_work(s, 4));
    }
  }
}

const bool registered = [] {
  // The anchor shapes: B4 H16 N4096 at d = 64 and 128, and
  // B1 H16 N16384 at d = 128, dense and causal.
  std::vector<AttentionShape> anchors;
  for (bool causal : {false, true}) {
    anchors.push_back(shape(4, 16, 16, 4096, 64, causal));
    anchors.push_back(shape(4, 16, 16, 4096, 128, causal));
    anchors.push_back(shape(1, 16, 16, 16384, 128, causal));
  }
  for (const AttentionShape& s : anchors) {
    const std::string k = ladder::bench_keys(s);
    ladder::gpu_benchmark("fwd" + k, [s](benchmark::State& st) { bench_forward(st, s, {}); });
    ladder::gpu_benchmark("fwd_fa1norm" + k, [s](benchmark::State& st) {
      bench_forward(st, s, {fa2tc::Normalisation::FA1, 0, {}});
    });
    ladder::gpu_benchmark("bwd" + k, [s](benchmark::State& st) { bench_backward(st, s, {}); });
    ladder::gpu_benchmark("bwd_det" + k, [s](benchmark::State& st) {
      bench_backward(st, s, {fa2tc::DqPath::Deterministic, 0});
    });
  }
  // GQA 32:8, causal (the SDPA flash anchor with enable_gqa is forward only).
  const AttentionShape gqa = shape(4, 32, 8, 4096, 128, true);
  ladder::gpu_benchmark("fwd" + ladder::bench_keys(gqa), [gqa](benchmark::State& st) { bench_forward(st, gqa, {}); });
  ladder::gpu_benchmark("bwd" + ladder::bench_keys(gqa), [gqa](benchmark::State& st) { bench_backward(st, gqa, {}); });

  // cuDNN at every shape above (the sweeps below reuse the anchor shapes).
  std::vector<AttentionShape> all = anchors;
  all.push_back(gqa);
  for (const AttentionShape& s : all)
    for (auto pass : {ladder::CudnnAttention::Pass::Forward, ladder::CudnnAttention::Pass::Backward})
      ladder::gpu_benchmark(std::string("anchor:cudnn/") +
                                (pass == ladder::CudnnAttention::Pass::Forward ? "fwd" : "bwd") + ladder::bench_keys(s),
                            [s, pass](benchmark::State& st) { bench_cudnn(st, s, pass); });

  // skiprescale is data-dependent: the d = 128 targets again with logits that rise at every
  // key tile (no rescale skipped), for the default and for its twin without skiprescale
  // (also on the usual inputs: the target ratios without the trick).
  {
    const auto fwd = fa2tc::forward_configs(128);
    std::string twin = fwd[0].name;
    const std::size_t at = twin.find("_skiprescale");
    int noskip = -1;
    if (at != std::string::npos) {
      twin.erase(at, std::string("_skiprescale").size());
      for (int c = 1; c < int(fwd.size()); ++c)
        if (fwd[c].name == twin) noskip = c;
    }
    std::vector<AttentionShape> targets;
    for (const AttentionShape& s : anchors)
      if (s.d == 128) targets.push_back(s);
    targets.push_back(gqa);
    for (const AttentionShape& s : targets) {
      const std::string k = ladder::bench_keys(s);
      ladder::gpu_benchmark("fwd" + k + "/logits=rising",
                            [s](benchmark::State& st) { bench_forward(st, s, {}, true); });
      if (noskip < 0) continue;
      const std::string name = "fwd_cfg" + std::to_string(noskip) + "_" + twin;
      for (bool rising : {false, true}) {
        if (!rising && s.N == 4096 && s.H == 16) continue;  // in the sweep below
        ladder::gpu_benchmark(name + k + (rising ? "/logits=rising" : ""), [s, noskip, rising](benchmark::State& st) {
          bench_forward(st, s, {fa2tc::Normalisation::FA2, noskip, {}}, rising);
        });
      }
    }
  }

  // The tile-config sweep at B4 H16 N4096 (index 0 is the default, above).
  for (int d : fa2tc::kSupportedD)
    for (bool causal : {false, true}) {
      const AttentionShape s = shape(4, 16, 16, 4096, d, causal);
      auto fwd = fa2tc::forward_configs(d);  // then the ablations: indices continue
      const auto ablations = fa2tc::forward_ablations(d), bwd = fa2tc::backward_configs(d);
      fwd.insert(fwd.end(), ablations.begin(), ablations.end());
      for (int c = 1; c < int(fwd.size()); ++c)
        ladder::gpu_benchmark("fwd_cfg" + std::to_string(c) + "_" + fwd[c].name + ladder::bench_keys(s),
                              [s, c](benchmark::State& st) {
                                bench_forward(st, s, {fa2tc::Normalisation::FA2, c, {}});
                              });
      for (int c = 1; c < int(bwd.size()); ++c)
        ladder::gpu_benchmark("bwd_cfg" + std::to_string(c) + "_" + bwd[c].name + ladder::bench_keys(s),
                              [s, c](benchmark::State& st) {
                                bench_backward(st, s, {fa2tc::DqPath::Atomic, c});
                              });
    }

  // fp32 on CUDA cores, dense, at the headline shapes of chapters 06 (d = 64) and 10 (d = 128);
  // and FA1's normalisation at config 1, which fits both normalisations without spilling (the
  // default's FA1 instantiation spills: the lesson's table shows the two side by side).
  for (int d : fa2tc::kSupportedD) {
    const AttentionShape s = shape(4, 16, 16, 4096, d, false);
    const std::string cfg1 = "_cfg1_" + fa2tc::forward_configs(d)[1].name;
    ladder::gpu_benchmark("fwd_fa1norm" + cfg1 + ladder::bench_keys(s), [s](benchmark::State& st) {
      bench_forward(st, s, {fa2tc::Normalisation::FA1, 1, {}});
    });
    ladder::gpu_benchmark("fp32_fwd_fa2norm" + ladder::bench_keys(s),
                          [s](benchmark::State& st) { bench_fp32(st, s, Fp32::Fa2Norm); });
    ladder::gpu_benchmark("fp32_fwd_fa1norm" + ladder::bench_keys(s),
                          [s](benchmark::State& st) { bench_fp32(st, s, Fp32::Fa1Norm); });
    ladder::gpu_benchmark("fp32_ch06_fwd" + ladder::bench_keys(s),
                          [s](benchmark::State& st) { bench_fp32(st, s, Fp32::Ch06); });
    ladder::gpu_benchmark("fp32_ch07_bwd" + ladder::bench_keys(s),
                          [s](benchmark::State& st) { bench_fp32(st, s, Fp32::Ch07); });
  }
  return true;
}();

}  // namespace
