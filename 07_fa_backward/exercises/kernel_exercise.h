// Chapter 07's kernel exercise (exercises/README.md): the heart of FA2's backward for one key:
// P recomputed from L, dP, dS = P o (dP - D) and the dK_j, dV_j updates, written by you in mine.cu.
//   build/bin/07_fa_backward_exercise --gtest_filter='Exercise*'   yours (target 07_fa_backward_exercise)
//   build/bin/07_fa_backward_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

#include "attention_shape.h"

namespace fa2_backward_kernel_exercise {
// The kernel is compiled for one head dim and one pair of tiles; any N, B, H, causal or not.
inline constexpr int d = 32;
inline constexpr int B_c = 32;  // keys per thread block, one thread each
inline constexpr int B_r = 32;  // query rows per step of the loop over the Q_i tiles
}  // namespace fa2_backward_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   dk_dv         dK and dV ([B, H, N, d]) of attention, given Q, K, V, the forward's O and
//                 L = m + log(l) ([B, H, N]) and the upstream gradient dO; device pointers.
//                 (dQ is the other kernel of chapter 07, not part of this exercise.) Throws
//                 std::invalid_argument for d != 32 or a bad shape, before any launch.
#define FA2_BACKWARD_KERNEL_EXERCISE                                                                          \
  extern const bool kImplemented;                                                                             \
  void dk_dv(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, const float* O, \
             const float* L, const float* dO, float* dK, float* dV, cudaStream_t stream)

namespace mine {
FA2_BACKWARD_KERNEL_EXERCISE;
}
namespace solution {
FA2_BACKWARD_KERNEL_EXERCISE;
}
namespace wrong_missing_d {  // wrong/missing_d.cu
FA2_BACKWARD_KERNEL_EXERCISE;
}
namespace wrong_dk_without_scale {  // wrong/dk_without_scale.cu
FA2_BACKWARD_KERNEL_EXERCISE;
}
