// Chapter 06: FlashAttention-2 forward, fp32. Declared here, defined in fa_forward.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "attention_shape.h"
#include "fit.h"

namespace fa2 {

inline constexpr int kSupportedD[] = {32, 64, 128};

// B_r query rows per thread block, B_c keys per step of the inner loop, chosen per d;
// T_r = ceil(N / B_r) row tiles, T_c = ceil(N / B_c) key tiles.
struct Tiles {
  int B_r, B_c, T_r, T_c;
  std::size_t smem_bytes;  // what the kernel asks for
  int index;               // 0: Config<d>; 1, 2: the smaller tiles above, in their order
};
// d's tiles in the order they are tried: Config<d>, then the smaller ones (name "B_r x B_c").
std::vector<ladder::Candidate> tile_options(int d);
// The first tiles of d's list (Config<d>, then the smaller ones) that fit smem_per_block
// bytes (ladder::device().smem_per_block_optin); throws std::invalid_argument naming what
// each needs when none fits. Defined in tile_model.cpp.
Tiles tiles(const ladder::AttentionShape& s, std::size_t smem_per_block);

// The tiles per head dim. B_r = 128, B_c = 64 (32 at d = 32) give each of the 256
// threads exactly one S and one O micro-tile (common/attention_tiles.cuh), and kBlocks
// is what the registers are budgeted for: two blocks per SM hide each other's barriers
// at d <= 64 (102.5 KiB of shared memory each at d = 64); at d = 128 one block
// (166.5 KiB) is all that fits. Measured on the H200 (results/06_fa2_forward):
// 29-30 TFLOP/s at d = 64 and 128.
template <int d, int B_r_ = 128, int B_c_ = (d == 32 ? 32 : 64), int kBlocks_ = (d == 128 ? 1 : 2)>
struct Config {
  static constexpr int B_r = B_r_, B_c = B_c_, kBlocks = kBlocks_;
};
// A GPU with less shared memory per block runs the same kernel on smaller tiles: the first of
// these that fits (tiles()). Half the keys per step (an A100's 163 KiB at d = 128, an RTX
// 30/40/50's 99 KiB at d = 64), then half the rows too (99 KiB at d = 128; a T4's 64 KiB at
// d = 64). A T4 cannot run d = 128: fewer than 64 rows would leave threads without a row of
// the softmax.
using HalfKeys64 = Config<64, 128, 32, 2>;
using Quarter64 = Config<64, 64, 32, 2>;
using HalfKeys128 = Config<128, 128, 32, 1>;
using Quarter128 = Config<128, 64, 32, 2>;
// Q_i, K_j, V_j (rows of d + 4 floats), the S_ij / P~_ij tile and one float per row.
constexpr std::size_t smem_bytes(int d, int B_r, int B_c) {
  return 4 * ((std::size_t(B_r) + 2 * B_c) * (d + 4) + std::size_t(B_r) * (B_c + 4) + B_r);
}

// O = softmax(scale Q K^T) V and L = m + log(l) per query row ([B, H, N]).
// Device pointers, Q, K, V, O 16-byte aligned. Throws std::invalid_argument for an
// unsupported d, a bad shape, too little shared memory or a null or misaligned
// pointer, before any launch.
void forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
             cudaStream_t stream = nullptr);

}  // namespace fa2
