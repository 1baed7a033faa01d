// A wrong answer to chapter 03's kernel exercise, kept so that the test is known to catch it:
// the edge of A and B is guarded but not filled with zeros.
#include <cstddef>

#include "../kernel_exercise.h"
#include "cuda_check.h"

namespace wrong_no_zero_fill {

const bool kImplemented = true;

namespace {

constexpr int TILE = 16;

// A block of TILE x TILE threads computes a TILE x TILE tile of C, one element per thread, and
// walks K in steps of TILE: at each step it stages a TILE x TILE tile of A (rows of C's tile)
// and one of B (its columns) in shared memory, one element per thread, and every thread then
// reads its row of A_tile and its column of B_tile from there. Any M, N, K: the grid is
// rounded up to whole tiles, so threads past the edge of C still help load and reach every
// barrier, but store nothing.
__global__ void smem_tiled_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  __shared__ float A_tile[TILE][TILE];  // A[row0 .. row0 + TILE, k0 .. k0 + TILE]
  __shared__ float B_tile[TILE][TILE];  // B[k0 .. k0 + TILE, col0 .. col0 + TILE]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // The loads are guarded, but an element outside A or B leaves its slot as it was: on the
    // last step of a K that is not a multiple of TILE, the previous step's values, which then
    // join the sum.
    if (row < M && k0 + tx < K) A_tile[ty][tx] = A[std::size_t(row) * K + k0 + tx];
    if (k0 + ty < K && col < N) B_tile[ty][tx] = B[std::size_t(k0 + ty) * N + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += A_tile[ty][k] * B_tile[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[std::size_t(row) * N + col] = acc;
}

}  // namespace

void matmul(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  const dim3 grid((unsigned(N) + TILE - 1) / TILE, (unsigned(M) + TILE - 1) / TILE), block(TILE, TILE);
  smem_tiled_kernel<<<grid, block, 0, stream>>>(M, N, K, A, B, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_no_zero_fill
