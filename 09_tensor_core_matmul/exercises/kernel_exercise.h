// Chapter 09's kernel exercise (exercises/README.md): one warp's mma.sync.m16n8k16 tile fed by
// ldmatrix (bf16 in, fp32 accumulation), written by you in mine.cu.
//   build/bin/09_tensor_core_matmul_exercise --gtest_filter='Exercise*'   yours (target 09_tensor_core_matmul_exercise)
//   build/bin/09_tensor_core_matmul_test --gtest_filter='*Exercise*'      the solution, the wrong answers, the refusals
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "bf16.h"

namespace tc_kernel_exercise {
// One warp computes one 16 x 8 tile of C, walking K 16 at a time: the shape of one
// mma.sync.m16n8k16. A block holds kWarpsPerBlock warps, stacked along M.
inline constexpr int kTileM = 16, kTileN = 8, kTileK = 16;
inline constexpr int kWarpsPerBlock = 4;
inline constexpr int kMaxDim = 1 << 20;  // as the chapter's steps (tcmm::kMaxDim)

// The arguments every implementation refuses, before any CUDA call: the kernel has no tail
// code, so M, N and K must be whole tiles (multiples of 16, 8 and 16); the 16-byte loads that
// stage a slice need A and Bt on 16-byte boundaries (rows are K * 2 bytes, a multiple of 32).
inline void check_arguments(int M, int N, int K, const void* A, const void* Bt, const void* C) {
  const std::string who = "09 exercise matmul: ";
  if (M < 1 || N < 1 || K < 1 || M > kMaxDim || N > kMaxDim || K > kMaxDim)
    throw std::invalid_argument(who + "M, N and K must each be between 1 and " + std::to_string(kMaxDim) +
                                ", got M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
  if (M % kTileM != 0 || N % kTileN != 0 || K % kTileK != 0)
    throw std::invalid_argument(who + "M, N and K must be multiples of the mma tile (16, 8 and 16), got M=" +
                                std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
  if (!A || !Bt || !C) throw std::invalid_argument(who + "A, Bt and C must be device pointers, got a null pointer");
  if (reinterpret_cast<std::uintptr_t>(A) % 16 != 0 || reinterpret_cast<std::uintptr_t>(Bt) % 16 != 0)
    throw std::invalid_argument(who + "A and Bt must be aligned to 16 bytes (cudaMalloc's are)");
  if (reinterpret_cast<std::uintptr_t>(C) % 4 != 0)
    throw std::invalid_argument(who + "C must be aligned to 4 bytes (fp32 elements)");
}
}  // namespace tc_kernel_exercise

// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   matmul        C[M, N] = A[M, K] Bt[N, K]^T (the chapter's layouts: A and Bt K-major, row-major
//                 fp32 C), bf16 inputs, fp32 accumulation; device pointers. Throws
//                 std::invalid_argument, before any launch, for what check_arguments refuses
//                 (M, N, K not multiples of 16, 8, 16 among them) and on a GPU older than
//                 compute capability 8.0 (no bf16 mma.sync).
#define TC_KERNEL_EXERCISE        \
  extern const bool kImplemented; \
  void matmul(int M, int N, int K, const ladder::bf16* A, const ladder::bf16* Bt, float* C, cudaStream_t stream)

namespace mine {
TC_KERNEL_EXERCISE;
}
namespace solution {
TC_KERNEL_EXERCISE;
}
namespace wrong_b_ldmatrix_trans {  // wrong/b_ldmatrix_trans.cu
TC_KERNEL_EXERCISE;
}
namespace wrong_a_quarters_swapped {  // wrong/a_quarters_swapped.cu
TC_KERNEL_EXERCISE;
}
namespace wrong_accumulator_overwritten {  // wrong/accumulator_overwritten.cu
TC_KERNEL_EXERCISE;
}
