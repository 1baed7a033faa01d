// Chapter 14: FlashAttention-3's backward on Hopper (Shah et al. 2024, section 3 and appendix
// B): chapter 10's backward moved onto TMA, wgmma and warp specialisation. Declared here,
// defined in fa3_bwd.cpp (checks, the three launches), fa3_bwd_prepost.cu (the pre- and
// post-processing kernels) and fa3_bwd_kernel.cuh (the sm_90a main kernel). No CUDA syntax.
//
// Layouts and conventions are chapter 10's (fa2_tc.h), so a caller can switch:
//   Q, O, dO, dQ [B, H, N, d] bf16;  K, V, dK, dV [B, H_kv, N_kv, d] bf16;  L [B, H, N] fp32
//   (natural log, as chapter 10's and 12's forwards write it: -inf for a query that sees no key).
//   GQA: dK and dV of a KV head are summed over its group's query heads.
//   causal: query i sees keys j <= i + N_kv - N (bottom-right aligned).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "attention_shape.h"
#include "bf16.h"

namespace fa3bwd {

using ladder::bf16;

inline constexpr int kSupportedD[] = {64, 128};

// The steps of the chapter's table, each a compile-time variant of the main kernel:
//   Atomic         warp-specialised main loop (a TMA producer warp, two consumer warpgroups),
//                  S^T and dP^T computed so that P^T and dS^T feed dV and dK from registers;
//                  each consumer adds its dQ block into the fp32 buffer with one atomic per
//                  element
//   BulkReduce     + the dQ block goes through shared memory (two buffers per consumer) to a
//                  dedicated writer warp, which hands it to the copy engine's reduce-add
//                  (cp.reduce.async.bulk) while the consumers go on with the next query tile
//   Deterministic  + the writer adds the key tiles' blocks into each dQ block in a fixed order
//                  (the last key tile first: a flag per block counts the additions done), so the sums,
//                  and every bit of dQ, are the same on every run. It needs all of a head's
//                  key tiles on the GPU at once: N_kv <= 128 x the SM count (16896 on an H200)
enum class Step { Atomic, BulkReduce, Deterministic };
inline constexpr Step kAllSteps[] = {Step::Atomic, Step::BulkReduce, Step::Deterministic};
inline constexpr Step kBestStep = Step::BulkReduce;
const char* name(Step s);  // "atomic", "bulk", "deterministic"

struct BackwardOptions {
  Step step = kBestStep;
  // The launch order (fa3_bwd_scheduler.h): the CTAs go key tile by key tile over sections of at
  // most this many KV heads. 0: as many heads as fit in the L2; 1: head by head. The deterministic
  // step launches head by head (0 or 1).
  int heads_per_section = 0;
};

// Empty when this process can run the chapter's kernels; otherwise why not.
std::string unavailable_reason();

// fp32 workspace, in floats: L_i in log2 units and D_i = rowsum(dO_i * O_i), [B, H, N_pad]
// each (N_pad = N rounded up to 128 rows, the larger query tile), then the dQ accumulator
// [B, H, N_pad / 64, d / 64, 64 x 64] (fa3_bwd_layout.h), then the deterministic step's flags
// (one int per dQ block). 16-byte aligned.
std::size_t backward_workspace_floats(const ladder::AttentionShape& s);

// Given the forward's O and L and the upstream gradient dO, writes dQ, dK, dV (bf16).
// Throws std::invalid_argument before any launch for an unsupported d, a bad shape, a null
// or misaligned pointer (TMA and the bulk copies need 16-byte alignment), a missing
// workspace, or a device that cannot run the kernels.
void backward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              cudaStream_t stream = nullptr);
void backward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              const BackwardOptions& opt, cudaStream_t stream = nullptr);

}  // namespace fa3bwd
