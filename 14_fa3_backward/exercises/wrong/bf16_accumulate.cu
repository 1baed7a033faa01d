// A wrong answer to chapter 14's kernel exercise, kept so that the test is known to catch it:
// the 8 products of a unit are summed in bf16 (__hfma2 on pairs), not in fp32.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "../kernel_exercise.h"
#include "cuda_check.h"
#include "launch.h"
#include "numeric.h"

namespace wrong_bf16_accumulate {

const bool kImplemented = true;

namespace {

using fa3_bwd_kernel_exercise::kThreads;
using fa3_bwd_kernel_exercise::kUnit;
using ladder::bf16;

// Wrong: "one __hfma2 does two products on bf16 pairs: 4 instructions, no conversions". But
// __hfma2 on __nv_bfloat162 rounds its result to bf16, 8 significant bits: each of the 4 steps
// of each half loses up to 2^-9 of the running sum (the first one rounds an exact 16-bit
// product). Over a row that is about 2e-3 of D (rel_l2), two orders of magnitude over the
// test's kFp32 bound (1e-5) for the fp32 sum; with 64 or 128 independent roundings per row, no
// size is lucky. Invisible in a D printed to 3 digits, caught by every run of the test.
__device__ float dot_unit(const bf16* o, const bf16* g) {
  const uint4 a = *reinterpret_cast<const uint4*>(o);
  const uint4 b = *reinterpret_cast<const uint4*>(g);
  const std::uint32_t wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w};
  __nv_bfloat162 acc = __float2bfloat162_rn(0.0f);
#pragma unroll
  for (int k = 0; k < 4; ++k)
    acc = __hfma2(*reinterpret_cast<const __nv_bfloat162*>(&wa[k]), *reinterpret_cast<const __nv_bfloat162*>(&wb[k]),
                  acc);
  const float2 sum = __bfloat1622float2(acc);
  return sum.x + sum.y;
}

// The sum of `part` over the kLanes neighbouring lanes that hold one row (an aligned group of
// kLanes lanes: kLanes is 8 or 16, a power of two that divides 32), left in every one of them.
// Every lane of the warp calls it, live or not.
template <int kLanes>
__device__ float row_sum(float part) {
  // A butterfly: after the step with offset `off`, each lane holds the sum of its aligned group of
  // 2 off lanes. xor with off < kLanes never leaves the row's group, so rows never mix.
#pragma unroll
  for (int off = kLanes / 2; off > 0; off /= 2) part += __shfl_xor_sync(0xffffffffu, part, off);
  return part;
}

// kLanes = d / 8 consecutive threads per row, 8 columns each: a warp holds 2 (d = 128) or 4
// (d = 64) whole rows, and its 16-byte loads cover 512 contiguous bytes of O.
template <int d>
__global__ void __launch_bounds__(kThreads)
    preprocess_D_kernel(const bf16* __restrict__ O, const bf16* __restrict__ dO, float* __restrict__ D, int rows) {
  constexpr int kLanes = d / kUnit;
  const std::int64_t k = std::int64_t(blockIdx.x) * kThreads + threadIdx.x, row = k / kLanes;
  const int col = kUnit * static_cast<int>(k % kLanes);
  const bool live = row < rows;  // the tail: a row's lanes are all live or all not
  const float part = live ? dot_unit(O + row * d + col, dO + row * d + col) : 0.0f;
  const float dot = row_sum<kLanes>(part);  // every lane, live or not: the shuffles name the whole warp
  if (live && col == 0) D[row] = dot;
}

}  // namespace

void preprocess_D(const bf16* O, const bf16* dO, float* D, int rows, int d, cudaStream_t stream) {
  const std::string who = "preprocess_D (exercise)";
  if (d != 64 && d != 128)
    throw std::invalid_argument(who + ": d = " + std::to_string(d) + ", but this kernel handles d = 64 and 128");
  if (rows < 1) throw std::invalid_argument(who + ": rows = " + std::to_string(rows) + ", must be at least 1");
  ladder::check_pointers(who, {{"O", O}, {"dO", dO}, {"D", D, alignof(float)}}, 16);  // O, dO: 16-byte loads
  const std::int64_t blocks = ladder::ceil_div(std::int64_t(rows) * (d / kUnit), std::int64_t(kThreads));
  ladder::check_grid(who, static_cast<unsigned long long>(blocks));
  if (d == 128)
    preprocess_D_kernel<128><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(O, dO, D, rows);
  else
    preprocess_D_kernel<64><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(O, dO, D, rows);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_bf16_accumulate
