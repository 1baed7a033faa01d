// Chapter 06's kernel exercise (exercises/README.md): FA2's inner loop (the running m_i, l_i and
// unnormalised O_i, one rescale per key tile) and its one division at the end, written by you in
// mine.cu.
//   build/bin/06_fa2_forward_exercise --gtest_filter='Exercise*'   yours (target 06_fa2_forward_exercise)
//   build/bin/06_fa2_forward_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

#include "attention_shape.h"

namespace fa2_kernel_exercise {
// The kernel is compiled for one head dim and one pair of tiles; any N, B, H, causal or not.
inline constexpr int d = 64;
inline constexpr int B_r = 64;  // query rows per thread block, one thread each
inline constexpr int B_c = 32;  // keys per step of the inner loop
}  // namespace fa2_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   fa2_forward   O = softmax(scale Q K^T) V and L = m + log(l) per query row ([B, H, N]); Q, K, V, O
//                 [B, H, N, d] device pointers. Throws std::invalid_argument for d != 64 or a bad
//                 shape, before any launch.
#define FA2_KERNEL_EXERCISE                                                                                   \
  extern const bool kImplemented;                                                                             \
  void fa2_forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, \
                   float* L, cudaStream_t stream)

namespace mine {
FA2_KERNEL_EXERCISE;
}
namespace solution {
FA2_KERNEL_EXERCISE;
}
namespace wrong_o_not_rescaled {  // wrong/o_not_rescaled.cu
FA2_KERNEL_EXERCISE;
}
namespace wrong_alpha_after_max_update {  // wrong/alpha_after_max_update.cu
FA2_KERNEL_EXERCISE;
}
