// The solution of chapter 08's kernel exercise (mine.cu): spill.cu's loops over ii and jj.
// Read it after your own version passes (or fails twice).
#include <cstddef>

#include "cuda_check.h"
#include "kernel_exercise.h"
#include "launch.h"

namespace solution {

const bool kImplemented = true;

namespace {

using spill_kernel_exercise::d;
using spill_kernel_exercise::kCols;
using spill_kernel_exercise::kRows;
using spill_kernel_exercise::kWarps;

// O = P V, the product that ends every FA step (O_i += P~_ij V_j), here on its own. Block
// (32, kWarps): warp threadIdx.y owns rows row0 .. row0 + kRows - 1 of O, lane threadIdx.x the
// columns lane + 32 jj (jj < kCols) of each: a warp's load of a row of V and its store of a row
// of O are 128 consecutive bytes. Each thread sums its kRows x kCols outputs in acc.
// acc in registers: ptxas reports no stack frame.
__global__ void __launch_bounds__(32 * kWarps) pv_kernel(int M, int K, const float* P, const float* V, float* O) {
  const int lane = threadIdx.x;
  const int row0 = (blockIdx.x * kWarps + threadIdx.y) * kRows;
  float acc[kRows][kCols];
  // Every loop over an index of acc has a constant trip count and is unrolled: ii and jj are
  // constants in each copy of the body, and acc[ii][jj] is one named register.
#pragma unroll
  for (int ii = 0; ii < kRows; ++ii)
#pragma unroll
    for (int jj = 0; jj < kCols; ++jj) acc[ii][jj] = 0.0f;
  for (int k = 0; k < K; ++k) {
    const float* V_k = V + std::size_t(k) * d + lane;
#pragma unroll
    for (int ii = 0; ii < kRows; ++ii) {
      const float p = row0 + ii < M ? P[std::size_t(row0 + ii) * K + k] : 0.0f;  // rows past M: 0
#pragma unroll
      for (int jj = 0; jj < kCols; ++jj) acc[ii][jj] = fmaf(p, V_k[32 * jj], acc[ii][jj]);
    }
  }
#pragma unroll
  for (int ii = 0; ii < kRows; ++ii) {
    if (row0 + ii >= M) break;  // still a constant index: the copies after it are skipped, not rolled
#pragma unroll
    for (int jj = 0; jj < kCols; ++jj) O[std::size_t(row0 + ii) * d + lane + 32 * jj] = acc[ii][jj];
  }
}

}  // namespace

void pv(int M, int K, const float* P, const float* V, float* O, cudaStream_t stream) {
  const long long blocks = (M + kWarps * kRows - 1) / (kWarps * kRows);
  ladder::check_grid("pv (exercise)", static_cast<unsigned long long>(blocks));
  pv_kernel<<<static_cast<unsigned>(blocks), dim3(32, kWarps), 0, stream>>>(M, K, P, V, O);
  CUDA_CHECK_LAUNCH();
}

}  // namespace solution
