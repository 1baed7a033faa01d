// A wrong answer to chapter 08's kernel exercise, kept so that the test is known to catch it:
// registers, and the wrong numbers.
#include <cstddef>

#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"

namespace wrong_columns_mixed_up {

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
// acc in registers, O wrong.
__global__ void __launch_bounds__(32 * kWarps) pv_kernel(int M, int K, const float* P, const float* V, float* O) {
  const int lane = threadIdx.x;
  const int row0 = (blockIdx.x * kWarps + threadIdx.y) * kRows;
  float acc[kRows][kCols];
  // In registers, but two column maps: the sums read V's columns lane kCols + jj (four
  // neighbours per lane), the stores write columns lane + 32 jj. Each output lands in another
  // output's place.
#pragma unroll
  for (int ii = 0; ii < kRows; ++ii)
#pragma unroll
    for (int jj = 0; jj < kCols; ++jj) acc[ii][jj] = 0.0f;
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int ii = 0; ii < kRows; ++ii) {
      const float p = row0 + ii < M ? P[std::size_t(row0 + ii) * K + k] : 0.0f;
#pragma unroll
      for (int jj = 0; jj < kCols; ++jj) acc[ii][jj] = fmaf(p, V[std::size_t(k) * d + lane * kCols + jj], acc[ii][jj]);
    }
  }
#pragma unroll
  for (int ii = 0; ii < kRows; ++ii) {
    if (row0 + ii >= M) break;
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

}  // namespace wrong_columns_mixed_up
