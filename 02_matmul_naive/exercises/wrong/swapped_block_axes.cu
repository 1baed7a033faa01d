// A wrong answer to chapter 02's kernel exercise, kept so that the test is known to catch it:
// blockIdx.x and blockIdx.y swapped against the grid.
#include <cstddef>

#include "../kernel_exercise.h"
#include "cuda_check.h"

namespace wrong_swapped_block_axes {

const bool kImplemented = true;

namespace {

using naive_kernel_exercise::kBlock;

// The element of C this thread computes (row -1: none).
struct Element {
  int row, col;
};

// Coalesced inside a block, but the block indices are the wrong way round: blockIdx.x counts
// blocks along N (the grid says so), and here it picks the row. With M != N some elements get no
// thread (they stay NaN) and threads past the edge compute nothing.
__device__ Element element_of_this_thread() {
  return {static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y),
          static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x)};
}

__global__ void matmul_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  const Element e = element_of_this_thread();
  if (e.row < 0 || e.row >= M || e.col < 0 || e.col >= N) return;  // the grid is rounded up to whole blocks
  const float* a = A + std::size_t(e.row) * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k] * B[std::size_t(k) * N + e.col];
  C[std::size_t(e.row) * N + e.col] = acc;
}

__global__ void record_kernel(int* rows, int* cols) {
  const Element e = element_of_this_thread();
  const std::size_t block = std::size_t(blockIdx.y) * gridDim.x + blockIdx.x;
  const std::size_t t = (block * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  rows[t] = e.row;
  cols[t] = e.col;
}

}  // namespace

void matmul(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  matmul_kernel<<<naive_kernel_exercise::grid(M, N), dim3(kBlock, kBlock), 0, stream>>>(M, N, K, A, B, C);
  CUDA_CHECK_LAUNCH();
}

void record_map(int M, int N, int* rows, int* cols, cudaStream_t stream) {
  record_kernel<<<naive_kernel_exercise::grid(M, N), dim3(kBlock, kBlock), 0, stream>>>(rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_swapped_block_axes
