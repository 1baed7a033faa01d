// Chapter 14's kernel exercise (exercises/README.md): the pre-processing pass of the backward,
// D_i = rowsum(dO_i * O_i), with one 16-byte unit of each row per thread and the row's sum
// gathered by shuffles, written by you in mine.cu. Plain CUDA: any sm_80+ GPU runs it.
//   build/bin/14_fa3_backward_exercise --gtest_filter='Exercise*'   yours (target 14_fa3_backward_exercise)
//   build/bin/14_fa3_backward_test --gtest_filter='*Exercise*'      the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

#include "bf16.h"

namespace fa3_bwd_kernel_exercise {
inline constexpr int kThreads = 256;  // threads per block
inline constexpr int kUnit = 8;       // bf16 per 16-byte unit: one thread's columns of a row
}  // namespace fa3_bwd_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   preprocess_D  D[i] = sum_k dO[i][k] * O[i][k] for i < rows, in fp32 (D: [rows] floats); O and dO
//                 are [rows][d] bf16 device pointers. Throws std::invalid_argument, before any
//                 launch, for d not 64 or 128, rows < 1, a null pointer, O or dO not 16-byte
//                 aligned, D not 4-byte aligned.
#define FA3_BWD_KERNEL_EXERCISE   \
  extern const bool kImplemented; \
  void preprocess_D(const ladder::bf16* O, const ladder::bf16* dO, float* D, int rows, int d, cudaStream_t stream)

namespace mine {
FA3_BWD_KERNEL_EXERCISE;
}
namespace solution {
FA3_BWD_KERNEL_EXERCISE;
}
namespace wrong_xor_one_lane {  // wrong/xor_one_lane.cu
FA3_BWD_KERNEL_EXERCISE;
}
namespace wrong_whole_warp {  // wrong/whole_warp.cu
FA3_BWD_KERNEL_EXERCISE;
}
namespace wrong_bf16_accumulate {  // wrong/bf16_accumulate.cu
FA3_BWD_KERNEL_EXERCISE;
}
