// A wrong answer to chapter 09's kernel exercise, kept so that the test is known to catch it:
// the B fragment loaded with ldmatrix .trans from the K-major Bt tile.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "device.h"
#include "mma.cuh"

namespace wrong_b_ldmatrix_trans {

const bool kImplemented = true;

namespace {

using tc_kernel_exercise::kTileK;
using tc_kernel_exercise::kTileM;
using tc_kernel_exercise::kTileN;
using tc_kernel_exercise::kWarpsPerBlock;

// One warp's k16 slice in shared memory, as it lies in global memory: K contiguous, 32 bytes a
// row (bf16 bits). Each 16-byte half of a row is one row of an 8 x 8 matrix for ldmatrix.
struct Slice {
  std::uint16_t A[kTileM][kTileK];   // A[m0 + r][k0 + c]
  std::uint16_t Bt[kTileN][kTileK];  // Bt[n0 + r][k0 + c] = B[k0 + c][n0 + r]
};

// acc += A_slice (16 x 16) B_slice (16 x 8), with the fragments loaded by ldmatrix.
__device__ void mma_k16(float (&acc)[4], const Slice& s, int lane) {
  // A: four 8 x 8 matrices, in the order of the fragment's registers: a0 = rows 0-7, k 0-7;
  // a1 = rows 8-15, k 0-7; a2 = rows 0-7, k 8-15; a3 = rows 8-15, k 8-15. Lanes 8j..8j+7 address
  // matrix j's rows, so lane l addresses row l % 16 at k 8 (l / 16) (tc_layout.h: ldsm_a_row/col).
  std::uint32_t a[4];
  tc::ldmatrix_x4(a, tc::smem_addr(&s.A[lane % 16][lane / 16 * 8]));
  // WRONG: "B is the second operand, so transpose it". Bt is already what the ".col" operand
  // wants (a register = two neighbouring k of one n = two neighbouring elements of a row of Bt);
  // .trans hands lane 4g + t column g of each stored 8 x 8 matrix instead, Bt[2t][g] and
  // Bt[2t + 1][g]: every product pairs A's k with the wrong element of B. The test's first
  // shape is off by O(1) everywhere (rel_l2 ~1).
  std::uint32_t b[2];
  tc::ldmatrix_x2_trans(b, tc::smem_addr(&s.Bt[lane % 8][(lane / 8) % 2 * 8]));
  tc::mma_m16n8k16_bf16(acc, a, b);  // acc is read and written: the k16 slices add up
}

// The C fragment: lane l = 4g + t holds C[g][2t], C[g][2t + 1] (acc[0], acc[1]) and
// C[g + 8][2t], C[g + 8][2t + 1] (acc[2], acc[3]) of the 16 x 8 tile.
__device__ void store_tile(float* C, int N, int m0, int n0, const float (&acc)[4], int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = m0 + g + 8 * (i / 2), col = n0 + 2 * t + i % 2;
    C[std::size_t(row) * N + col] = acc[i];
  }
}

// Warp `warp` of block (x, y) computes the 16 x 8 tile of C at row m0 = 16 (4 y + warp), column
// n0 = 8 x, walking K one k16 slice at a time: stage the slice in shared memory, mma_k16.
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    mma_tile_kernel(const std::uint16_t* A, const std::uint16_t* Bt, float* C, int M, int N, int K) {
  __shared__ __align__(16) Slice slices[kWarpsPerBlock];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = (blockIdx.y * kWarpsPerBlock + warp) * kTileM, n0 = blockIdx.x * kTileN;
  if (m0 >= M) return;  // a whole warp: the last block's spare warps
  Slice& s = slices[warp];
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k0 = 0; k0 < K; k0 += kTileK) {
    // The slice, 16 bytes a lane: lane l copies half l % 2 of row l / 2 of A, lanes 0-15 of Bt.
    const int r = lane / 2, c = lane % 2 * 8;
    *reinterpret_cast<uint4*>(&s.A[r][c]) = *reinterpret_cast<const uint4*>(A + std::size_t(m0 + r) * K + k0 + c);
    if (lane < 16)
      *reinterpret_cast<uint4*>(&s.Bt[r][c]) = *reinterpret_cast<const uint4*>(Bt + std::size_t(n0 + r) * K + k0 + c);
    __syncwarp();  // every lane's stores are visible to the warp's ldmatrix
    mma_k16(acc, s, lane);
    __syncwarp();  // every lane's ldmatrix has read the slice before the next one overwrites it
  }
  store_tile(C, N, m0, n0, acc, lane);
}

}  // namespace

void matmul(int M, int N, int K, const ladder::bf16* A, const ladder::bf16* Bt, float* C, cudaStream_t stream) {
  tc_kernel_exercise::check_arguments(M, N, K, A, Bt, C);
  const ladder::DeviceInfo& d = ladder::device();
  if (d.available && d.cc_major < 8)
    throw std::invalid_argument("09 exercise matmul: bf16 mma.sync needs compute capability 8.0 or newer; device 0 (" +
                                d.name + ") is " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor));
  const dim3 grid(static_cast<unsigned>(N / kTileN),
                  static_cast<unsigned>((M / kTileM + kWarpsPerBlock - 1) / kWarpsPerBlock));
  mma_tile_kernel<<<grid, 32 * kWarpsPerBlock, 0, stream>>>(reinterpret_cast<const std::uint16_t*>(A),
                                                            reinterpret_cast<const std::uint16_t*>(Bt), C, M, N, K);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_b_ldmatrix_trans
