// A consumer thread's share of its warpgroup's 64 rows: the online softmax on wgmma's
// accumulator registers, P~ turned into the A operand of the next wgmma, and the
// epilogue. The math is chapter 10's (fa2_tc_forward.cu); what changes is the fragment:
//
// wgmma m64nN's fp32 accumulator: thread t of the warpgroup (warp w = t / 32, lane with
// g = lane / 4, c = lane % 4) holds, in register i = 4j + 2h + e,
//   row 16w + g + 8h, column 8j + 2c + e        (tc_layout.h: wgmma_d)
// so each thread has two rows (h = 0, 1), each shared by the 4 lanes of a quad: row
// statistics need two shuffles, as in chapter 10. Device code only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "09_tensor_core_matmul/mma.cuh"
#include "fa3_kernel.h"

namespace fa3::detail {

// Row statistics: the 4 lanes of a quad share a row here too (09's mma.cuh).
using tc::quad_max;
using tc::quad_sum;

// Four fp32 -> four e4m3 in one 32-bit register, the first in the lowest byte (round to
// nearest, saturating: P~ <= 1 never saturates).
__device__ __forceinline__ std::uint32_t pack_e4m3x4(float a, float b, float c, float d) {
  const __nv_fp8x2_storage_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const __nv_fp8x2_storage_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return std::uint32_t(lo) | (std::uint32_t(hi) << 16);
}

template <int d, bool kFp8>
struct Rows {
  static constexpr int B_c = kBc;
  float o[d / 2];  // O_i, unnormalised, in the accumulator layout (columns of d)
  float m[2];      // running max, already scaled to log2 units (S * scale * log2 e)
  float l[2];      // this lane's partial row sum of P~ (the quad sums at the end)
  float alpha[2];  // exp2(m_old - m_new) of the last softmax, applied by rescale_o
  int row, c;      // global query row of h = 0; lane % 4

  __device__ void init(int row_g, int c_) {
    row = row_g, c = c_;
#pragma unroll
    for (int i = 0; i < d / 2; ++i) o[i] = 0.0f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;
    alpha[0] = alpha[1] = 1.0f;
  }

  // P~ = exp2(S sl2e - m_new) in place; m, l updated; alpha kept for rescale_o (which the
  // intra-warpgroup pipeline applies later, once the P V in flight has finished with O_i).
  // kMasked: -inf for keys past N_kv and, causal, after query + offset.
  template <bool kMasked>
  __device__ void online_softmax(float (&s)[B_c / 2], float sl2e, int col0, const Params& p) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (kMasked) {
        const int last = p.causal ? min(p.N_kv - 1, row + 8 * h + p.offset) : p.N_kv - 1;
#pragma unroll
        for (int j = 0; j < B_c / 8; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (col0 + 8 * j + 2 * c + e > last) s[4 * j + 2 * h + e] = -INFINITY;
      }
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < B_c / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
      const float m_new = fmaxf(m[h], quad_max(mx) * sl2e);
      // A row that has seen only masked keys keeps m = -inf: base 0 keeps exp2 away from
      // -inf - -inf = NaN (P~ = 0, alpha = 0).
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      alpha[h] = tc::ex2(m[h] - base);
      m[h] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < B_c / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[4 * j + 2 * h + e];
          x = tc::ex2(fmaf(x, sl2e, -base));
          sum += x;
        }
      l[h] = alpha[h] * l[h] + sum;
    }
  }

  __device__ void rescale_o() {
#pragma unroll
    for (int i = 0; i < d / 2; ++i) o[i] *= alpha[(i / 2) % 2];
  }

  // P~ (fp32 accumulator layout) -> A fragments of O += P V, no data movement between lanes:
  // bf16, k16 step k: keys 16k .. 16k+15 are accumulator columns j = 2k, 2k+1, and
  //   a0 = (g, 2c..2c+1) = s[8k+0..1]   a1 = (g+8, ..) = s[8k+2..3]
  //   a2 = (g, 8+2c..)   = s[8k+4..5]   a3 = (g+8, ..) = s[8k+6..7]
  // e4m3, k32 step k (keys 32k ..): the accumulator gives this thread columns 8j'+2c+e
  //   (j' = 0..3); packed as a0 = {j'=0, j'=1} of row g, a2 = {j'=2, j'=3}, a1/a3 row g+8.
  //   The tensor core reads them as k = 4c.. and 16+4c..: Vt8's keys are permuted to match
  //   (fp8_layout.h).
  __device__ void to_p(const float (&s)[B_c / 2], std::uint32_t (&a)[kFp8 ? B_c / 32 : B_c / 16][4]) const {
    if constexpr (kFp8) {
#pragma unroll
      for (int k = 0; k < B_c / 32; ++k) {
        const float* x = s + 16 * k;
        a[k][0] = pack_e4m3x4(x[0], x[1], x[4], x[5]);
        a[k][1] = pack_e4m3x4(x[2], x[3], x[6], x[7]);
        a[k][2] = pack_e4m3x4(x[8], x[9], x[12], x[13]);
        a[k][3] = pack_e4m3x4(x[10], x[11], x[14], x[15]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < B_c / 16; ++k)
#pragma unroll
        for (int q = 0; q < 4; ++q) a[k][q] = tc::pack_bf16x2(s[8 * k + 2 * q], s[8 * k + 2 * q + 1]);
    }
  }

  // O_i = diag(l)^-1 O_i (FP8: times V's per-channel descale), L_i = m ln 2 + ln l; a row
  // that saw no key gets O = 0, L = -inf. O leaves through shared memory: from registers
  // each quad holds only 4 x 4 contiguous bytes of a row (half of every 32-byte sector a
  // store touches), so the warpgroup first writes its 64 rows to `o_smem` (this warpgroup's
  // rows of a [d / 64 boxes][kBr rows][128 bytes] buffer, 16-byte chunk k of row r at
  // k ^ (r % 8): the eight rows of a quad column hit eight different bank groups), meets at
  // named barrier `bar`, and copies rows out whole, 16 bytes per lane. Rows past N are not
  // written. wg_row0: global row of the warpgroup's first row; t: thread in the warpgroup.
  __device__ void store(const Params& p, int head, std::uint32_t o_smem, int wg_row0, int t, int bar) {
    constexpr float kLn2 = 0.6931471805599453f;
    constexpr int kChunks = d / 8;  // 16-byte chunks per row of O
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float sum = quad_sum(l[h]);
      inv[h] = sum > 0.0f ? 1.0f / sum : 0.0f;
      const int r = row + 8 * h;
      if (c == 0 && r < p.N_q) p.L[std::int64_t(head) * p.N_q + r] = sum > 0.0f ? m[h] * kLn2 + logf(sum) : -INFINITY;
    }
    const float* dv = nullptr;
    if constexpr (kFp8) dv = p.descale_v + std::int64_t(head / p.H * p.H_kv + head % p.H / p.group) * d;
#pragma unroll
    for (int j = 0; j < d / 8; ++j) {
      const int col = 8 * j + 2 * c;
      float s0 = 1.0f, s1 = 1.0f;
      if constexpr (kFp8) s0 = dv[col], s1 = dv[col + 1];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row - wg_row0 + 8 * h;  // 0..63
        const std::uint32_t addr = o_smem + (j / 8) * (kBr * 128) + r * 128 + (((j % 8) ^ (r % 8)) << 4) + 4 * c;
        const std::uint32_t v = tc::pack_bf16x2(o[4 * j + 2 * h] * inv[h] * s0, o[4 * j + 2 * h + 1] * inv[h] * s1);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
      }
    }
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar) : "memory");
    __nv_bfloat16* O = p.O + (std::int64_t(head) * p.N_q + wg_row0) * d;
    const int rows = min(kRowsPerWarpgroup, p.N_q - wg_row0);
#pragma unroll
    for (int q = t; q < kRowsPerWarpgroup * kChunks; q += 128) {
      const int r = q / kChunks, k = q % kChunks;
      if (r < rows) {
        const std::uint32_t addr = o_smem + (k / 8) * (kBr * 128) + r * 128 + (((k % 8) ^ (r % 8)) << 4);
        uint4 v;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(addr)
                     : "memory");
        *reinterpret_cast<uint4*>(O + std::int64_t(r) * d + 8 * k) = v;
      }
    }
  }
};

}  // namespace fa3::detail
