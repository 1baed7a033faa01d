// A wrong answer to chapter 08's kernel exercise, kept so that the test is known to catch it:
// the loops marked for unrolling, the indices still run-time values. O is right; ptxas still
// reports a stack frame.
#include <cstddef>

#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"

namespace wrong_unroll_pragma_only {

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
// acc still in local memory.
__global__ void __launch_bounds__(32 * kWarps) pv_kernel(int M, int K, const float* P, const float* V, float* O) {
  const int lane = threadIdx.x;
  const int row0 = (blockIdx.x * kWarps + threadIdx.y) * kRows;
  float acc[kRows][kCols];
  // #pragma unroll on the column loops changes nothing: their trip count depends on lane, a
  // run-time value, so they cannot be unrolled fully, and col / 32 stays a run-time index.
#pragma unroll
  for (int ii = 0; ii < kRows; ++ii)
#pragma unroll
    for (int col = lane; col < d; col += 32) acc[ii][col / 32] = 0.0f;
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int ii = 0; ii < kRows; ++ii) {
      const float p = row0 + ii < M ? P[std::size_t(row0 + ii) * K + k] : 0.0f;
#pragma unroll
      for (int col = lane; col < d; col += 32)
        acc[ii][col / 32] = fmaf(p, V[std::size_t(k) * d + col], acc[ii][col / 32]);
    }
#pragma unroll
  for (int ii = 0; ii < kRows; ++ii) {
    if (row0 + ii >= M) break;
#pragma unroll
    for (int col = lane; col < d; col += 32) O[std::size_t(row0 + ii) * d + col] = acc[ii][col / 32];
  }
}

}  // namespace

void pv(int M, int K, const float* P, const float* V, float* O, cudaStream_t stream) {
  const long long blocks = (M + kWarps * kRows - 1) / (kWarps * kRows);
  ladder::check_grid("pv (exercise)", static_cast<unsigned long long>(blocks));
  pv_kernel<<<static_cast<unsigned>(blocks), dim3(32, kWarps), 0, stream>>>(M, K, P, V, O);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_unroll_pragma_only
