// Chapter 12: FlashAttention-3 on Hopper (Shah et al. 2024), forward only: bf16 and FP8
// (e4m3). Declared here, defined in fa3_forward.cuh (the sm_90a kernels) and fa3.cpp
// (checks before any launch). No CUDA syntax: the executable, the tests and the benchmark
// include it from .cpp files.
//
// Layouts are chapter 10's (PyTorch's, row-major, device pointers):
//   Q, O [B, H, N, d] bf16;  K, V [B, H_kv, N_kv, d] bf16;  L [B, H, N] fp32 (natural log)
//   query head h reads KV head h / (H / H_kv) (GQA; MQA is H_kv = 1).
//   causal: query i sees keys j <= i + N_kv - N (bottom-right aligned, as FA2 and FA3).
//   A query that sees no key gets O = 0 and L = -inf, never NaN.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "attention_shape.h"
#include "bf16.h"

namespace fa3 {

using ladder::bf16;

inline constexpr int kSupportedD[] = {64, 128};
// The FP8 forward's head dims: d = 256 doubles the GEMMs per exponential (WORKLOG.md, "FP8 at d = 256").
// The FP8 quantiser and host model also take d = 64 (kFp8QuantD).
inline constexpr int kFp8SupportedD[] = {128, 256};
inline constexpr int kFp8QuantD[] = {64, 128, 256};

// The steps of the chapter, each a compile-time variant of one kernel template, each
// adding one Hopper idea to the one before (the README's step table):
//   Tma        TMA loads into an mbarrier ring + wgmma (S = Q K^T from shared memory,
//              O += P V with P from registers); every warpgroup computes, one thread of
//              the first also issues the copies
//   WarpSpec   + a producer warpgroup that only issues TMA, two consumer warpgroups;
//              registers moved from producer to consumers with setmaxnreg
//   PingPong   + named barriers make one consumer's softmax overlap the other's GEMMs
//   IntraWg    + within a warpgroup, S_{j+1} = Q K_{j+1}^T is issued before the softmax
//              of S_j (two S tiles in registers)
//   Persistent + (dense) one CTA per SM walks the row tiles; the next tile's loads overlap
//              the current tile's end, and O leaves by a TMA store nobody waits for (causal:
//              as IntraWg)
enum class Step { Tma, WarpSpec, PingPong, IntraWg, Persistent };
inline constexpr Step kAllSteps[] = {Step::Tma, Step::WarpSpec, Step::PingPong, Step::IntraWg, Step::Persistent};
inline constexpr Step kBestStep = Step::IntraWg;
const char* name(Step s);  // "tma", "warpspec", "pingpong", "intrawg", "persistent"

struct ForwardOptions {
  Step step = kBestStep;
  // K/V stages in shared memory: 0 = the step's own (2 for bf16 at d = 128, 4 for bf16 at
  // d = 64 and for FP8). 3 is an
  // experiment (README, exercise 1) compiled for bf16, d = 128, Step::IntraWg only.
  int kv_stages = 0;
  // FA2's exact running max, O rescaled whenever it moves: bf16's rule in every kernel (fa3_config.h,
  // kRescaleLog2), so true asks for what runs anyway; FP8's switch (Fp8ForwardOptions).
  bool eager_rescale = false;
  // A study: FA4's max rule with the exponentials against the current m_i before the tile's max is
  // known, the max checked after (fa3_config.h, kSpeculativeMax): compiled for Step::IntraWg and
  // Step::Persistent at d = 128.
  bool speculative_max = false;
};

// Empty when this process can run the chapter's kernels; otherwise why not (no GPU, a GPU
// that is not compute capability 9.0, or a build without sm_90a code).
std::string unavailable_reason();

// O = softmax(scale Q K^T) V, scale = 1/sqrt(d), and L = m + log(l) per query row.
// Throws std::invalid_argument before any launch for an unsupported d, a bad shape, a null
// or misaligned pointer (TMA needs 16-byte aligned tensors), or a device that is not cc 9.0.
void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             cudaStream_t stream = nullptr);
void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             const ForwardOptions& opt, cudaStream_t stream = nullptr);

// ---- FP8 (e4m3) --------------------------------------------------------------------------
// The inputs of the FP8 forward, written by fp8_quant's kernels from bf16 Q, K, V (bytes are
// __nv_fp8_e4m3 values; raw uint8 here so .cpp files need no CUDA headers):
//   Q8  [B, H, N, d]            row-major (A operand of S = Q K^T, K-major)
//   K8  [B, H_kv, N_kv, d]      row-major (B operand of S, K-major)
//   Vt8 [B, H_kv, d, N_kv_pad]  V transposed (FP8 wgmma reads B only K-major, and the k of
//                               O = P V is the key), N_kv_pad = fp8_kv_pad(N_kv), padding 0,
//                               keys permuted inside every block of 32 (fp8_layout.h)
//   descale_q [B*H][ceil(N/64)], descale_k [B*H_kv][ceil(N_kv/128)], descale_v [B*H_kv][d]:
//   real value = stored e4m3 value * descale (per-tensor scaling fills each with one value).
struct Fp8Inputs {
  const std::uint8_t *Q8 = nullptr, *K8 = nullptr, *Vt8 = nullptr;
  const float *descale_q = nullptr, *descale_k = nullptr, *descale_v = nullptr;
};
inline constexpr int kFp8RowsPerQScale = 64, kFp8KeysPerKScale = 128;
inline int fp8_kv_pad(int N_kv) { return (N_kv + 127) / 128 * 128; }

// The same attention with FP8 operands, fp32 accumulation, P quantised to e4m3 for P V.
// O and L as forward(). Throws std::invalid_argument as forward() does.
void forward_fp8(const ladder::AttentionShape& s, const Fp8Inputs& in, bf16* O, float* L,
                 cudaStream_t stream = nullptr);

// FP8's default step: persistent CTAs (dense; causal keeps one CTA per row tile, heaviest first),
// with kFp8KeyTile's 128 keys the fastest or within 2% of it at every d = 128 shape of the
// benchmark, in two runs (WORKLOG.md, "The max rule, and the policy that follows").
inline constexpr Step kFp8BestStep = Step::Persistent;

// At FP8 rates the exponentials of a score tile take the MUFU as long as the tile's GEMMs take
// the tensor cores. poly_eighths: of every 8 pairs of a row's scores (8 keys each), how many take
// their exponential from soft_exp2.h's cubic on the FMA pipes instead. key_tile: B_c, the keys
// per step, 128, 192 or 224; 0 = the tile policy's (fa3_config.h, kFp8KeyTile). exp_turns: the
// two consumer warpgroups take turns at the exponentials (fa3_forward.cuh); gemm_turns: at the
// GEMMs (ping-pong); step: Step::Persistent (the default) or Step::IntraWg, every tuning but
// the default's needs the latter. eager_rescale: FA2's max rule (ForwardOptions).
// Compiled at d = 128 with Step::IntraWg (key_tile, poly_eighths): (128, 0), (128, 2), (128, 4),
// (192, 0), (224, 0), (224, 2), with both turns; (192, 0) also without exp_turns; (128, 0) and
// (192, 0) also without gemm_turns, with or without exp_turns, and with eager_rescale. With
// Step::Persistent: (128, 0) and (192, 0), with both turns, and with eager_rescale. speculative_max:
// (128, 0) with both turns, Step::IntraWg or Step::Persistent. At d = 256: the defaults only
// (128 keys, no turns at the exponentials: fa3_config.h), Step::IntraWg or Step::Persistent.
struct Fp8ForwardOptions {
  int poly_eighths = 0;
  int key_tile = 0;
  bool exp_turns = true;
  bool gemm_turns = true;        // false: the consumers run free, no ping-pong turn (key_tile 128, 192)
  Step step = kFp8BestStep;      // or Step::IntraWg (every compiled tuning)
  bool eager_rescale = false;    // FA2's max rule (ForwardOptions): key_tile 128 or 192, both turns
  bool speculative_max = false;  // ForwardOptions' speculative_max: key_tile 128, both turns
};
void forward_fp8(const ladder::AttentionShape& s, const Fp8Inputs& in, bf16* O, float* L, const Fp8ForwardOptions& opt,
                 cudaStream_t stream = nullptr);

}  // namespace fa3
