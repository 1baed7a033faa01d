// Chapter 09, kernel exercise: one warp's mma.sync.m16n8k16 tile, fed by ldmatrix.
// Difficulty ★★, about 45 minutes. See exercises/README.md.
//
// Write mma_k16 and store_tile (the two TODOs), set kImplemented to true, then run
//   cmake --build build --target 09_tensor_core_matmul_exercise
//   build/bin/09_tensor_core_matmul_exercise --gtest_filter='Exercise*'
// The test checks C against the fp64 reference at shapes from one tile (16 x 8 x 16) to
// 1024 x 512 x 1008 and K = 4096, fresh random bf16 inputs, C poisoned (NaN) before each run,
// every element within the fp32-accumulation bound; and that shapes which are not whole tiles
// are refused. Use mma.cuh's wrappers (tc::ldmatrix_x4, tc::ldmatrix_x2, tc::mma_m16n8k16_bf16,
// tc::smem_addr) and its fragment table; tc_layout.h has the chapter's own lane maps, but
// write yours first and compare after.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device.h"
#include "kernel_exercise.h"
#include "mma.cuh"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 09_tensor_core_matmul/exercises/mine.cu".
const bool kImplemented = false;

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
  // TODO:
  //   std::uint32_t a[4]: tc::ldmatrix_x4(a, tc::smem_addr(&s.A[row][col])), where each lane names
  //     one 16-byte row (8 bf16) of one of four 8 x 8 matrices: lanes 8j .. 8j+7 the rows of
  //     matrix j, and register j comes back as the fragment's a_j (mma.cuh's table). Which
  //     quarter of the 16 x 16 slice is a0, a1, a2, a3, so which (row, col) does lane l give?
  //   std::uint32_t b[2]: tc::ldmatrix_x2 (or ldmatrix_x2_trans?) from s.Bt, lanes 0-15 naming
  //     the rows of b0's and b1's matrices (lanes 16-31: any valid address, they are not read).
  //     Look at what one register of B holds, and where those two values lie in s.Bt.
  //   tc::mma_m16n8k16_bf16(acc, a, b): one mma.sync.m16n8k16, acc += A B.
}

// The 16 x 8 tile of C at (m0, n0), from the warp's accumulators.
__device__ void store_tile(float* C, int N, int m0, int n0, const float (&acc)[4], int lane) {
  // TODO: acc[i] of lane l holds the element of the 16 x 8 tile that the C, D row of mma.cuh's
  // fragment table names (g = l / 4, t = l % 4). Store each at C[(m0 + row) * N + n0 + col].
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

}  // namespace mine
