// Chapter 05's kernel exercise (exercises/README.md): FA1's per-tile update of O_i, l_i, m_i
// (Algorithm 1, lines 11-13: the alpha, beta rescale), written by you in mine.cu.
//   build/bin/05_fa1_forward_exercise --gtest_filter='Exercise*'   yours (target 05_fa1_forward_exercise)
//   build/bin/05_fa1_forward_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

#include "attention_shape.h"

namespace fa1_kernel_exercise {
// The kernel is compiled for one head dim and one pair of tiles; any N, B, H.
inline constexpr int d = 64;
inline constexpr int B_r = 64;  // query rows per step of the inner loop, one thread each
inline constexpr int B_c = 32;  // keys per step of the outer loop
}  // namespace fa1_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   fa1_forward   O = softmax(scale Q K^T) V, with FA1's running statistics l and m ([B, H, N]) left
//                 in HBM; Q, K, V, O [B, H, N, d] device pointers. Throws std::invalid_argument for
//                 d != 64, a causal shape or a bad shape, before any launch.
#define FA1_KERNEL_EXERCISE                                                                                   \
  extern const bool kImplemented;                                                                             \
  void fa1_forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, \
                   float* l, float* m, cudaStream_t stream)

namespace mine {
FA1_KERNEL_EXERCISE;
}
namespace solution {
FA1_KERNEL_EXERCISE;
}
namespace wrong_missing_alpha {  // wrong/missing_alpha.cu
FA1_KERNEL_EXERCISE;
}
namespace wrong_forgot_l_i {  // wrong/forgot_l_i.cu
FA1_KERNEL_EXERCISE;
}
