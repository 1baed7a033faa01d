// Chapter 03, kernel exercise: the tile loop of the shared-memory tiled matmul.
// Difficulty ★★, about 30 minutes. See exercises/README.md.
//
// Write the body of the k0 loop (the TODO), set kImplemented to true, then run
//   cmake --build build --target 03_matmul_tiled_exercise
//   build/bin/03_matmul_tiled_exercise --gtest_filter='Exercise*'
// The test checks C against an fp64 reference at shapes that are multiples of no tile (K too,
// so the last step of the loop is a partial tile), smaller than one tile, and larger,
// with fresh random A and B and C poisoned with NaN.
#include <cstddef>

#include "cuda_check.h"
#include "kernel_exercise.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 03_matmul_tiled/exercises/mine.cu".
const bool kImplemented = false;

namespace {

constexpr int TILE = 16;

// A block of TILE x TILE threads computes a TILE x TILE tile of C, one element per thread, and
// walks K in steps of TILE: at each step it stages a TILE x TILE tile of A (rows of C's tile)
// and one of B (its columns) in shared memory, one element per thread, and every thread then
// reads its row of A_tile and its column of B_tile from there. Any M, N, K: the grid is
// rounded up to whole tiles, so threads past the edge of C still help load and reach every
// barrier, but store nothing.
__global__ void smem_tiled_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  [[maybe_unused]] __shared__ float A_tile[TILE][TILE];  // A[row0 .. row0 + TILE, k0 .. k0 + TILE]
  [[maybe_unused]] __shared__ float B_tile[TILE][TILE];  // B[k0 .. k0 + TILE, col0 .. col0 + TILE]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // TODO: one step of K.
    //  1. Thread (ty, tx) copies A[row, k0 + tx] into A_tile[ty][tx] and B[k0 + ty, col] into
    //     B_tile[ty][tx], each 0 when it falls outside A or B (a 0 adds nothing to any sum).
    //  2. Wait until both tiles are complete.
    //  3. acc += sum over k < TILE of A_tile[ty][k] B_tile[k][tx].
    //  4. Wait until every thread is done reading them before the next step overwrites them.
    // ([[maybe_unused]] above only keeps the stub free of warnings: drop it.)
  }
  if (row < M && col < N) C[std::size_t(row) * N + col] = acc;
}

}  // namespace

void matmul(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  const dim3 grid((unsigned(N) + TILE - 1) / TILE, (unsigned(M) + TILE - 1) / TILE), block(TILE, TILE);
  smem_tiled_kernel<<<grid, block, 0, stream>>>(M, N, K, A, B, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mine
