// Chapter 05: FlashAttention-1 forward (Algorithm 1 of the paper), fp32.
// Declared here, defined in fa_forward.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "attention_shape.h"
#include "numeric.h"

namespace fa1 {

inline constexpr int kSupportedD[] = {32, 64, 128};

// Algorithm 1, line 1: with M floats of on-chip memory,
//   B_c = ceil(M / 4d), B_r = min(ceil(M / 4d), d), T_r = ceil(N / B_r), T_c = ceil(N / B_c).
// M is 4/5 of the shared memory a block may use: the paper's bound keeps Q_i, K_j,
// V_j, O_i (M/4 each) and S_ij (at most M/4, since B_r <= d) on chip together.
struct Tiles {
  int M, B_r, B_c, T_r, T_c;
  std::size_t smem_bytes;  // what the kernel actually asks for (padding included)
};
// smem_per_block: the device's limit (ladder::device().smem_per_block_optin). Defined in
// tile_model.cpp; the tiles are shrunk until the kernel's padded tiles fit.
Tiles tiles(const ladder::AttentionShape& s, std::size_t smem_per_block);

// The kernel pads its tiles to whole micro-tiles (common/attention_tiles.cuh): B_r to a
// multiple of kRowAlign rows, B_c to a multiple of 4 keys; every row is d + 4 floats.
// Each of its 256 threads then walks over as many micro-tiles as the tiles hold.
inline constexpr int kRowAlign = 8;
// Q_i, K_j, V_j, O_i, the S_ij / P~_ij tile and two floats per row (l_i, m_i factors).
constexpr std::size_t smem_bytes(int d, int B_r, int B_c) {
  const std::size_t R = ladder::round_up(B_r, kRowAlign), C = ladder::round_up(B_c, 4);
  return 4 * ((2 * R + 2 * C) * (d + 4) + R * (C + 4) + 2 * R);
}

// O = softmax(scale Q K^T) V, with the row statistics l and m ([B, H, N]) the
// algorithm keeps in HBM. Device pointers. Throws std::invalid_argument for an
// unsupported d or a bad shape.
void forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* l,
             float* m, cudaStream_t stream = nullptr);

}  // namespace fa1
