// Chapter 02: C = A B in fp32, row-major, one thread per element of C, with the
// threads numbered two ways. Launchers are host functions callable from plain C++
// (tests, benchmark, main); the kernels live in matmul_naive.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "matmul_harness.h"

namespace naive {

enum class Kernel {
  RowPerX,  // threadIdx.x counts rows of C: a warp reads 32 rows of A, writes down a column of C
  ColPerX,  // threadIdx.x counts columns of C: a warp reads along a row of B, writes along a row of C
};
inline constexpr Kernel kAll[] = {Kernel::RowPerX, Kernel::ColPerX};
const char* name(Kernel k);  // "naive_row_per_x", "naive_col_per_x"

// Both kernels run kBlock x kBlock threads per block, one per element of C.
inline constexpr unsigned kBlock = 32;

// The grid of a launch: x counts blocks along the dimension of C that threadIdx.x
// walks (rows for RowPerX, columns for ColPerX), y along the other. Throws
// std::invalid_argument when M or N < 1 or the grid's y would pass CUDA's 65535.
dim3 grid(Kernel k, int M, int N);

// C[M, N] = A[M, K] B[K, N]; device pointers, row-major, any M, N, K >= 1.
// Throws std::invalid_argument (before any launch) on M, N or K < 1 or a grid too large.
void matmul(Kernel k, int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream = nullptr);

// This chapter's kernels as contenders of the shared matmul harness, in ladder order
// (chapter 03 runs them too).
inline std::vector<mm::Contender<float>> contenders() { return mm::contenders<float>(kAll, name, matmul); }

}  // namespace naive
