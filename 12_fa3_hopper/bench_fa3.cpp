// FA3 on Hopper at the PyTorch anchor shapes (scripts/anchors/torch_anchors.py: SDPA flash and cuDNN, bf16),
// with chapter 10's kernel in the same run.
//   fwd/<keys>                 the chapter's best step (fa3::kBestStep), bf16
//   step:<name>/<keys>         each step of the climb (tma, warpspec, pingpong, intrawg); one
//                              path component, as scripts/results.py splits names at '/'
//   tune:intrawg_stages3/<keys> intrawg with 3 K/V stages instead of 2 (d = 128 only)
//   fp8/<keys>                 the FP8 forward (e4m3 inputs already quantised: the
//                              quantisation is not part of the attention's time), its defaults:
//                              fa3::kFp8BestStep and the tile policy's key tile (kFp8KeyTile)
//   tune:fp8_keys<B_c>[_poly<e>]/<keys>  the FP8 intra-warpgroup kernel with B_c = 128, 192 or
//                              224 keys per step and e eighths of the exponentials on the FMA pipes
//   tune:fp8_poly<e>/<keys>    128 keys, e = 2 or 4 eighths on the FMA pipes
//   tune:fp8_keys192_noturns/<keys>  192 keys without the turns at the exponentials
//   tune:fp8_keys<B_c>_free, _expturns/<keys>  without the turns at the GEMMs (and at the
//                              exponentials, or with them): the two consumers run free
//   tune:fp8_keys<B_c>_persistent/<keys>  the persistent step (causal: one CTA per row tile)
//   tune:fp8_keys<B_c>[_persistent]_eager/<keys>
//                              FA2's max rule (O rescaled whenever a row's max moves) instead of
//                              FA4's (fa3_config.h, kRescaleLog2); every bf16 row has FA2's but
//                              tune:<step>_spec
//   anchor:fa2_tc/fwd/<keys>   chapter 10's forward (fa2tc::forward, default config)
//   anchor:cudnn/fwd/<keys>    cuDNN's attention forward (common/cudnn_attention.h) on the same
//                              inputs; skipped, with the reason, where it cannot run
//   anchor:cudnn/fp8/<keys>    cuDNN's FP8 forward on e4m3 Q, K, V quantised from the same bf16
//                              inputs with one scale per tensor (what cuDNN takes), O in e4m3
// At d = 256 (B4 H8 N4096 and B1 H8 N16384: FA3's hidden size of 2048) only FP8 is compiled: fp8,
// tune:fp8_keys128 (the intra-warpgroup kernel) and the two cuDNN anchors.
// <keys> as chapter 10's bench: /d=../N=../B=../H=..[/H_kv=..]/causal=0|1. TFLOP/s with the
// FA convention (common/work.h): 4 B H N N_kv d, halved causal, for bf16 and FP8 alike.
#include <cuda_fp8.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "10_fa2_tensor_cores/fa2_tc.h"
#include "bench.h"
#include "cudnn_attention.h"
#include "device_buffer.h"
#include "fa3.h"
#include "fp8_quant.h"
#include "random.h"

namespace {

using ladder::AttentionShape;
using ladder::bf16;

AttentionShape shape(int B, int H, int H_kv, int N, int d, bool causal) {
  return ladder::attention_shape(B, H, H_kv, N, N, d, causal);
}

void bench_bf16(benchmark::State& state, AttentionShape s, bool chapter10, fa3::ForwardOptions opt = {}) {
  if (!ladder::gpu_or_skip(state)) return;
  if (!chapter10)
    if (const std::string why = fa3::unavailable_reason(); !why.empty()) return state.SkipWithError(why.c_str());
  const bf16 *Q = ladder::bench_input<bf16>(s.elems(), 1), *K = ladder::bench_input<bf16>(s.kv_elems(), 2),
             *V = ladder::bench_input<bf16>(s.kv_elems(), 3);
  bf16* O = ladder::bench_output<bf16>(s.elems(), 0);
  float* L = ladder::bench_output<float>(s.rows(), 0);
  ladder::run_gpu(
      state,
      [&] {
        if (chapter10)
          fa2tc::forward(s, Q, K, V, O, L);
        else
          fa3::forward(s, Q, K, V, O, L, opt);
      },
      ladder::attention_fwd_work(s, 2));
}

// One cuDNN attention per shape, kept: its plans (bf16 and FP8) are built once, outside the timing.
ladder::CudnnAttention& cudnn_for(const AttentionShape& s) {
  static std::map<std::string, std::unique_ptr<ladder::CudnnAttention>> cache;
  std::unique_ptr<ladder::CudnnAttention>& cudnn = cache[s.str()];
  if (!cudnn) cudnn.reset(new ladder::CudnnAttention(s));
  return *cudnn;
}

void bench_cudnn(benchmark::State& state, AttentionShape s) {
  if (!ladder::gpu_or_skip(state)) return;
  ladder::CudnnAttention* cudnn = &cudnn_for(s);
  if (const std::string why = cudnn->unsupported_reason(ladder::CudnnAttention::Pass::Forward); !why.empty())
    return state.SkipWithError(why.c_str());
  const bf16 *Q = ladder::bench_input<bf16>(s.elems(), 1), *K = ladder::bench_input<bf16>(s.kv_elems(), 2),
             *V = ladder::bench_input<bf16>(s.kv_elems(), 3);
  bf16* O = ladder::bench_output<bf16>(s.elems(), 0);
  float* L = ladder::bench_output<float>(s.rows(), 0);
  ladder::run_gpu(
      state, [&] { cudnn->forward(Q, K, V, O, L); }, ladder::attention_fwd_work(s, 2));
}

// The FP8 inputs of fa3.h, quantised on the device (per-block scales) from the same bf16
// inputs as the bf16 rows, as the executable's FP8 run is from its bf16 problem: the values the
// tensor cores see change the power they draw, and so the clock. Built once per shape; the
// quantisation is not part of the timed attention.
const fa3::Fp8Buffers& fp8_data(const AttentionShape& s) {
  static std::map<std::string, std::unique_ptr<fa3::Fp8Buffers>> cache;
  std::unique_ptr<fa3::Fp8Buffers>& e = cache[s.str()];
  if (!e) {
    const bf16 *Q = ladder::bench_input<bf16>(s.elems(), 1), *K = ladder::bench_input<bf16>(s.kv_elems(), 2),
               *V = ladder::bench_input<bf16>(s.kv_elems(), 3);
    e.reset(new fa3::Fp8Buffers(fa3::quantize_fp8(s, Q, K, V, {fa3::Fp8Scaling::PerBlock, false})));
  }
  return *e;
}

// cuDNN's FP8 inputs: Q, K, V in e4m3 in the bf16 layouts with one scale each. quantize_fp8 writes
// Q and K so (per-tensor scaling); V in that layout is its K8 when V is passed in K's place.
struct CudnnFp8Inputs {
  fa3::Fp8Buffers qk, v;
};
const CudnnFp8Inputs& cudnn_fp8_data(const AttentionShape& s) {
  static std::map<std::string, std::unique_ptr<CudnnFp8Inputs>> cache;
  std::unique_ptr<CudnnFp8Inputs>& e = cache[s.str()];
  if (!e) {
    const bf16 *Q = ladder::bench_input<bf16>(s.elems(), 1), *K = ladder::bench_input<bf16>(s.kv_elems(), 2),
               *V = ladder::bench_input<bf16>(s.kv_elems(), 3);
    e.reset(new CudnnFp8Inputs{fa3::quantize_fp8(s, Q, K, V, {fa3::Fp8Scaling::PerTensor, false}),
                               fa3::quantize_fp8(s, Q, V, V, {fa3::Fp8Scaling::PerTensor, false})});
  }
  return *e;
}

void bench_cudnn_fp8(benchmark::State& state, AttentionShape s) {
  if (!ladder::gpu_or_skip(state)) return;
  ladder::CudnnAttention* cudnn = &cudnn_for(s);
  if (const std::string why = cudnn->unsupported_reason(ladder::CudnnAttention::Pass::ForwardFp8); !why.empty())
    return state.SkipWithError(why.c_str());
  const CudnnFp8Inputs& in = cudnn_fp8_data(s);
  std::uint8_t* O8 = ladder::bench_output<std::uint8_t>(s.elems(), 0);
  float* L = ladder::bench_output<float>(s.rows(), 0);
  ladder::run_gpu(
      state,
      [&] {
        cudnn->forward_fp8(in.qk.Q8.data(), in.qk.K8.data(), in.v.K8.data(), in.qk.descale_q.data(),
                           in.qk.descale_k.data(), in.v.descale_k.data(), O8, L);
      },
      ladder::attention_fwd_work(s, 1));
}

void bench_fp8(benchmark::State& state, AttentionShape s, fa3::Fp8ForwardOptions opt = {}) {
  if (!ladder::gpu_or_skip(state)) return;
  if (const std::string why = fa3::unavailable_reason(); !why.empty()) return state.SkipWithError(why.c_str());
  const fa3::Fp8Inputs in = fp8_data(s).inputs();
  bf16* O = ladder::bench_output<bf16>(s.elems(), 0);
  float* L = ladder::bench_output<float>(s.rows(), 0);
  ladder::run_gpu(
      state, [&] { fa3::forward_fp8(s, in, O, L, opt); }, ladder::attention_fwd_work(s, 1));
}

const bool registered = [] {
  // Chapter 10's anchor shapes: B4 H16 N4096 at d = 64 and 128, B1 H16 N16384 at d = 128,
  // dense and causal; GQA 32:8 causal.
  std::vector<AttentionShape> shapes;
  for (bool causal : {false, true}) {
    shapes.push_back(shape(4, 16, 16, 4096, 64, causal));
    shapes.push_back(shape(4, 16, 16, 4096, 128, causal));
    shapes.push_back(shape(1, 16, 16, 16384, 128, causal));
  }
  shapes.push_back(shape(4, 32, 8, 4096, 128, true));
  for (bool causal : {false, true}) {
    shapes.push_back(shape(4, 8, 8, 4096, 256, causal));
    shapes.push_back(shape(1, 8, 8, 16384, 256, causal));
  }
  for (const AttentionShape& s : shapes) {
    const std::string k = ladder::bench_keys(s);
    if (s.d == 256) {  // FP8 only: the bf16 kernels and chapter 10 stop at d = 128
      ladder::gpu_benchmark("fp8" + k, [s](benchmark::State& st) { bench_fp8(st, s); });
      ladder::gpu_benchmark("tune:fp8_keys128" + k, [s](benchmark::State& st) {
        bench_fp8(st, s, {0, 128, true, true, fa3::Step::IntraWg});
      });
      ladder::gpu_benchmark("anchor:cudnn/fp8" + k, [s](benchmark::State& st) { bench_cudnn_fp8(st, s); });
      ladder::gpu_benchmark("anchor:cudnn/fwd" + k, [s](benchmark::State& st) { bench_cudnn(st, s); });
      continue;
    }
    ladder::gpu_benchmark("fwd" + k, [s](benchmark::State& st) { bench_bf16(st, s, false); });
    for (fa3::Step step : fa3::kAllSteps)
      ladder::gpu_benchmark(std::string("step:") + fa3::name(step) + k,
                            [s, step](benchmark::State& st) { bench_bf16(st, s, false, {step}); });
    ladder::gpu_benchmark("anchor:fa2_tc/fwd" + k, [s](benchmark::State& st) { bench_bf16(st, s, true); });
    ladder::gpu_benchmark("anchor:cudnn/fwd" + k, [s](benchmark::State& st) { bench_cudnn(st, s); });
    if (s.d == 128) {
      // FA4's max rule, the exponentials against the current m_i and the tile's max checked after
      // (kSpeculativeMax): the bf16 rows of FA4's rule (every other bf16 row has FA2's exact max).
      ladder::gpu_benchmark("tune:intrawg_spec" + k, [s](benchmark::State& st) {
        bench_bf16(st, s, false, {fa3::Step::IntraWg, 0, false, true});
      });
      ladder::gpu_benchmark("tune:persistent_spec" + k, [s](benchmark::State& st) {
        bench_bf16(st, s, false, {fa3::Step::Persistent, 0, false, true});
      });
      ladder::gpu_benchmark("tune:intrawg_stages3" + k, [s](benchmark::State& st) {
        bench_bf16(st, s, false, {fa3::Step::IntraWg, 3});
      });
      ladder::gpu_benchmark("fp8" + k, [s](benchmark::State& st) { bench_fp8(st, s); });
      ladder::gpu_benchmark("anchor:cudnn/fp8" + k, [s](benchmark::State& st) { bench_cudnn_fp8(st, s); });
      // Each FP8 idea on its own, on the intra-warpgroup kernel unless the name says persistent:
      // wider key tiles, part of the exponentials on the FMA pipes (soft_exp2.h), the consumers'
      // turns dropped, persistent CTAs, FA2's max rule. Fp8ForwardOptions{poly_eighths, key_tile,
      // exp_turns, gemm_turns, step, eager_rescale, speculative_max}.
      constexpr fa3::Step I = fa3::Step::IntraWg, P = fa3::Step::Persistent;
      const std::pair<const char*, fa3::Fp8ForwardOptions> tunes[] = {
          {"keys128", {0, 128, true, true, I}},
          {"poly2", {2, 128, true, true, I}},
          {"poly4", {4, 128, true, true, I}},
          {"keys192", {0, 192, true, true, I}},
          {"keys224", {0, 224, true, true, I}},
          {"keys224_poly2", {2, 224, true, true, I}},
          {"keys192_noturns", {0, 192, false, true, I}},
          {"keys128_free", {0, 128, false, false, I}},
          {"keys128_expturns", {0, 128, true, false, I}},
          {"keys192_free", {0, 192, false, false, I}},
          {"keys192_expturns", {0, 192, true, false, I}},
          {"keys128_persistent", {0, 128, true, true, P}},
          {"keys192_persistent", {0, 192, true, true, P}},
          {"keys128_eager", {0, 128, true, true, I, true}},
          {"keys192_eager", {0, 192, true, true, I, true}},
          {"keys128_persistent_eager", {0, 128, true, true, P, true}},
          {"keys192_persistent_eager", {0, 192, true, true, P, true}},
          {"keys128_spec", {0, 128, true, true, I, false, true}},
          {"keys128_persistent_spec", {0, 128, true, true, P, false, true}}};
      for (const auto& [name, opt] : tunes)
        ladder::gpu_benchmark(std::string("tune:fp8_") + name + k,
                              [s, opt = opt](benchmark::State& st) { bench_fp8(st, s, opt); });
    }
  }
  return true;
}();

}  // namespace
