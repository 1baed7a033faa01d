// Between fa3.cpp (checks, tensor maps) and fa3_forward.cu (the sm_90a kernels): the
// kernel parameters and the launcher. Internal to the chapter; no CUDA device syntax.
#pragma once

#include <cuda.h>  // CUtensorMap (a 128-byte struct; nothing from libcuda is linked)
#include <cuda_runtime_api.h>

#include <cstddef>

#include "fa3.h"

namespace fa3::detail {

// The tile every variant uses: B_r = 128 query rows per CTA (two consumer warpgroups of
// 64 rows each), B_c = 128 keys per step.
inline constexpr int kBr = 128, kBc = 128, kRowsPerWarpgroup = 64;

struct Params {
  int H, H_kv, group, N_q, N_kv, offset;  // offset = N_kv - N_q (the causal diagonal)
  int T_r;                                // row tiles per head
  int heads;                              // B * H (set by launch)
  bool causal;
  float scale_log2e;  // bf16: 1/sqrt(d) * log2(e); FP8: times the descales, per tile
  bf16* O;
  float* L;
  // FP8 only (null for bf16): fa3.h's descale arrays and their row lengths.
  const float *descale_q, *descale_k, *descale_v;
  int q_scale_blocks, k_scale_blocks;
};

struct Maps {
  CUtensorMap Q, K, V;
};

// Shared memory and threads per CTA of a variant (for the checks and the CPU model).
struct Footprint {
  std::size_t smem_bytes;
  int threads, stages;
};
Footprint footprint(int d, bool fp8, Step step, int kv_stages = 0);

// True when this build holds sm_90a code for the kernels.
bool compiled_for_sm90a();

// After every check: launches the variant on T_r x (B * H) CTAs.
// kv_stages: ForwardOptions's (0, or 3 for bf16 d = 128 IntraWg), checked by the caller.
void launch(int d, bool fp8, Step step, int kv_stages, const Maps& maps, const Params& p, int heads,
            cudaStream_t stream);

}  // namespace fa3::detail
