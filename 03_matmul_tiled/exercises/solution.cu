// The solution of chapter 03's kernel exercise (mine.cu): matmul_tiled.cu's smem_tiled, TILE = 16.
// Read it after your own version passes (or fails twice).
#include <cstddef>

#include "cuda_check.h"
#include "kernel_exercise.h"

namespace solution {

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
    A_tile[ty][tx] = (row < M && k0 + tx < K) ? A[std::size_t(row) * K + k0 + tx] : 0.0f;
    B_tile[ty][tx] = (k0 + ty < K && col < N) ? B[std::size_t(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // both tiles complete before anyone reads them
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += A_tile[ty][k] * B_tile[k][tx];
    __syncthreads();  // everyone done reading before the next step overwrites them
  }
  if (row < M && col < N) C[std::size_t(row) * N + col] = acc;
}

}  // namespace

void matmul(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  const dim3 grid((unsigned(N) + TILE - 1) / TILE, (unsigned(M) + TILE - 1) / TILE), block(TILE, TILE);
  smem_tiled_kernel<<<grid, block, 0, stream>>>(M, N, K, A, B, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace solution
