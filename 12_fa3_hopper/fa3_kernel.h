// Between fa3.cpp (the checks) and fa3_forward.cuh (the sm_90a kernels): what a launch is
// given, and the shared memory and threads of each variant. Internal to the chapter; no
// CUDA device syntax.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "attention_shape.h"
#include "fa3.h"
#include "fa3_config.h"
#include "studies/fa3_studies.h"

namespace fa3::kernel {

// The kernel's parameters (beside the three tensor maps).
struct Params {
  int H, H_kv, group, N_q, N_kv, offset;  // offset = N_kv - N_q (the causal diagonal)
  int T_r;                                // row tiles per head
  int heads;                              // B * H
  bool causal;
  float scale_log2e;  // bf16: 1/sqrt(d) * log2(e); FP8: times the descales, per tile
  bf16* O;
  float* L;
  // FP8 only (null for bf16): fa3.h's descale arrays and their row lengths.
  const float *descale_q, *descale_k, *descale_v;
  int q_scale_blocks, k_scale_blocks;
};

// A row tile of a head: the persistent scheduler asks the kernel's variant for its t-th.
struct RowTile {
  int i, head;
};

// The operands of one launch: bf16 Q, K, V (fa3.h's layouts) or FP8 Q8, K8, Vt8.
struct Operands {
  const void *Q, *K, *V;
  bool fp8;
};

// Shared memory and threads per CTA of a variant (for the checks and the CPU model).
struct Footprint {
  std::size_t smem_bytes;
  int threads, stages;
  int B_r;  // query rows per row tile
  int B_c;  // keys per key tile
};
// Throws std::invalid_argument for a configuration that is not compiled (fa3_config.h, with_cfg;
// studies/fa3_studies.h, with_tuning).
inline Footprint footprint(int d, bool fp8, Step step, const Tuning& t = {}) {
  return with_tuning(d, fp8, step, t, [](auto c) {
    using C = decltype(c);
    return Footprint{C::kSmemBytes, C::kThreads, C::kStages, C::B_r, C::B_c};
  });
}

// The checks every forward makes before a launch (the shape, the compiled variant, the grid,
// the device and its shared memory); throws std::invalid_argument naming `who`, else returns the
// variant's footprint (its B_r for params). And the kernel's parameters of a checked shape.
// (fa3.cpp; chapter 15's forward uses both.)
Footprint check_common(const ladder::AttentionShape& s, bool fp8, Step step, const Tuning& t, const std::string& who);
Params params(const ladder::AttentionShape& s, int B_r, bf16* O, float* L);

// One of the kernels, to ask tc::compiled_for_sm90a (09's hopper_host.h) whether this build
// holds their sm_90a code.
const void* sm90a_kernel();

// After every check: builds the tensor maps and launches the configuration: the lesson's
// (fa3_forward.cu), or a study's (studies/fa3_studies.cu, launch_study) for any other tuning.
void launch(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, const Tuning& t,
            cudaStream_t stream);
void launch_study(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, const Tuning& t,
                  cudaStream_t stream);

}  // namespace fa3::kernel
