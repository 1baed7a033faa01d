// Chapter 03: C = A B in fp32, row-major, with the operands staged through shared
// memory in tiles (the tile size swept), then with each thread holding a tile of C
// in registers. Launchers are host functions; the kernels live in matmul_tiled.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "matmul_harness.h"

namespace tiled {

enum class Kernel {
  SmemTiled8,     // TILE x TILE threads per block, one element of C each, A and B staged in TILE x TILE tiles
  SmemTiled16,    // the same kernel with TILE = 16 (the textbook's choice)
  SmemTiled32,    // and with TILE = 32
  RegisterTiled,  // 256 threads per 128 x 128 tile of C, each thread an 8 x 8 piece of it in registers
};
inline constexpr Kernel kAll[] = {Kernel::SmemTiled8, Kernel::SmemTiled16, Kernel::SmemTiled32, Kernel::RegisterTiled};
const char* name(Kernel k);  // "smem_tiled_8", "smem_tiled_16", "smem_tiled_32", "register_tiled"

// How a kernel is launched for C[M, N]: each block computes a tile_m x tile_n tile
// of C; grid.x counts tiles along N, grid.y along M. Throws std::invalid_argument
// when M or N < 1 or the grid's y would pass CUDA's 65535.
struct Launch {
  dim3 grid, block;
  int tile_m, tile_n;
};
Launch launch_config(Kernel k, int M, int N);

// RegisterTiled has two instantiations. The fast one has no bounds checks and moves
// 16 bytes per load and store, so it needs whole tiles (M and N multiples of 128, K
// of 8) and 16-byte-aligned A, B and C (cudaMalloc's are). Every other problem runs
// the guarded one: zeros past the edges of A and B, no stores past the edges of C.
bool register_tiled_fast_path(int M, int N, int K, const void* A, const void* B, const void* C);

// C[M, N] = A[M, K] B[K, N]; device pointers, row-major, any M, N, K >= 1.
// Throws std::invalid_argument (before any launch) on M, N or K < 1 or a grid too large.
void matmul(Kernel k, int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream = nullptr);

// This chapter's kernels as contenders of the shared matmul harness, in ladder order.
inline std::vector<mm::Contender<float>> contenders() { return mm::contenders<float>(kAll, name, matmul); }

}  // namespace tiled
