// Chapter 02, kernel exercise: the coalesced thread -> (row, col) map.
// Difficulty ★, about 15 minutes. See exercises/README.md.
//
// Write element_of_this_thread (the TODO), set kImplemented to true, then run
//   cmake --build build --target 02_matmul_naive_exercise
//   build/bin/02_matmul_naive_exercise --gtest_filter='Exercise*'
// The test checks C against an fp64 reference at shapes that are multiples of no block size,
// that every element of C has exactly one thread, and that every warp's store of C is
// coalesced: its 32 lanes write 32 consecutive floats, at most 5 sectors of 32 bytes
// (4 when the row starts 32-byte aligned), where one lane per row would take 32.
#include <cstddef>

#include "cuda_check.h"
#include "kernel_exercise.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 02_matmul_naive/exercises/mine.cu".
const bool kImplemented = false;

namespace {

using naive_kernel_exercise::kBlock;

// The element of C this thread computes (row -1: none).
struct Element {
  int row, col;
};

// The grid (kernel_exercise.h) is given: grid.x counts blocks of kBlock x kBlock threads along
// the N columns of C, grid.y along its M rows. A warp is 32 threads of one block with the same
// threadIdx.y and threadIdx.x = 0..31. Choose the map so that a warp's threads compute 32
// neighbours along a row of C: then they read B[k, col] and write C[row, col] at consecutive
// addresses (one line), and A[row, k] is one address for all of them (a broadcast).
__device__ Element element_of_this_thread() {
  // TODO: row and col from blockIdx, blockDim and threadIdx.
  return {-1, -1};
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

}  // namespace mine
