// The PTX wrappers chapter 12 adds to chapter 09's (09_tensor_core_matmul/hopper.cuh):
// wgmma with the A operand in registers ("RS"), B read MN-major (transposed) from shared
// memory, the FP8 (e4m3) shapes, named barriers, and 3D TMA loads. One thin wrapper per
// PTX instruction, named after it, each with the layout it assumes. Device code only.
#pragma once

#include <cstdint>

#include "09_tensor_core_matmul/hopper.cuh"
#include "09_tensor_core_matmul/tc_layout.h"

namespace fa3::dev {

// ---- descriptors ---------------------------------------------------------------------------
// K-major, 128B swizzle (Q_i and K_j in S = Q K^T): chapter 09's tc::wgmma_desc_sw128: rows
// of 128 bytes, 8-row groups 1024 bytes apart; +32 bytes (16 bf16 or 32 e4m3) = next k step.
//
// MN-major, 128B swizzle (V_j as the B operand of O += P V, k = key, n = d): V_j sits in
// shared memory as TMA wrote it, [key][64 columns of d] per box, rows of 128 bytes,
// swizzled. For B that is "MN-major": n (d) is contiguous. PTX's canonical MN-major
// 128B layout (CUTLASS writes it ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)) in 16-byte units):
// 64 n-elements (one 128-byte row) x 8 k-rows form a 1024-byte swizzle atom;
//   SBO = bytes between atoms along k (8 keys further: 1024, rows being dense),
//   LBO = bytes between atoms along n (the next 64 columns of d: the next TMA box, B_c rows
//         of 128 bytes further).
// One k16 step is 16 keys = 2048 bytes further on (a multiple of 1024: no base offset).
__device__ __forceinline__ std::uint64_t desc_mn_sw128(std::uint32_t smem_addr, std::uint32_t lbo_bytes) {
  return tc::layout::wgmma_desc(smem_addr, lbo_bytes, 1024, 1);
}

#if TC_HOPPER_ENABLED
#define FA3_R8(i)                                                                                             \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define FA3_D32                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FA3_D64                                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

// ---- wgmma, A from registers ("RS") ---------------------------------------------------------
// D[64 x N] (+)= A[64 x K] B[K x N]; A in the registers of the warpgroup, 4 x 32 bits per
// thread. Warp w owns rows 16w .. 16w+15; lane (g = lane / 4, c = lane % 4) holds
//   bf16, k16:  a0 = (g, 2c..2c+1)  a1 = (g+8, 2c..2c+1)  a2 = (g, 8+2c..)    a3 = (g+8, 8+2c..)
//   e4m3, k32:  a0 = (g, 4c..4c+3)  a1 = (g+8, 4c..4c+3)  a2 = (g, 16+4c..)   a3 = (g+8, 16+4c..)
// (lowest k in the lowest bits): the fp32 accumulator of the S GEMM holds, per thread, the
// same rows and columns 8j + 2c + e for bf16, which is why P needs no shuffle
// (fa3_softmax.cuh, Rows::to_p); for e4m3 the columns differ, and fp8_layout.h permutes V's
// keys to match. B from shared memory.
// bf16, B MN-major (imm-trans-b = 1): V_j as it lies in shared memory.
__device__ __forceinline__ void wgmma_m64n128k16_rs_bf16_tb(float (&d)[64], const std::uint32_t (&a)[4],
                                                            std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " FA3_D64
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      : FA3_R8(0), FA3_R8(8), FA3_R8(16), FA3_R8(24), FA3_R8(32), FA3_R8(40), FA3_R8(48), FA3_R8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n64k16_rs_bf16_tb(float (&d)[32], const std::uint32_t (&a)[4],
                                                           std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " FA3_D32
      ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n"
      "}\n"
      : FA3_R8(0), FA3_R8(8), FA3_R8(16), FA3_R8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
// e4m3 x e4m3 -> f32. FP8 wgmma takes both shared-memory operands K-major only (no
// transpose bits): hence Vt8, V stored transposed (fa3.h).
__device__ __forceinline__ void wgmma_m64n128k32_ss_e4m3(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b,
                                                         int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " FA3_D64
      ", %64, %65, p, 1, 1;\n"
      "}\n"
      : FA3_R8(0), FA3_R8(8), FA3_R8(16), FA3_R8(24), FA3_R8(32), FA3_R8(40), FA3_R8(48), FA3_R8(56)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n128k32_rs_e4m3(float (&d)[64], const std::uint32_t (&a)[4],
                                                         std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " FA3_D64
      ", {%64, %65, %66, %67}, %68, p, 1, 1;\n"
      "}\n"
      : FA3_R8(0), FA3_R8(8), FA3_R8(16), FA3_R8(24), FA3_R8(32), FA3_R8(40), FA3_R8(48), FA3_R8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n64k32_rs_e4m3(float (&d)[32], const std::uint32_t (&a)[4],
                                                        std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " FA3_D32
      ", {%32, %33, %34, %35}, %36, p, 1, 1;\n"
      "}\n"
      : FA3_R8(0), FA3_R8(8), FA3_R8(16), FA3_R8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#undef FA3_R8
#undef FA3_D32
#undef FA3_D64
#endif  // TC_HOPPER_ENABLED

// Keeps the compiler from reusing (or moving) the registers of an A fragment while an
// asynchronous wgmma may still read them: call it after the wgmma.wait_group that ends
// their use.
template <int M, int N>
__device__ __forceinline__ void fence_operand(std::uint32_t (&a)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int j = 0; j < N; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

// ---- named barriers ----------------------------------------------------------------------
// bar.sync id, n: wait until n threads (a multiple of 32) have arrived at barrier id (1..15;
// 0 is __syncthreads), counting this one. bar.arrive id, n: count this thread and go on.
// Ping-pong: warpgroup A syncs on "A's turn", which warpgroup B's arrive completes.
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- TMA, three dimensions -----------------------------------------------------------------
// As chapter 09's 2D copy, for a tensor map over (column, row, head): the box never crosses
// from one head into the next, and rows past N (or N_kv) of a head arrive as zeros.
__device__ __forceinline__ void tma_load_3d(std::uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

}  // namespace fa3::dev
