// The pieces chapter 10's kernels share, on top of chapter 09's PTX wrappers (mma.cuh).
// Device code only (.cu files). Everything here is chapter-local: chapter 09 owns mma.cuh.
//
// Shared-memory tiles are bf16 [rows][D], D in {64, 128} (128 or 256 bytes a row), stored
// with the 128-byte swizzle of chapter 09 (tc::swizzle_128b): the 16-byte chunk c of row r
// sits at chunk c ^ (r % 8). The 8 rows one ldmatrix reads then fall in 8 different bank
// groups, whichever chunk they start at.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "09_tensor_core_matmul/mma.cuh"

namespace fa2tc::dev {

// ---- swizzled addressing: one XOR per ldmatrix ------------------------------------------
// A lane's ldmatrix address is the start of one 16-byte row of an 8 x 8 matrix. In every
// fragment load of this chapter the lane's row is (multiple of 8) + lane % 8, so row % 8 is
// a per-lane constant, and the per-lane part of the chunk index takes the low bits. The
// lane's address for tile row r_l and chunk c_l is computed once (lane_base); a fragment at
// row offset R (a multiple of 8) and chunk offset C (bits disjoint from c_l's) is then
//
//   (lane_base ^ (C << 4)) + R * row_bytes
//
// because chunk (c_l + C) ^ (r % 8) = (c_l ^ (r % 8)) ^ C, the XOR only touches the bits
// below row_bytes (the tile is row_bytes-aligned), and R * row_bytes only those above.
// With R and C compile-time constants that is one LOP3 plus ldmatrix's immediate offset,
// instead of re-deriving the swizzle per load. detail::check_swizzle_addressing() proves
// it equals tc::swizzle_128b for every lane and offset the kernels use.
__host__ __device__ constexpr std::uint32_t lane_base(std::uint32_t tile, int row, int chunk, int row_bytes) {
  return tile + std::uint32_t(row * row_bytes) + std::uint32_t((chunk ^ (row & 7)) << 4);
}
//
// One refinement at 128-element rows (16 chunks): a lane's swizzled chunk c_l ^ (r % 8) is
// below 8 whenever c_l is, and then XOR-ing bit 3 of the chunk (C >= 8) is adding 8 chunks.
// So only the low three bits of C are XOR-ed and the rest is added, which folds into the
// immediate too: a row of 16 chunks needs 4 distinct XOR-ed bases instead of 8 (registers).
// (When c_l >= 8 the bits are disjoint, so C < 8 and nothing changes.)
__host__ __device__ constexpr std::uint32_t frag_addr(std::uint32_t lane_base, int row_off, int chunk_off,
                                                      int row_bytes) {
  return (lane_base ^ std::uint32_t((chunk_off & 7) << 4)) + std::uint32_t((chunk_off & ~7) << 4) +
         std::uint32_t(row_off * row_bytes);
}

// The three lane patterns of ldmatrix.x4 (lane l, matrix m = l / 8 supplies row l % 8 of
// matrix m). Each returns (row, chunk) of the lane's 16 bytes inside a 16 x 16 block.
//   A operand, row-major (Q_i, dO_i as A): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
//     (rows 0-7, k 8-15), (rows 8-15, k 8-15) -> a0..a3.
//   B operand from a [n][k] tile, no transpose (K_j in Q K^T): matrices (n 0-7, k 0-7),
//     (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) -> b0, b1 of n-tile 0, b0, b1 of n-tile 1.
//   B operand from a [k][n] tile, .trans (V_j in P V): matrices (k 0-7, n 0-7),
//     (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15) -> same registers as above.
struct RowChunk {
  int row, chunk;
};
__host__ __device__ constexpr RowChunk a_lane(int lane) { return {(lane / 8 % 2) * 8 + lane % 8, lane / 16}; }
__host__ __device__ constexpr RowChunk b_lane(int lane) { return {(lane / 16) * 8 + lane % 8, lane / 8 % 2}; }
__host__ __device__ constexpr RowChunk bt_lane(int lane) { return {(lane / 8 % 2) * 8 + lane % 8, lane / 16}; }
// A operand read transposed from a [k][m] tile (dS_ij^T stored [keys][queries], read as
// dS_ij): matrices (k 0-7, m 0-7)^T = a0, (k 0-7, m 8-15)^T = a1, (k 8-15, m 0-7)^T = a2,
// (k 8-15, m 8-15)^T = a3.
__host__ __device__ constexpr RowChunk at_lane(int lane) { return {(lane / 16) * 8 + lane % 8, lane / 8 % 2}; }

// ---- global -> shared -------------------------------------------------------------------
// tile[r][:] = src[row0 + r][:] for row0 + r < n_rows, zeros after (cp.async's src-size 0).
// Consecutive threads copy consecutive 16-byte chunks of a row: coalesced 128-byte reads.
// kGuarded = false: the caller knows every row is below n_rows (a tile away from the end).
// Then a thread's copies are its first one plus constants (kStep rows apart, a multiple of 8,
// so the swizzle pattern repeats): one pointer, no compare, no select, immediate offsets.
template <int ROWS, int D, int kThreads, bool kGuarded = true>
__device__ __forceinline__ void load_tile(std::uint32_t tile, const __nv_bfloat16* src, int row0, int n_rows) {
  constexpr int kChunks = D / 8, kStep = kThreads / kChunks;
  static_assert((ROWS * kChunks) % kThreads == 0, "every thread copies the same number of chunks");
  if constexpr (!kGuarded) {
    static_assert(kThreads % kChunks == 0 && kStep % 8 == 0, "each thread's chunks share one swizzle");
    const int r = threadIdx.x / kChunks, c = threadIdx.x % kChunks;
    const __nv_bfloat16* from = src + std::int64_t(row0 + r) * D + c * 8;
    const std::uint32_t to = tile + 2 * tc::swizzle_128b(r, c * 8, D);
#pragma unroll
    for (int u = 0; u < ROWS / kStep; ++u) tc::cp_async_16(to + u * kStep * 2 * D, from + u * kStep * D);
  } else {
#pragma unroll
    for (int u = 0; u < ROWS * kChunks / kThreads; ++u) {
      const int idx = threadIdx.x + u * kThreads, r = idx / kChunks, c = idx % kChunks;
      const bool valid = row0 + r < n_rows;
      const __nv_bfloat16* from = src + (valid ? std::int64_t(row0 + r) * D + c * 8 : 0);
      tc::cp_async_16(tile + 2 * tc::swizzle_128b(r, c * 8, D), from, valid);
    }
  }
}

// One fp32 per row (L_i, D_i), zeros after n_rows. 4-byte cp.async (mma.cuh).
template <int ROWS>
__device__ __forceinline__ void load_row_values(float* dst, const float* src, int row0, int n_rows) {
  for (int r = threadIdx.x; r < ROWS; r += blockDim.x) {
    const bool valid = row0 + r < n_rows;
    tc::cp_async_4(tc::smem_addr(dst + r), src + (valid ? row0 + r : 0), valid);
  }
}

// ---- fragments ----------------------------------------------------------------------------
// The C fragments of two adjacent n-tiles (16 x 8 each, fp32) are, element for element, the
// A fragment of one 16 x 16 k-tile: c0,c1 of n-tile 2k are A[g][2t..2t+1] (a0), c2,c3 are
// A[g+8][2t..2t+1] (a1), and n-tile 2k+1 gives a2, a3 (columns 8 + 2t). So a score tile in
// registers becomes the A operand of the next product by rounding to bf16 in place: no
// shuffle, no shared memory.
__device__ __forceinline__ void c_to_a(std::uint32_t (&a)[4], const float (&c_lo)[4], const float (&c_hi)[4]) {
  a[0] = tc::pack_bf16x2(c_lo[0], c_lo[1]);
  a[1] = tc::pack_bf16x2(c_lo[2], c_lo[3]);
  a[2] = tc::pack_bf16x2(c_hi[0], c_hi[1]);
  a[3] = tc::pack_bf16x2(c_hi[2], c_hi[3]);
}

// Reductions over the 4 lanes (a quad) that hold one row of a C fragment (mma.cuh).
using tc::quad_max;
using tc::quad_sum;

// dst[row][col..col+3] += v (one 16-byte vector atomic, sm_90), from a C fragment:
// lanes t and t^1 swap half their values so that the even lane holds 4 consecutive
// columns of row g and the odd lane 4 of row g + 8. Half the atomics of float2. Before
// sm_90 there is no vector atomicAdd: four scalar ones add the same values.
__device__ __forceinline__ void atomic_add_c(float* tile, std::int64_t ld, int g, int t, const float (&c)[4],
                                             float scale, int rows_valid) {
  const bool odd = t & 1;
  const float s0 = odd ? c[0] : c[2], s1 = odd ? c[1] : c[3];
  const float r0 = __shfl_xor_sync(0xffffffff, s0, 1), r1 = __shfl_xor_sync(0xffffffff, s1, 1);
  const int row = odd ? g + 8 : g, col = 2 * (t & ~1);
  const float4 v = odd ? make_float4(scale * r0, scale * r1, scale * c[2], scale * c[3])
                       : make_float4(scale * c[0], scale * c[1], scale * r0, scale * r1);
  if (row < rows_valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    float* dst = tile + row * ld + col;
    atomicAdd(dst, v.x), atomicAdd(dst + 1, v.y), atomicAdd(dst + 2, v.z), atomicAdd(dst + 3, v.w);
#else
    atomicAdd(reinterpret_cast<float4*>(tile + row * ld + col), v);
#endif
  }
}

}  // namespace fa2tc::dev
