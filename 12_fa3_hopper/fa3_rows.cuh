// What chapter 12 does with a consumer thread's rows besides the online softmax (chapter 10's
// attention_rows.cuh, seen through attn::WgmmaTile): P~ turned into the A operand of the next
// wgmma, and the O epilogue. Device code only.
//
// wgmma m64nN's fp32 accumulator: thread t of the warpgroup (warp w = t / 32, lane with
// g = lane / 4, c = lane % 4) holds, in register i = 4j + 2h + e,
//   row 16w + g + 8h, column 8j + 2c + e        (tc_layout.h: wgmma_d)
// so each thread has two rows (h = 0, 1), each shared by the 4 lanes of a quad: row
// statistics need two shuffles, as in chapter 10.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "09_tensor_core_matmul/hopper.cuh"
#include "10_fa2_tensor_cores/attention_rows.cuh"
#include "fa3_kernel.h"
#include "soft_exp2.h"

namespace fa3::kernel {

// P~'s exponentials split between two pipes (the online softmax's exponent policy,
// attention_rows.cuh): of every 8 pairs j of a row's scores (keys 8 j .. 8 j + 7 of the tile),
// the first kPolyEighths from soft_exp2.h's cubic on the FMA pipes, the rest from the MUFU's
// ex2.approx. j is a compile-time index of the unrolled loop: the split is fixed per register,
// with no branch. kPolyEighths = 0 is the hardware exponential everywhere.
template <int kPolyEighths>
struct SplitExp2 {
  __device__ __forceinline__ float operator()(float x, int j) const {
    return j % 8 < kPolyEighths ? exp2_poly(x) : tc::ex2(x);
  }
};

// Four fp32 -> four e4m3 in one 32-bit register, the first in the lowest byte (round to
// nearest, saturating: P~ <= 1 never saturates).
__device__ __forceinline__ std::uint32_t pack_e4m3x4(float a, float b, float c, float d) {
  const __nv_fp8x2_storage_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const __nv_fp8x2_storage_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return std::uint32_t(lo) | (std::uint32_t(hi) << 16);
}

// P~ (fp32 accumulator layout) -> A fragments of O += P V, no data movement between lanes:
// bf16, k16 step k: keys 16k .. 16k+15 are accumulator columns j = 2k, 2k+1, and
//   a0 = (g, 2c..2c+1) = s[8k+0..1]   a1 = (g+8, ..) = s[8k+2..3]
//   a2 = (g, 8+2c..)   = s[8k+4..5]   a3 = (g+8, ..) = s[8k+6..7]
// e4m3, k32 step k (keys 32k ..): the accumulator gives this thread columns 8j'+2c+e
//   (j' = 0..3); packed as a0 = {j'=0, j'=1} of row g, a2 = {j'=2, j'=3}, a1/a3 row g+8.
//   The tensor core reads them as k = 4c.. and 16+4c..: Vt8's keys are permuted to match
//   (fp8_layout.h).
template <class C>
__device__ __forceinline__ void to_p(const float (&s)[C::B_c / 2], std::uint32_t (&a)[C::kPSteps][4]) {
  if constexpr (C::kFp8) {
#pragma unroll
    for (int k = 0; k < C::kPSteps; ++k) {
      const float* x = s + 16 * k;
      a[k][0] = pack_e4m3x4(x[0], x[1], x[4], x[5]);
      a[k][1] = pack_e4m3x4(x[2], x[3], x[6], x[7]);
      a[k][2] = pack_e4m3x4(x[8], x[9], x[12], x[13]);
      a[k][3] = pack_e4m3x4(x[10], x[11], x[14], x[15]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < C::kPSteps; ++k)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[k][q] = tc::pack_bf16x2(s[8 * k + 2 * q], s[8 * k + 2 * q + 1]);
  }
}

// One pair of P~ (row slot r, pair j: keys 8 j + 2 c and + 1 of the tile) straight into its place
// in to_p's fragments, as soon as it is computed: the speculative max (fa3_forward.cuh) leaves S
// intact for the ordinary path and writes P~ here. FP8: register (j / 4, 2 (j % 4 / 2) + r), the
// low half for even j; bf16: register (j / 2, 2 (j % 2) + r). j is a compile-time index.
template <class C>
__device__ __forceinline__ void put_p(std::uint32_t (&a)[C::kPSteps][4], int r, int j, float x0, float x1) {
  if constexpr (C::kFp8) {
    const std::uint32_t v = __nv_cvt_float2_to_fp8x2(make_float2(x0, x1), __NV_SATFINITE, __NV_E4M3);
    std::uint32_t& x = a[j / 4][2 * (j % 4 / 2) + r];
    x = j % 2 == 0 ? v : x | (v << 16);
  } else {
    a[j / 2][2 * (j % 2) + r] = tc::pack_bf16x2(x0, x1);
  }
}

// The epilogue of one warpgroup's 64 rows: O_i = diag(l)^-1 O_i (FP8: times V's per-channel
// descale) and L_i (attention_rows.cuh, finish); a row that saw no key gets O = 0, L = -inf.
// O leaves through shared memory: from registers each quad holds only 4 x 4 contiguous
// bytes of a row (half of every 32-byte sector a store touches), so the warpgroup first
// writes its 64 rows to `o_smem` (this warpgroup's rows of a [d / 64 boxes][B_r rows][128
// bytes] buffer, 16-byte chunk k of row r at k ^ (r % 8): the eight rows of a quad column hit
// eight different bank groups), meets at named barrier `bar`, and copies rows out whole, 16
// bytes per lane. Rows past N are not written. row: this thread's global row of h = 0;
// wg_row0: the warpgroup's first row; t: thread in the warpgroup. (stage_o: everything up to the
// barrier; the persistent kernel copies the staged rows out by TMA instead, fa3_forward.cuh.)
template <class C>
__device__ __forceinline__ void stage_o(attn::OnlineSoftmax<2, C::kRescaleLog2>& rows, float (&o)[C::d / 2],
                                        const Params& p, int head, int row, std::uint32_t o_smem, int wg_row0, int t) {
  constexpr int d = C::d;
  const int c = t % 4;
  float L[2];
  rows.finish(attn::WgmmaTile<d>{o}, L);
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (c == 0 && row + 8 * h < p.N_q) p.L[std::int64_t(head) * p.N_q + row + 8 * h] = L[h];
  const float* dv = nullptr;
  if constexpr (C::kFp8) dv = p.descale_v + std::int64_t(head / p.H * p.H_kv + head % p.H / p.group) * d;
#pragma unroll
  for (int j = 0; j < d / 8; ++j) {
    const int col = 8 * j + 2 * c;
    float s0 = 1.0f, s1 = 1.0f;
    if constexpr (C::kFp8) s0 = dv[col], s1 = dv[col + 1];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row - wg_row0 + 8 * h;  // 0..63
      const std::uint32_t addr = o_smem + (j / 8) * (C::B_r * 128) + r * 128 + (((j % 8) ^ (r % 8)) << 4) + 4 * c;
      tc::st_shared_b32(addr, tc::pack_bf16x2(o[4 * j + 2 * h] * s0, o[4 * j + 2 * h + 1] * s1));
    }
  }
}
template <class C>
__device__ __forceinline__ void store_o(attn::OnlineSoftmax<2, C::kRescaleLog2>& rows, float (&o)[C::d / 2],
                                        const Params& p, int head, int row, std::uint32_t o_smem, int wg_row0, int t,
                                        int bar) {
  constexpr int d = C::d, kChunks = d / 8;  // 16-byte chunks per row of O
  stage_o<C>(rows, o, p, head, row, o_smem, wg_row0, t);
  tc::named_bar_sync(bar, 128);
  __nv_bfloat16* O = p.O + (std::int64_t(head) * p.N_q + wg_row0) * d;
  const int n_rows = min(C::kRowsPerWarpgroup, p.N_q - wg_row0);
#pragma unroll
  for (int q = t; q < C::kRowsPerWarpgroup * kChunks; q += 128) {
    const int r = q / kChunks, k = q % kChunks;
    if (r < n_rows) {
      const std::uint32_t addr = o_smem + (k / 8) * (C::B_r * 128) + r * 128 + (((k % 8) ^ (r % 8)) << 4);
      *reinterpret_cast<uint4*>(O + std::int64_t(r) * d + 8 * k) = tc::ld_shared_v4(addr);
    }
  }
}

}  // namespace fa3::kernel
