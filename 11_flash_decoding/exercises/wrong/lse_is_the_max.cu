// A wrong answer to chapter 11's kernel exercise, kept so that the test is known to catch it:
// L = max_s LSE_s, as if the largest split held all the row's softmax mass. The weights
// exp(LSE_s - M) then sum to more than 1 (each split with a key adds its share relative to the
// largest), so O is too large and L too small by log sum_s exp(LSE_s - M), up to log(splits).
// Every case with two or more splits that saw keys catches it: O and L off by O(1).
#include <cmath>
#include <stdexcept>
#include <string>

#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"
#include "numeric.h"

namespace wrong_lse_is_the_max {

const bool kImplemented = true;

namespace {

using fdec_kernel_exercise::kMaxSplits;
using fdec_kernel_exercise::kWarps;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// One row's merge, by one warp (every lane calls it with the same lse and splits).
//   lse   the row's `splits` LSE_s (natural log; -inf for a split that saw no key)
//   O_s   the row's partials [splits][d], already offset to this lane's columns: O_s[s * d + c]
//         is column lane * (d / 32) + c of split s
// Every lane must leave with the row's L and, in acc, its own d / 32 columns of O.
template <int d>
__device__ void merge_row(const float* lse, const float* O_s, int splits, int lane, float (&acc)[d / 32], float& L) {
  constexpr int kCols = d / 32;
  float M = -INFINITY;
  for (int s = lane; s < splits; s += 32) M = fmaxf(M, lse[s]);
  M = warp_max(M);
#pragma unroll
  for (int c = 0; c < kCols; ++c) acc[c] = 0.0f;
  L = M;  // the max, not the log-sum-exp
  if (M == -INFINITY) return;
  for (int s = 0; s < splits; ++s) {
    const float w = expf(lse[s] - L);
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[c] = fmaf(w, O_s[static_cast<long long>(s) * d + c], acc[c]);
  }
}

// One warp per row: lane l owns columns [l d/32, (l + 1) d/32) of the row's O.
template <int d>
__global__ void __launch_bounds__(32 * kWarps)
    combine_kernel(const float* O_part, const float* lse_part, float* O, float* LSE, int rows, int splits) {
  constexpr int kCols = d / 32;
  const int lane = threadIdx.x % 32;
  const long long row = static_cast<long long>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp: the shuffles in merge_row see all 32 lanes
  float acc[kCols] = {};
  float L = -INFINITY;
  merge_row<d>(lse_part + row * splits, O_part + row * splits * d + lane * kCols, splits, lane, acc, L);
  float* out = O + row * d + lane * kCols;
#pragma unroll
  for (int c = 0; c < kCols; ++c) out[c] = acc[c];
  if (lane == 0) LSE[row] = L;
}

template <int d>
void launch(const float* O_part, const float* lse_part, float* O, float* LSE, int rows, int splits,
            cudaStream_t stream) {
  combine_kernel<d><<<static_cast<unsigned>(ladder::ceil_div(rows, kWarps)), 32 * kWarps, 0, stream>>>(
      O_part, lse_part, O, LSE, rows, splits);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void combine(const float* O_part, const float* lse_part, float* O, float* LSE, int rows, int splits, int d,
             cudaStream_t stream) {
  const std::string who = "combine (exercise)";
  if (d != 64 && d != 128)
    throw std::invalid_argument(who + ": d = " + std::to_string(d) + ": compiled for d in {64, 128}");
  if (splits < 1 || splits > kMaxSplits)
    throw std::invalid_argument(who + ": splits = " + std::to_string(splits) + ": 1 to " + std::to_string(kMaxSplits));
  if (rows < 1) throw std::invalid_argument(who + ": rows = " + std::to_string(rows) + ": at least 1");
  ladder::check_pointers(who, {{"O_part", O_part}, {"lse_part", lse_part}, {"O", O}, {"LSE", LSE}}, 4);
  ladder::check_grid(who, static_cast<unsigned long long>(ladder::ceil_div(rows, kWarps)));
  if (d == 128)
    launch<128>(O_part, lse_part, O, LSE, rows, splits, stream);
  else
    launch<64>(O_part, lse_part, O, LSE, rows, splits, stream);
}

}  // namespace wrong_lse_is_the_max
