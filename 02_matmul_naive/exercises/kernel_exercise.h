// Chapter 02's kernel exercise (exercises/README.md): the thread -> (row, col) map of the
// coalesced naive matmul, written by you in mine.cu.
//   build/bin/02_matmul_naive_exercise --gtest_filter='Exercise*'   yours (target 02_matmul_naive_exercise)
//   build/bin/02_matmul_naive_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

// The launch every implementation uses, given: blocks of kBlock x kBlock threads, grid.x
// counting blocks along the N columns of C, grid.y along its M rows.
namespace naive_kernel_exercise {
inline constexpr unsigned kBlock = 32;
inline dim3 grid(int M, int N) {
  return dim3((unsigned(N) + kBlock - 1) / kBlock, (unsigned(M) + kBlock - 1) / kBlock);
}
}  // namespace naive_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   matmul        C[M, N] = A[M, K] B[K, N], row-major device pointers, one thread per element of C
//   record_map    for every thread of matmul's grid, the (row, col) it computes, at index
//                 ((blockIdx.y gridDim.x + blockIdx.x) kBlock + threadIdx.y) kBlock + threadIdx.x
//                 of rows and cols (so a warp's 32 lanes are 32 consecutive entries)
#define NAIVE_KERNEL_EXERCISE                                                                      \
  extern const bool kImplemented;                                                                  \
  void matmul(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream); \
  void record_map(int M, int N, int* rows, int* cols, cudaStream_t stream)

namespace mine {
NAIVE_KERNEL_EXERCISE;
}
namespace solution {
NAIVE_KERNEL_EXERCISE;
}
namespace wrong_row_per_x {  // wrong/row_per_x.cu
NAIVE_KERNEL_EXERCISE;
}
namespace wrong_swapped_block_axes {  // wrong/swapped_block_axes.cu
NAIVE_KERNEL_EXERCISE;
}
