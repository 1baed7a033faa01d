// Chapter 10's kernel exercise (exercises/README.md): FA2's online softmax on mma.sync
// accumulator fragments (the row max across a quad with two shuffles, the rescale of l_i and
// O_i), written by you in mine.cu, inside a small FA2 forward on tensor cores.
//   build/bin/10_fa2_tensor_cores_exercise --gtest_filter='Exercise*'   yours (target 10_fa2_tensor_cores_exercise)
//   build/bin/10_fa2_tensor_cores_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

#include "attention_shape.h"
#include "bf16.h"

namespace fa2tc_kernel_exercise {
// The kernel is compiled for one head dim and one pair of tiles; any B, H, H_kv, N, N_kv,
// causal or not.
inline constexpr int d = 64;
inline constexpr int kWarps = 4;         // per block, each owns 16 query rows (one m16 tile)
inline constexpr int B_r = 16 * kWarps;  // query rows per block
inline constexpr int B_c = 64;           // keys per step of the inner loop
}  // namespace fa2tc_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   fa2_forward   O = softmax(scale Q K^T) V (scale = 1/sqrt(d)) and L = m + ln(l) per query row,
//                 as the chapter's fa2tc::forward (fa2_tc.h): Q, O [B, H, N, d] and K, V
//                 [B, H_kv, N_kv, d] bf16, L [B, H, N] fp32, device pointers (Q, K, V, O 16-byte
//                 aligned: cp.async copies 16 bytes). Query head h reads KV head h / (H / H_kv);
//                 causal: query i sees keys j <= i + N_kv - N; a query that sees no key gets
//                 O = 0 and L = -inf, never NaN. Throws std::invalid_argument for d != 64, a bad
//                 shape, or a null or misaligned pointer, before any launch.
#define FA2TC_KERNEL_EXERCISE                                                                     \
  extern const bool kImplemented;                                                                 \
  void fa2_forward(const ladder::AttentionShape& s, const ladder::bf16* Q, const ladder::bf16* K, \
                   const ladder::bf16* V, ladder::bf16* O, float* L, cudaStream_t stream)

namespace mine {
FA2TC_KERNEL_EXERCISE;
}
namespace solution {
FA2TC_KERNEL_EXERCISE;
}
namespace wrong_max_one_shuffle {  // wrong/max_one_shuffle.cu
FA2TC_KERNEL_EXERCISE;
}
namespace wrong_o_not_rescaled {  // wrong/o_not_rescaled.cu
FA2TC_KERNEL_EXERCISE;
}
