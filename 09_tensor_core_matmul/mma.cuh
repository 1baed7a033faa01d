// The ladder's PTX wrappers for sm_80 and later (Ampere's instructions, which Hopper keeps):
// mma.sync, ldmatrix, and shared-memory access by address (cp.async: common/ptx_sm80.cuh). One thin wrapper per
// PTX instruction, named after it; each says which chapter introduces it (chapter 09 unless
// noted). Every asm of these instructions in the ladder lives here; Hopper's own
// instructions are in hopper.cuh. Device code only (.cu files).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), for a lane
// with group g = lane / 4 and thread-in-group t = lane % 4:
//   A (16 x 16, row-major), 4 registers of 2 bf16:  a0 = A[g][2t..2t+1]      a1 = A[g+8][2t..2t+1]
//                                                   a2 = A[g][2t+8..2t+9]    a3 = A[g+8][2t+8..2t+9]
//   B (16 x 8, "col": stored as B^T, 8 x 16),       b0 = B[2t..2t+1][g]      b1 = B[2t+8..2t+9][g]
//   C (16 x 8, fp32), 4 registers:                  c0, c1 = C[g][2t..2t+1]  c2, c3 = C[g+8][2t..2t+1]
// tc_layout.h (host) computes the same tables for the CPU printer and its tests.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "ptx_sm80.cuh"  // cp.async (common/: chapter 07's tile engine uses it too)

namespace tc {

// A generic pointer into shared memory as the 32-bit address the PTX instructions take.
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mma.sync ------------------------------------------------------------------------
// D = A B + D: 16 x 8 x 16, bf16 inputs, fp32 accumulators, one warp.
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- ldmatrix --------------------------------------------------------------------------
// Each of the 8 (x1), 16 (x2) or 32 (x4) first lanes gives the address of one 16-byte
// row of an 8 x 8 b16 matrix (lanes 8m..8m+7: the rows of matrix m); every lane gets
// register m = the two elements of row lane / 4, columns 2 (lane % 4) .. +1 of matrix m:
// exactly the mma fragment layout above. .trans delivers the transpose of each matrix.
__device__ __forceinline__ void ldmatrix_x1(std::uint32_t& r, std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(std::uint32_t (&r)[2], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// ---- shared memory by address ------------------------------------------------------------
// Plain loads and stores at a 32-bit shared-memory address, the form the TMA and wgmma code
// computes its tile addresses in (chapter 12: O on its way out through a swizzled buffer).
__device__ __forceinline__ void st_shared_b32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_v2_f32(std::uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ float ld_shared_f32(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint4 ld_shared_v4(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// ---- conversions and special functions -------------------------------------------------
// Two fp32 values -> one register of two bf16 (lo in the low half), round to nearest.
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}
// 2^x on the special-function unit (MUFU.EX2): exp(x) = 2^(x log2 e), so a kernel folds
// log2 e into its scale once and pays one multiply-add per exponential.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// Two 2^x in half precision at once (the packed MUFU form; chapter 12's pipe measurements).
__device__ __forceinline__ void ex2_f16x2(std::uint32_t& y, std::uint32_t x) {
  asm volatile("ex2.approx.f16x2 %0, %1;\n" : "=r"(y) : "r"(x));
}
// The GPU's global nanosecond timer (chapter 12's pipe measurements: wall time inside a kernel).
__device__ __forceinline__ long long globaltimer() {
  long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// ---- row statistics of a C fragment -------------------------------------------------------
// The 4 lanes of a quad (lane / 4 equal) hold one row of an mma.sync C fragment, and of a
// wgmma accumulator too: a row's max or sum is two shuffles (chapters 10, 11 and 12).
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffff, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffff, v, 1);
  return v + __shfl_xor_sync(0xffffffff, v, 2);
}

// ---- swizzled shared memory ------------------------------------------------------------
// A tile whose rows are 64 bf16 (128 bytes, 8 chunks of 16 bytes) or wider. Stored
// plainly, the 8 rows one ldmatrix reads all start in bank 0: an 8-way conflict. XOR-ing
// the 16-byte chunk index with the row (mod 8) puts those 8 chunks in 8 different bank
// groups, and it is the same pattern TMA and wgmma call the 128-byte swizzle.
// Returns the element offset of (row, col) in a tile of `row_elems` bf16 per row.
__host__ __device__ constexpr int swizzle_128b(int row, int col, int row_elems) {
  return row * row_elems + (((col / 8) ^ (row % 8)) * 8) + col % 8;
}

}  // namespace tc
