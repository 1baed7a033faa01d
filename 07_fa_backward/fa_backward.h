// Chapter 07: FlashAttention-2 backward, fp32. Declared here, defined in fa_backward.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "06_fa2_forward/fa_forward.h"
#include "attention_shape.h"
#include "device.h"

namespace fa2 {

// kSupportedD: the forward's (06_fa2_forward/fa_forward.h), the same head dims.

// How dQ is summed over the key tiles. Each thread block owns one K_j/V_j tile,
// and every block of a head adds a term to every dQ_i:
//   Atomic         the blocks add their dS_ij K_j into dQ with float atomics (one
//                  pass; the order of the additions, so the last bits, vary by run)
//   Deterministic  the blocks write only dK_j, dV_j; a second kernel, one block per
//                  Q_i tile, recomputes P_ij and dS_ij and sums dQ_i in registers
//                  in a fixed order (bit-identical runs; S and dP are computed twice,
//                  7 tile products per (i, j) pair instead of 5)
enum class DqPath { Atomic, Deterministic };
inline constexpr DqPath kAllDqPaths[] = {DqPath::Atomic, DqPath::Deterministic};
const char* name(DqPath p);  // "atomic", "deterministic"

// How dK_j, dV_j (and the deterministic dQ_i) add up their N terms:
//   TwoLevel  each tile's B_r (or B_c) terms are summed in fresh registers, and only the
//             tile sums meet the running sum: the error stays near the forward's at any N
//   Running   every term goes straight into the running sum, whose rounding error grows
//             like sqrt(N) u; kept for the accuracy study (README, "Accuracy at long N")
enum class Summation { TwoLevel, Running };
inline constexpr Summation kAllSummations[] = {Summation::TwoLevel, Summation::Running};
const char* name(Summation s);  // "two_level", "running"

// The backward's tile sizes: B_c keys per thread block (the grid is T_c x B*H),
// B_r query rows per step of its loop; T_r = ceil(N / B_r), T_c = ceil(N / B_c).
// The first tiles of d's list that fit smem_per_block bytes (the device's, or the H200's
// without a GPU): the measured ones (B_r = B_c = 64), then smaller ones for GPUs with less
// shared memory. Throws std::invalid_argument, naming what each needs, when none fits.
struct BackwardTiles {
  int B_r, B_c, T_r, T_c, threads;
  std::size_t smem_bytes;  // the more of the dK/dV and the dQ kernels' shared memory
  int index;               // 0: the measured tiles
};
BackwardTiles backward_tiles(const ladder::AttentionShape& s,
                             std::size_t smem_per_block = ladder::smem_per_block_for_models());

// Given the forward's O and L = m + log(l) ([B, H, N]) and the upstream gradient dO,
// writes dQ, dK, dV ([B, H, N, d]) and D_i = rowsum(dO_i * O_i) into the workspace D
// ([B, H, N]). Device pointers, 16-byte aligned (cudaMalloc's are). Throws
// std::invalid_argument for an unsupported d, a bad shape or a null/misaligned
// pointer, before any launch.
void backward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, const float* O,
              const float* L, const float* dO, float* dQ, float* dK, float* dV, float* D, DqPath path = DqPath::Atomic,
              Summation sum = Summation::TwoLevel, cudaStream_t stream = nullptr);

}  // namespace fa2
