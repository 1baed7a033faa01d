// Where the tensor cores want their data: the host-side model of every layout chapter 09
// relies on. Which lane holds which element of an mma.m16n8k16 fragment, which row
// address each lane hands to ldmatrix, which bank a shared-memory address falls in
// with and without the 128-byte swizzle, and what wgmma's accumulators and shared-
// memory descriptors look like. Plain constexpr arithmetic: the CPU printer and the
// tests use it, and the kernels use the address mappings (TC_HD: host and device).
// The tests check every table against the PTX ISA's formulas, written independently.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TC_HD __host__ __device__
#else
#define TC_HD
#endif

namespace tc::layout {

struct Coord {
  int row, col;
};

// ---- mma.sync.m16n8k16, bf16 inputs, fp32 accumulators ------------------------------------
// A warp computes D[16 x 8] = A[16 x 16] B[16 x 8] + C. Each lane holds a fixed piece of
// each operand: lane = 4 g + t, g = "group" (0..7), t = "thread in group" (0..3).
// A: 4 registers of 2 bf16 (reg, half): reg 0 rows g, reg 1 rows g + 8, regs 2, 3 the
// same rows 8 columns further; the two halves are neighbouring columns 2t, 2t + 1.
TC_HD constexpr Coord mma_a(int lane, int reg, int half) {
  return {lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + half + 8 * (reg / 2)};
}
// B (16 x 8, as (k, n)): 2 registers; lane holds column n = g, rows k = 2t, 2t + 1 (+ 8 in
// reg 1). The two halves of a register are neighbouring k: for B stored as B^T [n][k]
// (K-major), a register is 4 contiguous bytes of one row of B^T, exactly one ldmatrix row.
TC_HD constexpr Coord mma_b(int lane, int reg, int half) { return {2 * (lane % 4) + half + 8 * reg, lane / 4}; }
// C, D (16 x 8 fp32): 4 registers: rows g (0, 1) and g + 8 (2, 3), columns 2t, 2t + 1.
TC_HD constexpr Coord mma_c(int lane, int i) { return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2}; }

// ---- ldmatrix.m8n8.x{1,2,4}.b16 ----------------------------------------------------------
// Loads 1, 2 or 4 8x8 matrices of 16-bit elements. Lanes 8m .. 8m+7 each supply the
// address of one 16-byte row of matrix m; every lane receives, in register m, two
// elements of matrix m: row lane / 4, columns 2 (lane % 4) and + 1 (.trans: the
// transpose, i.e. column lane / 4, rows 2 (lane % 4) and + 1).
TC_HD constexpr int ldmatrix_matrix_of_lane(int lane) { return lane / 8; }
TC_HD constexpr int ldmatrix_row_of_lane(int lane) { return lane % 8; }
TC_HD constexpr Coord ldmatrix_element(int lane, int half, bool trans) {
  return trans ? Coord{2 * (lane % 4) + half, lane / 4} : Coord{lane / 4, 2 * (lane % 4) + half};
}

// The addresses the kernels give ldmatrix.x4 so that the four registers come back as a
// ready mma fragment (the tests prove it by composing these with the two models above).
// A 16 x 16 tile of A (row-major, K contiguous): matrices 0..3 = (rows 0-7, k 0-7),
// (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) = registers a0..a3.
TC_HD constexpr int ldsm_a_row(int lane) { return lane % 16; }        // row within the 16-row tile
TC_HD constexpr int ldsm_a_col(int lane) { return (lane / 16) * 8; }  // first k of the 16-byte row
// Two neighbouring n8 tiles of B^T (16 rows n, 16 k): matrices 0..3 = (n 0-7, k 0-7),
// (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) = b0, b1 of the first n8 tile,
// b0, b1 of the second.
TC_HD constexpr int ldsm_b_row(int lane) { return (lane / 16) * 8 + lane % 8; }  // n within the 16 rows
TC_HD constexpr int ldsm_b_col(int lane) { return ((lane / 8) % 2) * 8; }        // first k

// ---- shared-memory banks and the 128-byte swizzle -------------------------------------------
// 32 banks of 4 bytes: a warp's access takes as many passes ("wavefronts") as the most
// distinct 4-byte words any one bank must deliver.
TC_HD constexpr int bank(std::uint32_t byte_addr) { return static_cast<int>((byte_addr / 4) % 32); }
// A tile with rows of 64 bf16 = 128 bytes (the K slice of every kernel here), stored
// plainly: element (row, col) at row * 128 + col * 2. An ldmatrix phase reads 16 bytes
// from each of 8 consecutive rows at the same column: 8 addresses 128 bytes apart, all
// in banks 4c .. 4c+3: an 8-way conflict.
TC_HD constexpr std::uint32_t plain_offset(int row, int col) {
  return std::uint32_t(row) * 128 + std::uint32_t(col) * 2;
}
// Swizzled: the 16-byte chunk index (col / 8, 0..7) is XOR-ed with row % 8. Each row
// keeps its 8 chunks (a permutation), and the same chunk of 8 consecutive rows lands in
// 8 different bank groups: conflict-free. Same element offsets as tc::swizzle_128b in
// mma.cuh, times 2 bytes.
TC_HD constexpr std::uint32_t swizzled_offset(int row, int col) {
  return std::uint32_t(row) * 128 + std::uint32_t(((col / 8) ^ (row % 8)) * 16) + std::uint32_t(col % 8) * 2;
}
// The same pattern as TMA's CU_TENSOR_MAP_SWIZZLE_128B and wgmma's 128B mode define it,
// on byte addresses within a 1024-byte-aligned tile: bits 4-6 (the 16-byte chunk) ^=
// bits 7-9 (the row within the 8-row, 1024-byte repeat).
TC_HD constexpr std::uint32_t swizzle_128b_address(std::uint32_t byte_offset) {
  return byte_offset ^ (((byte_offset >> 7) & 7u) << 4);
}

// Wavefronts of one ldmatrix phase: 8 rows of 16 bytes at the given byte addresses.
TC_HD constexpr int ldmatrix_phase_wavefronts(const std::uint32_t (&row_addr)[8]) {
  int worst = 0;
  for (int b = 0; b < 32; ++b) {
    // distinct 4-byte words in bank b among the 8 x 4 words requested
    std::uint32_t words[32] = {};
    int n = 0;
    for (int r = 0; r < 8; ++r)
      for (int w = 0; w < 4; ++w) {
        const std::uint32_t word = row_addr[r] / 4 + std::uint32_t(w);
        if (static_cast<int>(word % 32) != b) continue;
        bool seen = false;
        for (int i = 0; i < n; ++i) seen = seen || words[i] == word;
        if (!seen) words[n++] = word;
      }
    worst = n > worst ? n : worst;
  }
  return worst;
}

// ---- wgmma ----------------------------------------------------------------------------
// The accumulator D[64 x N] of wgmma.m64nNk16 (fp32): thread t (0..127) of the
// warpgroup, register i (0 .. N/2 - 1). Warp w = t / 32 owns rows 16w .. 16w + 15, and
// within them the layout of mma's C fragment repeats every 8 columns.
TC_HD constexpr Coord wgmma_d(int thread, int i) {
  return {16 * (thread / 32) + (thread % 32) / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (thread % 4) + i % 2};
}
// The 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
// start address, leading and stride byte offsets, each >> 4 in 14 bits; base offset 0;
// swizzle mode in bits 62-63 (0 none, 1 = 128B, 2 = 64B, 3 = 32B). hopper.cuh builds the
// 128B K-major one the kernels use: lbo 16, sbo 1024 (8 rows of 128 bytes).
TC_HD constexpr std::uint64_t wgmma_desc(std::uint32_t smem_addr, std::uint32_t lbo, std::uint32_t sbo, int swizzle) {
  return (std::uint64_t((smem_addr & 0x3FFFF) >> 4)) | (std::uint64_t((lbo & 0x3FFFF) >> 4) << 16) |
         (std::uint64_t((sbo & 0x3FFFF) >> 4) << 32) | (std::uint64_t(swizzle & 3) << 62);
}
// (chapter 12) The descriptor of an operand `bytes` (a multiple of 16) further on: the start
// address field holds the address / 16 in 14 bits, and a CTA's shared memory lies within the
// 256 KB they reach, so adding bytes / 16 carries nothing into the fields above. A kernel builds
// one descriptor per tile and steps it to each k (CpuFa3.DescriptorSteps checks it).
TC_HD constexpr std::uint64_t wgmma_desc_at(std::uint64_t desc, std::uint32_t bytes) { return desc + (bytes >> 4); }

}  // namespace tc::layout
