// Chapter 08, kernel exercise: make a local array live in registers.
// Difficulty ★★, about 30 minutes. See exercises/README.md.
//
// Rewrite the loops of pv_kernel (the TODO), set kImplemented to true, then run
//   cmake --build build --target 08_spilling_study_exercise
//   build/bin/08_spilling_study_exercise --gtest_filter='Exercise*'
// The build runs ptxas -v over this file, and the test reads its report for pv_kernel: 0 bytes
// stack frame and no spill stores or loads (this part needs no GPU). On a GPU it also checks O
// against an fp64 reference at M that are multiples of no block (16 rows), O poisoned (NaN)
// first. As given, the kernel is right and ptxas reports a 64-byte stack frame: acc in local
// memory. Run the build with -v to see ptxas's lines, or read
// build/08_spilling_study/exercises/ptxas_mine.log.
#include <cstddef>

#include "cuda_check.h"
#include "kernel_exercise.h"
#include "launch.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 08_spilling_study/exercises/mine.cu".
const bool kImplemented = false;

namespace {

using spill_kernel_exercise::d;
using spill_kernel_exercise::kCols;
using spill_kernel_exercise::kRows;
using spill_kernel_exercise::kWarps;

// O = P V, the product that ends every FA step (O_i += P~_ij V_j), here on its own. Block
// (32, kWarps): warp threadIdx.y owns rows row0 .. row0 + kRows - 1 of O, lane threadIdx.x the
// columns lane + 32 jj (jj < kCols) of each: a warp's load of a row of V and its store of a row
// of O are 128 consecutive bytes. Each thread sums its kRows x kCols outputs in acc.
// As given, right but slow: see the TODO.
__global__ void __launch_bounds__(32 * kWarps) pv_kernel(int M, int K, const float* P, const float* V, float* O) {
  const int lane = threadIdx.x;
  const int row0 = (blockIdx.x * kWarps + threadIdx.y) * kRows;
  float acc[kRows][kCols];
  // TODO: the loops below are right, but they index acc with col / 32, where col starts at lane:
  // a value known only at run time, so acc cannot be registers (they have no addresses) and the
  // compiler gives it a stack frame in local memory. Rewrite them so that every index into acc is
  // a compile-time constant: loops with constant trip counts over ii < kRows and jj < kCols, fully
  // unrolled (#pragma unroll), the column computed from jj. Then ptxas reports 0 bytes stack frame.
  for (int ii = 0; ii < kRows; ++ii)
    for (int col = lane; col < d; col += 32) acc[ii][col / 32] = 0.0f;
  for (int k = 0; k < K; ++k)
    for (int ii = 0; ii < kRows; ++ii) {
      const float p = row0 + ii < M ? P[std::size_t(row0 + ii) * K + k] : 0.0f;  // rows past M: 0
      for (int col = lane; col < d; col += 32)
        acc[ii][col / 32] = fmaf(p, V[std::size_t(k) * d + col], acc[ii][col / 32]);
    }
  for (int ii = 0; ii < kRows; ++ii) {
    if (row0 + ii >= M) break;
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

}  // namespace mine
