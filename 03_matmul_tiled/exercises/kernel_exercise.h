// Chapter 03's kernel exercise (exercises/README.md): the tile loop of matmul_tiled.cu's
// shared-memory kernel (TILE = 16), written by you in mine.cu.
//   build/bin/03_matmul_tiled_exercise --gtest_filter='Exercise*'   yours (target 03_matmul_tiled_exercise)
//   build/bin/03_matmul_tiled_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   matmul        C[M, N] = A[M, K] B[K, N], row-major device pointers, any M, N, K >= 1
#define TILED_KERNEL_EXERCISE     \
  extern const bool kImplemented; \
  void matmul(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream)

namespace mine {
TILED_KERNEL_EXERCISE;
}
namespace solution {
TILED_KERNEL_EXERCISE;
}
namespace wrong_no_zero_fill {  // wrong/no_zero_fill.cu
TILED_KERNEL_EXERCISE;
}
namespace wrong_b_tile_transposed {  // wrong/b_tile_transposed.cu
TILED_KERNEL_EXERCISE;
}
