// Where chapter 14's kernels put things: the padded rows of L and D, and the dQ accumulator's
// layout, shared by the main kernel (which adds into it), the
// post-processing kernel (which reads it) and the CPU tests. Host and device.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define BWD_HD __host__ __device__
#else
#define BWD_HD
#endif

namespace fa3bwd::layout {

// B_c: the keys of one CTA (two consumer warpgroups of 64). The query tile B_r is the tile
// policy's (fa3_bwd_config.h: 64 or 128 rows); L2, D and the dQ accumulator are padded to the
// larger, so that every query tile's rows exist, and cut into blocks of 64 rows (one wgmma M).
inline constexpr int B_c = 128, kRowPad = 128, kBlockRows = 64;
BWD_HD constexpr int padded_rows(int N) { return (N + kRowPad - 1) / kRowPad * kRowPad; }

// The dQ accumulator: per query head, per block of 64 rows, per 64 columns of d ("chunk"), a
// 64 x 64 fp32 block of 16 KB, contiguous, so that one bulk reduce-add moves a whole block.
// Inside a block the 16-byte units of row r are XOR-swizzled with r % 8: the eight rows a warp
// writes at once (accumulator rows g = 0..7) then land in eight different bank groups.
inline constexpr int kChunkCols = 64;
inline constexpr int kChunkFloats = kBlockRows * kChunkCols;
BWD_HD constexpr int chunk_offset(int r, int col) { return r * kChunkCols + (((col / 4) ^ (r % 8)) * 4) + col % 4; }
// Block `row_block` (rows 64 row_block ..) of a head that has `blocks` of them (N_pad / 64).
BWD_HD constexpr std::size_t block_index(std::size_t head, int blocks, int row_block, int d, int chunk) {
  return ((head * blocks + row_block) * (d / kChunkCols) + chunk) * kChunkFloats;
}

// The deterministic step's flags: one int per dQ block, in the order of the blocks.
BWD_HD constexpr std::size_t flag_index(std::size_t head, int blocks, int row_block, int d, int chunk) {
  return (head * blocks + row_block) * (d / kChunkCols) + chunk;
}

}  // namespace fa3bwd::layout
