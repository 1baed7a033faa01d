// The device pieces every step of chapter 09 shares: the kernels' parameters, the
// guarded element loader (the one guard of the chapter), the 16-byte fast copy, and the
// bounds-checked store of C. Included by tc_matmul.cu (steps 1-4) and
// tc_matmul_hopper.cu (steps 5-6).
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "mma.cuh"
#include "numeric.h"
#include "tc_layout.h"

namespace tcmm {

// Every step walks K in slices of 64 bf16: one 128-byte row per tile row, the width of
// the 128-byte swizzle and of a TMA box row.
inline constexpr int BK = 64;

struct Params {
  int M, N, K;
  const __nv_bfloat16* A;   // [M, K]
  const __nv_bfloat16* Bt;  // [N, K]
  float* C;                 // [M, N]
  bool vec2;                // N even and C 8-byte aligned: C stored as float2
  int group_m;              // tile order of the persistent steps (see tc_matmul_hopper.cu)
};

// Byte offset of element (row, col) in a shared-memory tile with 64 bf16 per row.
template <bool kSwizzle>
__host__ __device__ constexpr std::uint32_t tile_offset(int row, int col) {
  return kSwizzle ? tc::layout::swizzled_offset(row, col) : tc::layout::plain_offset(row, col);
}
// The kernels swizzle with mma.cuh's tc::swizzle_128b; the layout model the tests check
// is tc_layout.h's. They must be the same function.
static_assert(tc::layout::swizzled_offset(5, 19) == 2 * tc::swizzle_128b(5, 19, 64));
static_assert(tc::layout::swizzled_offset(13, 63) == 2 * tc::swizzle_128b(13, 63, 64));
static_assert(tc::layout::swizzled_offset(13, 63) == tc::layout::swizzle_128b_address(13 * 128 + 63 * 2));

// The guard: X[row, k .. k+7] of a rows x K row-major bf16 matrix as 16 bytes, zeros
// outside it. Element loads: no assumption about K or the alignment of X.
__device__ __forceinline__ uint4 load8_guarded(const __nv_bfloat16* X, int rows, int K, int row, int k) {
  const unsigned short* x = reinterpret_cast<const unsigned short*>(X) + std::size_t(row) * K;
  unsigned short v[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = (row < rows && k + e < K) ? x[k + e] : 0;
  return make_uint4(v[0] | unsigned(v[1]) << 16, v[2] | unsigned(v[3]) << 16, v[4] | unsigned(v[5]) << 16,
                    v[6] | unsigned(v[7]) << 16);
}

// Copies the ROWS x 64 tile of X (rows x K, row-major) whose corner is (row0, k0) to the
// shared-memory tile at `tile`, one 16-byte chunk (8 bf16) at a time, thread `t` of
// `kThreads` taking chunks t, t + kThreads, ...: consecutive threads read consecutive
// 16 bytes of a row, so a warp reads 4 whole 128-byte rows.
//   fast path: cp.async, 16 bytes global -> shared; chunks outside X are zero-filled
//              (K % 8 == 0, so a chunk is wholly inside or wholly outside);
//   guarded:   load8_guarded + one 16-byte shared store. Ordinary stores: a reader in
//              the async proxy (wgmma) needs fence_proxy_async_shared_cta() after it.
template <int ROWS, int kThreads, bool kSwizzle, bool kGuarded>
__device__ __forceinline__ void load_tile(unsigned char* tile, const __nv_bfloat16* X, int rows, int K, int row0,
                                          int k0, int t) {
  constexpr int kChunks = ROWS * 8;
  static_assert(kChunks % kThreads == 0, "every thread copies the same number of chunks");
  auto chunk_at = [&](int i, int& row, int& k) {
    const int chunk = t + i * kThreads;
    const int r = chunk / 8, c = chunk % 8 * 8;  // row within the tile, first column of the chunk
    row = row0 + r, k = k0 + c;
    return tile + tile_offset<kSwizzle>(r, c);
  };
  if constexpr (kGuarded) {
    // Two chunks (16 loads) in flight at a time: enough to overlap their latencies without
    // running a 40-register producer (step 6) out of registers.
#pragma unroll 2
    for (int i = 0; i < kChunks / kThreads; ++i) {
      int row, k;
      unsigned char* dst = chunk_at(i, row, k);
      *reinterpret_cast<uint4*>(dst) = load8_guarded(X, rows, K, row, k);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      int row, k;
      unsigned char* dst = chunk_at(i, row, k);
      const bool inside = row < rows && k < K;
      // src must stay a valid address even when nothing is read from it
      tc::cp_async_16(tc::smem_addr(dst), inside ? X + std::size_t(row) * K + k : X, inside);
    }
  }
}

// C[row, col] = v0 and C[row, col + 1] = v1, whichever of the two lie inside C.
__device__ __forceinline__ void store_pair(const Params& p, int row, int col, float v0, float v1) {
  if (row >= p.M || col >= p.N) return;
  float* c = p.C + std::size_t(row) * p.N + col;
  if (p.vec2) {  // N even and col even: col + 1 < N too
    *reinterpret_cast<float2*>(c) = make_float2(v0, v1);
  } else {
    c[0] = v0;
    if (col + 1 < p.N) c[1] = v1;
  }
}

using ladder::ceil_div;

}  // namespace tcmm
