// Chapter 04 on the GPU: row-wise softmax of an R x C fp32 matrix (row-major),
// Y_i = softmax(X_i) for every row i. The namespace osm is "online softmax".
// Launchers are host functions callable from plain C++; kernels live in softmax.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include "device_buffer.h"

namespace osm {

// "Pass" means a sweep over the whole matrix in DRAM: the multi-pass kernels
// launch one kernel per pass, and the matrix is far larger than the L2, so each
// pass really reads it again. The on-chip kernels read it once and write it once.
enum class Kernel {
  Safe3Pass,    // m_i = max X_i; l_i = sum e^(X_i - m_i); Y_i = e^(X_i - m_i) / l_i
  Online2Pass,  // (m_i, l_i) in one pass, merging (m, l) pairs; then the same normalising pass
  WarpOnChip,   // one warp per row, the row in registers (C <= 1024)
  BlockOnChip,  // one block per row, the row in shared memory (C <= max_cols(BlockOnChip))
};
inline constexpr Kernel kAll[] = {Kernel::Safe3Pass, Kernel::Online2Pass, Kernel::WarpOnChip, Kernel::BlockOnChip};
const char* name(Kernel k);

// The longest row a kernel handles: the multi-pass kernels any; WarpOnChip
// 32 lanes x 32 registers; BlockOnChip what fits in one block's shared memory
// on this GPU (0 without a GPU).
int max_cols(Kernel k);
inline bool applies(Kernel k, int C) { return C <= max_cols(k); }
// The kernel to use for rows of C elements: warp, then block on chip, then the online 2-pass.
Kernel best_kernel(int C);

// m_i and l_i of every row: what the multi-pass kernels hand from one pass to
// the next (the on-chip kernels keep them on chip and do not touch these).
struct RowStats {
  explicit RowStats(int R) : m(std::size_t(std::max(R, 0))), l(std::size_t(std::max(R, 0))) {}
  ladder::DeviceBuffer<float> m, l;
};

// Device pointers X, Y of R x C floats; `stats` must hold R rows for the
// multi-pass kernels. Throws std::invalid_argument, before any launch, for R or
// C < 1, a row longer than max_cols(k), or too small a `stats`. Rows of only
// -inf have no softmax (their output is NaN); -inf entries elsewhere are fine.
void softmax(Kernel k, const float* X, float* Y, int R, int C, RowStats& stats, cudaStream_t stream = nullptr);

}  // namespace osm
