#include <cstddef>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "matmul_naive.h"

namespace naive {

namespace {

// C[row, col] = sum_k A[row, k] B[k, col]: 2K loads for 2K FLOPs, and nothing
// is reused from one thread to the next except by the caches. Both kernels below
// are this function; they differ only in how a thread finds its (row, col).
__device__ void one_element(int row, int col, int M, int N, int K, const float* A, const float* B, float* C) {
  if (row >= M || col >= N) return;  // the grid is rounded up to whole blocks
  const float* a = A + std::size_t(row) * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k] * B[std::size_t(k) * N + col];
  C[std::size_t(row) * N + col] = acc;
}

// The 32 threads of a warp share threadIdx.y and have consecutive threadIdx.x.
// Here consecutive x means consecutive rows: at every step k the warp loads
// A[row..row+31, k], 32 floats K apart, so 32 different cache lines for 128
// useful bytes, plus one B[k, col] that all 32 share; at the end it stores a
// column of C, 32 lines again. The caches soften the reads (the next k's sit in
// the same lines) but every load instruction still costs 32 line lookups.
__global__ void naive_row_per_x(int M, int N, int K, const float* A, const float* B, float* C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  one_element(row, col, M, N, K, A, B, C);
}

// The same kernel with x and y swapped: consecutive x are consecutive columns.
// Now the warp loads B[k, col..col+31], one 128-byte line, and A[row, k] is one
// address for all 32 threads (loaded once, broadcast); the store of C is one line
// too. Same arithmetic, same instruction count, coalesced memory.
__global__ void naive_col_per_x(int M, int N, int K, const float* A, const float* B, float* C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  one_element(row, col, M, N, K, A, B, C);
}

void check_shape(int M, int N, int K) {
  if (M < 1 || N < 1 || K < 1)
    throw std::invalid_argument("matmul: M, N and K must all be >= 1, got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

}  // namespace

const char* name(Kernel k) {
  switch (k) {
    case Kernel::RowPerX: return "naive_row_per_x";
    case Kernel::ColPerX: return "naive_col_per_x";
  }
  return "?";
}

dim3 grid(Kernel k, int M, int N) {
  check_shape(M, N, 1);
  const bool x_is_row = k == Kernel::RowPerX;
  const long long along_x = x_is_row ? M : N, along_y = x_is_row ? N : M;
  const long long blocks_y = (along_y + kBlock - 1) / kBlock;
  constexpr long long kMaxGridY = 65535;
  if (blocks_y > kMaxGridY)
    throw std::invalid_argument(std::string(name(k)) + ": " + (x_is_row ? "N" : "M") +
                                " must be <= " + std::to_string(kMaxGridY * kBlock) + " (gridDim.y <= 65535), got " +
                                std::to_string(along_y));
  return dim3(static_cast<unsigned>((along_x + kBlock - 1) / kBlock), static_cast<unsigned>(blocks_y));
}

void matmul(Kernel k, int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  check_shape(M, N, K);
  const dim3 blocks = grid(k, M, N), threads(kBlock, kBlock);
  switch (k) {
    case Kernel::RowPerX: naive_row_per_x<<<blocks, threads, 0, stream>>>(M, N, K, A, B, C); break;
    case Kernel::ColPerX: naive_col_per_x<<<blocks, threads, 0, stream>>>(M, N, K, A, B, C); break;
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace naive
