// Chapter 11, kernel exercise: the split combine (the log-sum-exp merge of the splits' partials).
// Difficulty ★★, about 30 minutes. See exercises/README.md.
//
// Write merge_row (the TODO), set kImplemented to true, then run
//   cmake --build build --target 11_flash_decoding_exercise
//   build/bin/11_flash_decoding_exercise --gtest_filter='Exercise*'
// The test builds each row's partials on the host from the fp64 split model (split_model.h):
// random rows cut at random points (empty splits and rows that saw no key among them), 3, 7,
// 37 and 100 splits, d = 64 and 128, logits at unit scale and x300, O and LSE poisoned (NaN)
// before each run, every output against the fp64 softmax of the whole row.
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "kernel_exercise.h"
#include "launch.h"
#include "numeric.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 11_flash_decoding/exercises/mine.cu".
const bool kImplemented = false;

namespace {

using fdec_kernel_exercise::kMaxSplits;
using fdec_kernel_exercise::kWarps;

// The warp-wide max and sum (every lane gets the result), for merge_row.
[[maybe_unused]] __device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
[[maybe_unused]] __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One row's merge, by one warp (every lane calls it with the same lse and splits).
//   lse   the row's `splits` LSE_s (natural log; -inf for a split that saw no key)
//   O_s   the row's partials [splits][d], already offset to this lane's columns: O_s[s * d + c]
//         is column lane * (d / 32) + c of split s
// Every lane must leave with the row's L and, in acc, its own d / 32 columns of O.
template <int d>
__device__ void merge_row(const float* lse, const float* O_s, int splits, int lane, float (&acc)[d / 32], float& L) {
  // TODO, in this order:
  //   M = max_s LSE_s                       lanes over the splits (s = lane, lane + 32, ...), then warp_max
  //   no split saw a key (M = -inf):        acc[c] = 0, L = -inf, return (exp(-inf - -inf) would be NaN)
  //   L = M + log sum_s exp(LSE_s - M)      every exponent <= 0: nothing overflows; lanes, then warp_sum
  //   acc[c] = sum_s exp(LSE_s - L) O_s[s * d + c]    for s = 0 .. splits - 1, c = 0 .. d/32 - 1
  // A split with LSE_s = -inf then weighs exp(-inf) = 0. expf, logf and fmaf are the fp32 functions.
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

}  // namespace mine
