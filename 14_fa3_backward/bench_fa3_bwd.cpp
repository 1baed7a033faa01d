// The FA3 backward on Hopper at the PyTorch anchor shapes (scripts/anchors/torch_anchors.py:
// SDPA flash and cuDNN, bf16), beside chapter 10's backward and cuDNN's in the same run:
//   bwd/<keys>                 the chapter's best step (fa3bwd::kBestStep)
//   step:<name>/<keys>         each step of the table (atomic, bulk, deterministic)
//   order:head_by_head/<keys>  causal: the best step with its CTAs launched head by head instead of
//                              in sections of heads (fa3_bwd_scheduler.h)
//   train/<keys>               one training step's attention: chapter 12's forward, then this backward
//   anchor:fa2_tc/bwd/<keys>   chapter 10's backward (fa2tc::backward, atomic dQ)
//   anchor:cudnn/bwd/<keys>    cuDNN's attention backward (common/cudnn_attention.h) on the same
//                              inputs; skipped, with the reason, where it cannot run
//   anchor:cudnn/train/<keys>  cuDNN's forward, then its backward
//   part:pre/<keys>, part:post/<keys>  the pre- and post-processing kernels alone (D and L in log2
//                              with the dQ accumulator zeroed; dQ rounded to bf16): their share of
//                              bwd, in time (no FLOPs of their own)
// O and L come from chapter 12's forward on the same inputs (cuDNN's from its own forward).
// <keys> as chapters 10 and 12. TFLOP/s with the FA convention (common/work.h): backward 2.5x
// the forward's 4 B H N N_kv d, halved causal; train counts forward + backward.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "10_fa2_tensor_cores/fa2_tc.h"
#include "12_fa3_hopper/fa3.h"
#include "bench.h"
#include "cudnn_attention.h"
#include "fa3_bwd.h"
#include "fa3_bwd_config.h"

namespace {

using ladder::AttentionShape;
using ladder::bf16;

struct Tensors {
  const bf16 *Q, *K, *V, *dO;
  bf16 *O, *dQ, *dK, *dV;
  float *L, *workspace;
};
Tensors tensors(const AttentionShape& s, std::size_t workspace_floats) {
  return {ladder::bench_input<bf16>(s.elems(), 1),     ladder::bench_input<bf16>(s.kv_elems(), 2),
          ladder::bench_input<bf16>(s.kv_elems(), 3),  ladder::bench_input<bf16>(s.elems(), 4),
          ladder::bench_output<bf16>(s.elems(), 0),    ladder::bench_output<bf16>(s.elems(), 1),
          ladder::bench_output<bf16>(s.kv_elems(), 2), ladder::bench_output<bf16>(s.kv_elems(), 3),
          ladder::bench_output<float>(s.rows(), 0),    ladder::bench_output<float>(workspace_floats, 1)};
}

ladder::Work train_work(const AttentionShape& s) {
  ladder::Work w = ladder::attention_bwd_work(s, 2);
  w.flops += ladder::attention_fwd_work(s, 2).flops;
  return w;
}

enum class Ours { Fa3Bwd, Fa2Bwd, Train };
void bench_ours(benchmark::State& state, AttentionShape s, Ours what, fa3bwd::BackwardOptions opt) {
  if (!ladder::gpu_or_skip(state)) return;
  if (const std::string why = fa3bwd::unavailable_reason(); !why.empty()) return state.SkipWithError(why.c_str());
  const std::size_t ws =
      std::max(fa3bwd::backward_workspace_floats(s), fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Atomic));
  const Tensors t = tensors(s, ws);
  fa3::forward(s, t.Q, t.K, t.V, t.O, t.L);  // the O and L the backward is given
  auto bwd = [&] { fa3bwd::backward(s, t.Q, t.K, t.V, t.O, t.L, t.dO, t.dQ, t.dK, t.dV, t.workspace, opt); };
  if (what == Ours::Fa3Bwd) return ladder::run_gpu(state, bwd, ladder::attention_bwd_work(s, 2));
  if (what == Ours::Train)
    return ladder::run_gpu(
        state, [&] { fa3::forward(s, t.Q, t.K, t.V, t.O, t.L), bwd(); }, train_work(s));
  ladder::run_gpu(
      state, [&] { fa2tc::backward(s, t.Q, t.K, t.V, t.O, t.L, t.dO, t.dQ, t.dK, t.dV, t.workspace); },
      ladder::attention_bwd_work(s, 2));
}

// One cuDNN attention per shape, kept: its plans are built once, outside the timing.
void bench_cudnn(benchmark::State& state, AttentionShape s, bool train) {
  if (!ladder::gpu_or_skip(state)) return;
  static std::map<std::string, std::unique_ptr<ladder::CudnnAttention>> cache;
  std::unique_ptr<ladder::CudnnAttention>& cudnn = cache[s.str()];
  if (!cudnn) cudnn.reset(new ladder::CudnnAttention(s));
  for (auto pass : {ladder::CudnnAttention::Pass::Forward, ladder::CudnnAttention::Pass::Backward})
    if (const std::string why = cudnn->unsupported_reason(pass); !why.empty()) return state.SkipWithError(why.c_str());
  const Tensors t = tensors(s, 1);
  auto fwd = [&] { cudnn->forward(t.Q, t.K, t.V, t.O, t.L); };
  auto bwd = [&] { cudnn->backward(t.Q, t.K, t.V, t.O, t.L, t.dO, t.dQ, t.dK, t.dV); };
  if (train)
    return ladder::run_gpu(
        state, [&] { fwd(), bwd(); }, train_work(s));
  fwd();  // its own O and L, which its backward reads
  ladder::run_gpu(state, bwd, ladder::attention_bwd_work(s, 2));
}

enum class Part { Pre, Post };
void bench_part(benchmark::State& state, AttentionShape s, Part part) {
  if (!ladder::gpu_or_skip(state)) return;
  if (const std::string why = fa3bwd::unavailable_reason(); !why.empty()) return state.SkipWithError(why.c_str());
  const Tensors t = tensors(s, fa3bwd::backward_workspace_floats(s));
  fa3::forward(s, t.Q, t.K, t.V, t.O, t.L);
  // The backward's checks, once; then the one kernel, timed alone, on the workspace as fa3_bwd.h
  // lays it out: L2 and D ([B, H, N_pad] each), then the dQ accumulator.
  const fa3bwd::kernel::Prepared run = fa3bwd::kernel::prepare(
      "part", s, {t.Q, t.K, t.V, t.O, t.L, t.dO, t.dQ, t.dK, t.dV, t.workspace}, {fa3bwd::kBestStep}, nullptr);
  const std::size_t rows = s.heads() * std::size_t(fa3bwd::layout::padded_rows(s.N));
  float *L2 = t.workspace, *D = L2 + rows, *dQ_acc = D + rows;
  ladder::run_gpu(
      state,
      [&] {
        if (part == Part::Pre)
          fa3bwd::kernel::launch_preprocess(run.s, t.O, t.dO, t.L, L2, D, dQ_acc, nullptr);
        else
          fa3bwd::kernel::launch_postprocess(run.s, dQ_acc, t.dQ, nullptr);
      },
      ladder::Work{});
}

const bool registered = [] {
  // The anchor shapes of chapters 10 and 12: B4 H16 N4096 at d = 64 and 128, B1 H16 N16384 at
  // d = 128, dense and causal; GQA 32:8 causal.
  std::vector<AttentionShape> shapes;
  for (bool causal : {false, true}) {
    shapes.push_back(ladder::attention_shape(4, 16, 16, 4096, 4096, 64, causal));
    shapes.push_back(ladder::attention_shape(4, 16, 16, 4096, 4096, 128, causal));
    shapes.push_back(ladder::attention_shape(1, 16, 16, 16384, 16384, 128, causal));
  }
  shapes.push_back(ladder::attention_shape(4, 32, 8, 4096, 4096, 128, true));
  for (const AttentionShape& s : shapes) {
    const std::string k = ladder::bench_keys(s);
    ladder::gpu_benchmark("bwd" + k,
                          [s](benchmark::State& st) { bench_ours(st, s, Ours::Fa3Bwd, {fa3bwd::kBestStep}); });
    for (fa3bwd::Step step : fa3bwd::kAllSteps)
      ladder::gpu_benchmark(std::string("step:") + fa3bwd::name(step) + k,
                            [s, step](benchmark::State& st) { bench_ours(st, s, Ours::Fa3Bwd, {step}); });
    if (s.causal)  // the best step launched head by head: what the sections of heads buy
      ladder::gpu_benchmark("order:head_by_head" + k, [s](benchmark::State& st) {
        bench_ours(st, s, Ours::Fa3Bwd, {fa3bwd::kBestStep, 1});
      });
    ladder::gpu_benchmark("anchor:fa2_tc/bwd" + k, [s](benchmark::State& st) { bench_ours(st, s, Ours::Fa2Bwd, {}); });
    ladder::gpu_benchmark("anchor:cudnn/bwd" + k, [s](benchmark::State& st) { bench_cudnn(st, s, false); });
    ladder::gpu_benchmark("train" + k,
                          [s](benchmark::State& st) { bench_ours(st, s, Ours::Train, {fa3bwd::kBestStep}); });
    ladder::gpu_benchmark("anchor:cudnn/train" + k, [s](benchmark::State& st) { bench_cudnn(st, s, true); });
    ladder::gpu_benchmark("part:pre" + k, [s](benchmark::State& st) { bench_part(st, s, Part::Pre); });
    ladder::gpu_benchmark("part:post" + k, [s](benchmark::State& st) { bench_part(st, s, Part::Post); });
  }
  return true;
}();

}  // namespace
